import H264Network
import MediaCore
import Testing

/// G.711 over RTP (RFC 3551): the payload format from a session description (static payload
/// types without an rtpmap, dynamic ones with), and the depacketizer (order, loss, wraps).
@Suite struct G711PayloadTests {
    static func medium(_ formats: [String], _ attributes: [String]) -> SessionDescription.Media {
        SessionDescription.Media(type: "audio", port: 0, formats: formats, attributes: attributes)
    }

    @Test("PCMU and PCMA: static payload types 0 and 8 without an rtpmap, dynamic ones by name with their rate and channels; a static type renamed is not G.711; ulaw/alaw at the rate, a byte a sample")
    func payloadFormats() throws {
        let pcmu = try G711PayloadFormat(medium: Self.medium(["0"], ["control:trackID=1"]))
        #expect(pcmu.law == .mu && pcmu.payloadType == 0 && pcmu.clockRate == 8000 && pcmu.channelCount == 1 && pcmu.control == "trackID=1")
        let pcma = try G711PayloadFormat(medium: Self.medium(["8"], ["rtpmap:8 PCMA/8000"]))
        #expect(pcma.law == .a && pcma.payloadType == 8)
        let dynamic = try G711PayloadFormat(medium: Self.medium(["97"], ["rtpmap:97 PCMU/16000/2"]))
        #expect(dynamic.payloadType == 97 && dynamic.clockRate == 16000 && dynamic.channelCount == 2)
        #expect(dynamic.formatDescription == AudioFormatDescription(codec: "ulaw", sampleRate: 16000, channelCount: 2, framesPerPacket: 1))
        #expect(throws: NetworkError.self) { try G711PayloadFormat(medium: Self.medium(["0"], ["rtpmap:0 L16/8000"])) }
        #expect(throws: NetworkError.self) { try G711PayloadFormat(medium: Self.medium(["96"], ["rtpmap:96 opus/48000/2"])) }
        #expect(throws: NetworkError.self) { try G711PayloadFormat(medium: Self.medium(["97"], ["rtpmap:97 PCMU/8000/99"])) }
        #expect(AudioPayloadFormat(medium: Self.medium(["8"], [])) == .g711(pcma.withControl(nil)))
    }

    @Test("the depacketizer: a run a packet at its timestamp, reordered packets put back, a lost one a gap in time, wraps of the timestamp unfolded, odd bytes of a stereo run cut, another payload type ignored")
    func depacketizer() {
        var depacketizer = G711Depacketizer(configuration: .init(format: G711PayloadFormat(law: .mu, channelCount: 2), reorderDepth: 4))
        func packet(_ sequence: UInt16, _ timestamp: UInt32, _ count: Int, type: UInt8 = 0) -> RTPPacket {
            RTPPacket(payloadType: type, sequenceNumber: sequence, timestamp: timestamp, ssrc: 7, payload: [UInt8](repeating: UInt8(sequence & 0xFF), count: count))
        }
        let start = UInt32.max - 159  // wraps after the first packet
        var runs = depacketizer.receive(packet(10, start, 320))
        runs += depacketizer.receive(packet(12, start &+ 320, 320))  // 11 comes late
        runs += depacketizer.receive(packet(11, start &+ 160, 321))  // odd: cut to 320
        runs += depacketizer.receive(packet(13, start &+ 480, 100, type: 8))  // another type
        runs += depacketizer.receive(packet(15, start &+ 800, 320))  // 14 lost
        runs += depacketizer.skipMissing()
        runs += depacketizer.finish()
        #expect(runs.map(\.extendedTimestamp) == [0, 160, 320, 800], "\(runs.map(\.extendedTimestamp))")
        #expect(runs.map(\.bytes.count) == [320, 320, 320, 320])
        #expect(runs.map { $0.bytes.first ?? 0 } == [10, 11, 12, 15])
        let statistics = depacketizer.statistics
        // (The other payload type's packet, comfort noise say, is not in the jitter buffer: its
        // number is a gap, as the lost one's is; both leave a gap in time.)
        #expect(statistics.packetsIgnored == 1 && statistics.runsComplete == 4 && statistics.packets.packetsLost == 2, "\(statistics)")
    }
}

extension G711PayloadFormat {
    fileprivate func withControl(_ control: String?) -> G711PayloadFormat {
        var copy = self
        copy.control = control
        return copy
    }
}
