import H264Network
import Testing

@Suite("RTCPPacket")
struct RTCPPacketTests {
    @Test func compoundPacketsRoundTrip() throws {
        let block = RTCPPacket.ReceptionReport(ssrc: 7, fractionLost: 12, cumulativeLost: -3, extendedHighestSequenceNumber: 0x1_0005, jitter: 90,
                                               lastSenderReport: 0x1234_5678, delaySinceLastSenderReport: 65536)
        let packets: [RTCPPacket] = [
            .senderReport(.init(ssrc: 1, ntpTimestamp: 0xE000_0000_8000_0000, rtpTimestamp: 90_000, packetCount: 10, octetCount: 12_000, reports: [block])),
            .receiverReport(.init(ssrc: 2, reports: [block, block])),
            .pictureLossIndication(senderSSRC: 2, mediaSSRC: 1),
            .goodbye(.init(sources: [1], reason: "end of file")),
        ]
        let bytes = RTCPPacket.serialize(packets)
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parse(compound: bytes) == packets)
    }

    @Test func aLoneBYEIsEightBytes() throws {
        let bytes = RTCPPacket.serialize([.goodbye(.init(sources: [0xCAFE_BABE]))])
        #expect(bytes == [0x81, 203, 0, 1, 0xCA, 0xFE, 0xBA, 0xBE])
    }

    @Test func lengthsPastTheDatagramAreErrors() {
        #expect(throws: NetworkError.self) { try RTCPPacket.parse(compound: [0x80, 200, 0, 6, 0, 0, 0, 1]) }
        #expect(throws: NetworkError.self) { try RTCPPacket.parse(compound: [0x81, 201, 0, 1, 0, 0, 0, 1]) }  // a block missing
        #expect(throws: NetworkError.self) { try RTCPPacket.parse(compound: [0x40, 200, 0, 0]) }
        #expect(throws: NetworkError.self) { try RTCPPacket.parse(compound: [0x80]) }
    }
}
