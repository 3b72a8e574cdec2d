import H264Network
import MediaCore
import Testing

/// The receiving half for AAC, and the placing of a sender's sound beside its picture from the
/// sender reports (RFC 3550 §6.4.1), as pure state machines: packets and reports in, samples
/// and times out.
@Suite("RTP sound received, and placed beside the picture")
struct RTPAudioReceivingTests {
    static let format = AACPayloadTests.format

    /// 1900-based NTP seconds as the 32.32 fixed point of a report.
    static func ntp(_ seconds: Double) -> UInt64 {
        UInt64(seconds) << 32 | UInt64((seconds - seconds.rounded(.down)) * 4_294_967_296)
    }

    @Test("frames come back as samples timed from the first frame's RTP timestamp; a lost packet is counted; the sender's report gives its clock; a BYE ends it")
    func framesReportsAndGoodbye() throws {
        let frames = AACPayloadTests.frames(40)
        var configuration = AACPacketizer.Configuration(ssrc: 77)
        configuration.timestampOffset = 4_294_960_000  // (wraps within the stream)
        let packets = try AACPayloadTests.packets(frames, configuration)
        var session = try RTPAudioReceivingSession(configuration: .init(format: Self.format, trackID: TrackID(rawValue: 2), ssrc: 5))
        var samples: [SampleBuffer] = []
        for (index, packet) in packets.enumerated() where index != 20 {
            samples += session.receiveRTP(packet.bytes, arrival: Double(index) * 0.02)
        }
        samples += session.expire(now: 10) + session.expire(now: 11) + session.finish()
        // Every frame but those the lost packet carried, each its own bytes and time.
        let lost = Set(frames.indices.filter { index in samples.allSatisfy { $0.data.bytes != frames[index] } })
        #expect(!lost.isEmpty && lost.count <= 3, "lost frames \(lost)")
        for sample in samples {
            let index = Int(sample.decodeTime.value / 1024)
            #expect(sample.data.bytes == frames[index] && sample.decodeTime.timescale == 48_000 && sample.duration.value == 1024 && sample.trackID.rawValue == 2)
        }
        // (The source is taken at its second packet in sequence, RFC 3550 A.1: the first frames come then.)
        #expect(session.firstTimestamp == configuration.timestampOffset && session.firstArrival == 0.02)
        #expect(session.reception?.cumulativeLost == 1)
        // A receiver report for the sender, once a report interval.
        let due = session.feedback(now: 12)
        let feedback = try #require(due)
        let parsed = try feedback.withUnsafeBytes { try RTCPPacket.parse(compound: $0) }
        guard case .receiverReport(let report)? = parsed.first else { Issue.record("not a receiver report: \(parsed)"); return }
        #expect(report.ssrc == 5 && report.reports.first?.ssrc == 77)
        let notDue = session.feedback(now: 12.5)
        #expect(notDue == nil)
        // The sender's report: its clock; a BYE: over after the settle.
        let sr = RTCPPacket.serialize([.senderReport(.init(ssrc: 77, ntpTimestamp: Self.ntp(3_900_000_000.25), rtpTimestamp: 1000, packetCount: UInt32(packets.count), octetCount: 0))])
        let saidReport = sr.withUnsafeBytes { session.receiveRTCP($0, arrival: 13) }.senderReport
        #expect(saidReport)
        #expect(abs((session.senderClock?.seconds(at: 1000 + 48_000) ?? 0) - 3_900_000_001.25) < 1e-6)
        let bye = RTCPPacket.serialize([.goodbye(.init(sources: [77]))])
        let saidGoodbye = bye.withUnsafeBytes { session.receiveRTCP($0, arrival: 14) }.goodbye
        #expect(saidGoodbye)
        #expect(!session.isOver(quiet: 0.05) && session.isOver(quiet: 1.5))
        // Another source's packets, or not RTP: counted, nothing made.
        var other = configuration
        other.ssrc = 99
        let stray = try AACPayloadTests.packets([frames[0]], other)
        let fromOther = session.receiveRTP(stray[0].bytes, arrival: 15), notRTP = session.receiveRTP([1, 2, 3], arrival: 15)
        #expect(fromOther.isEmpty && notRTP.isEmpty)
    }

