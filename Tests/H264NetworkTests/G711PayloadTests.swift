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

    @Test("the packetizer: runs of any length cut into packets of 20 ms (160 samples at 8 kHz) at their timestamps, never through a stereo sample frame; the marker on the first packet and after a gap; what the depacketizer gives back is the runs' bytes at their times")
    func packetizer() throws {
        let format = G711PayloadFormat(law: .a, payloadType: 8)
        var packetizer = try G711Packetizer(configuration: .init(payloadType: 8, ssrc: 9, initialSequenceNumber: 65_535, timestampOffset: UInt32.max - 100),
                                            format: format)
        let description = format.formatDescription
        func run(_ start: Int64, _ count: Int) -> SampleBuffer {
            SampleBuffer(data: BlockBuffer((0..<count).map { UInt8(truncatingIfNeeded: Int(start) + $0) }), formatDescription: .audio(description),
                         timing: SampleTiming(presentationTime: MediaTime(value: start, timescale: 8000), decodeTime: MediaTime(value: start, timescale: 8000),
                                              duration: MediaTime(value: Int64(count), timescale: 8000)), attachments: SampleAttachments(isSync: true))
        }
        // 400 samples, then 100 that follow on, then 160 after a gap of 40.
        var packets = try packetizer.packets(for: run(0, 400))
        packets += try packetizer.packets(for: run(400, 100))
        packets += try packetizer.packets(for: run(540, 160))
        #expect(packets.map(\.payload.count) == [160, 160, 80, 100, 160])
        #expect(packets.map { $0.timestamp &- (UInt32.max - 100) } == [0, 160, 320, 400, 540])
        #expect(packets.map(\.marker) == [true, false, false, false, true])
        #expect(packets.map(\.sequenceNumber) == [65_535, 0, 1, 2, 3] && packets.allSatisfy { $0.payloadType == 8 && $0.ssrc == 9 })
        #expect(packetizer.packetCount == 5 && packetizer.octetCount == 660)
        var depacketizer = G711Depacketizer(configuration: .init(format: format))
        var runs: [AACDepacketizer.Frame] = []
        for packet in packets { runs += depacketizer.receive(packet) }
        runs += depacketizer.finish()
        #expect(runs.flatMap(\.bytes) == (0..<500).map { UInt8(truncatingIfNeeded: $0) } + (540..<700).map { UInt8(truncatingIfNeeded: $0) })
        #expect(runs.map(\.extendedTimestamp) == [0, 160, 320, 400, 540])
        // Stereo: 50 sample frames fit a 113-byte packet (12 bytes of header); a half frame is refused.
        var stereo = try G711Packetizer(configuration: .init(maximumPacketSize: 113, payloadType: 97), format: G711PayloadFormat(law: .mu, payloadType: 97, channelCount: 2))
        #expect(try stereo.packets(samples: [UInt8](repeating: 1, count: 240), timestamp: 0).map(\.payload.count) == [100, 100, 40])
        #expect(throws: NetworkError.self) { try stereo.packets(samples: [1, 2, 3], timestamp: 0) }
        #expect(throws: NetworkError.self) { try G711Packetizer(configuration: .init(maximumPacketSize: 12), format: format) }
        #expect(throws: NetworkError.self) { try packetizer.packets(for: SampleBuffer(data: BlockBuffer([1]), formatDescription: .audio(G711PayloadFormat(law: .mu).formatDescription),
                                                                                      timing: SampleTiming(presentationTime: .zero, decodeTime: .zero, duration: MediaTime(value: 1, timescale: 8000)),
                                                                                      attachments: SampleAttachments(isSync: true))) }
    }

    @Test("what a sender announces: PCMU/PCMA with the static type at 8 kHz mono, a dynamic one otherwise, the rtpmap always; AudioPacketizer chooses by the track's format and refuses what it cannot send")
    func sending() throws {
        let mono = AudioFormatDescription(codec: "ulaw", sampleRate: 8000, channelCount: 1, framesPerPacket: 1)
        let sent = try #require(AudioPayloadFormat(sending: mono, control: "trackID=1"))
        #expect(sent.attributes == ["rtpmap:0 PCMU/8000", "control:trackID=1"] && sent.payloadType == 0)
        let wide = try #require(AudioPayloadFormat(sending: AudioFormatDescription(codec: "alaw", sampleRate: 16000, channelCount: 2, framesPerPacket: 1), dynamicPayloadType: 98))
        #expect(wide.attributes == ["rtpmap:98 PCMA/16000/2"])
        // The receiving side reads back what the sending side announces.
        #expect(AudioPayloadFormat(medium: sent.medium(port: 5006)) == sent && AudioPayloadFormat(medium: wide.medium(port: 5006)) == wide)
        let packetizer = try AudioPacketizer(format: mono, configuration: .init(payloadType: 97))
        #expect(packetizer.payloadType == 0 && packetizer.clockRate == 8000 && packetizer.payloadFormat(control: "trackID=1") == sent)
        #expect(AudioPacketizer.sends(mono) && !AudioPacketizer.sends(AudioFormatDescription(codec: "Opus", sampleRate: 48000, channelCount: 2, framesPerPacket: 960)))
        #expect(throws: NetworkError.self) { try AudioPacketizer(format: AudioFormatDescription(codec: "Opus", sampleRate: 48000, channelCount: 2, framesPerPacket: 960), configuration: .init()) }
    }
}

extension G711PayloadFormat {
    fileprivate func withControl(_ control: String?) -> G711PayloadFormat {
        var copy = self
        copy.control = control
        return copy
    }
}
