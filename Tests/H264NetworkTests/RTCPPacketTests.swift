import H264Network
import Testing

@Suite("RTCPPacket")
struct RTCPPacketTests {
    @Test("an SDES with one CNAME (RFC 3550 §6.5): its bytes, word-aligned, and a compound of a report and it parses back")
    func sourceDescription() throws {
        let sdes = RTCPPacket.sourceDescription(ssrc: 0x1122_3344, canonicalName: "ab")
        #expect(RTCPPacket.serialize([sdes]) == [0x81, 202, 0, 3, 0x11, 0x22, 0x33, 0x44, 1, 2, 0x61, 0x62, 0, 0, 0, 0])
        let report = RTCPPacket.senderReport(.init(ssrc: 0x1122_3344, ntpTimestamp: 1 << 32, rtpTimestamp: 90_000, packetCount: 1, octetCount: 100))
        let parsed = try RTCPPacket.parse(compound: RTCPPacket.serialize([report, sdes, .goodbye(.init(sources: [0x1122_3344]))]))
        #expect(parsed == [report, sdes, .goodbye(.init(sources: [0x1122_3344]))])
        // A name of exactly 4n - 6 bytes ends on a word: the END item still gets its own word.
        let even = RTCPPacket.serialize([RTCPPacket.sourceDescription(ssrc: 1, canonicalName: "abcdef")])
        #expect(even.count % 4 == 0 && even.count == 4 + 4 + 8 + 4 && even[even.count - 4] == 0)
    }

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