    @Test("a configuration that is not AAC is an error, not a session")
    func aBadConfigurationIsAnError() {
        var format = Self.format
        format.config = [0xF8, 0x00]  // object type escape with nothing after it
        #expect(throws: NetworkError.self) { _ = try RTPAudioReceivingSession(configuration: .init(format: format)) }
    }

    static func sound(_ count: Int) -> [SampleBuffer] {
        let format = FormatDescription.audio(try! Self.format.formatDescription())
        return (0..<count).map { index in
            let time = MediaTime(value: Int64(index * 1024), timescale: 48_000)
            return SampleBuffer(data: BlockBuffer([UInt8(index & 0xFF)]), formatDescription: format,
                                timing: SampleTiming(presentationTime: time, decodeTime: time, duration: MediaTime(value: 1024, timescale: 48_000)),
                                attachments: SampleAttachments(isSync: true), trackID: TrackID(rawValue: 2))
        }
    }

    @Test("by the sender reports: the sound waits for both, then moves by the difference of the two first timestamps' wall-clock times (never the arrival)")
    func placedBySenderReports() {
        var sync = RTPLipSync()
        // The picture's first timestamp 90,000 reads 1000.000 s on the wall clock (its report
        // says 1000.5 s at 135,000); the sound's first, 48,000, reads 1000.25 s.
        let video = RTPLipSync.MediumClock(firstTimestamp: 90_000, firstArrival: 5.0,
                                           senderClock: RTPSenderClock(ntpTimestamp: Self.ntp(1000.5), rtpTimestamp: 135_000, clockRate: 90_000))
        var audio = RTPLipSync.MediumClock(firstTimestamp: 48_000, firstArrival: 9.0, senderClock: nil)
        #expect(sync.align(Self.sound(3), video: video, audio: audio, now: 9.1).isEmpty, "held until the sound's report")
        audio.senderClock = RTPSenderClock(ntpTimestamp: Self.ntp(1001), rtpTimestamp: 48_000 + 36_000, clockRate: 48_000)
        let placed = sync.align(Self.sound(2), video: video, audio: audio, now: 9.2)
        #expect(sync.basis == .senderReports && abs((sync.offset ?? 0) - 0.25) < 1e-6)
        #expect(placed.map(\.decodeTime.value) == [12_000, 13_024, 14_048, 12_000, 13_024], "the held three, then the two, 0.25 s on")
    }

    @Test("without reports in time (or at the end), the first frames' arrival places the sound, and the basis says so; the wait is bounded")
    func placedByArrivalWhenNoReportComes() {
        let video = RTPLipSync.MediumClock(firstTimestamp: 0, firstArrival: 10.0, senderClock: nil)
        let audio = RTPLipSync.MediumClock(firstTimestamp: 0, firstArrival: 10.5, senderClock: nil)
        var waited = RTPLipSync(maximumHeldSamples: 500, reportWait: 6)
        #expect(waited.align(Self.sound(10), video: video, audio: audio, now: 12).isEmpty)
        let late = waited.align(Self.sound(1), video: video, audio: audio, now: 16.6)
        #expect(waited.basis == .arrival && waited.offset == 0.5 && late.count == 11 && late[0].decodeTime.value == 24_000)
        var full = RTPLipSync(maximumHeldSamples: 4, reportWait: 60)
        #expect(full.align(Self.sound(3), video: video, audio: audio, now: 11).isEmpty)
        #expect(full.align(Self.sound(2), video: video, audio: audio, now: 11).isEmpty && full.basis == nil)
        #expect(full.align([], video: video, audio: audio, now: 11).count == 5 && full.basis == .arrival, "past the bound: placed and handed on")
        var ending = RTPLipSync()
        #expect(ending.align(Self.sound(2), video: video, audio: audio, now: 11).isEmpty)
        #expect(ending.finish(video: video, audio: audio, now: 11).count == 2 && ending.basis == .arrival)
    }
}
