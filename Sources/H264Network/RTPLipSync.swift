public import MediaCore

/// Places a sender's sound on its picture's timeline (lip sync), as a pure state machine.
///
/// Each medium's samples are timed from its own first RTP timestamp. The sender reports of
/// both media tie each RTP clock to one wall clock (``RTPSenderClock``): the sound's first
/// timestamp and the picture's first then have wall-clock times, and their difference is what
/// the sound's times are moved by, never the packets' arrival. Until both reports and both
/// first timestamps are known the sound waits here (at most ``maximumHeldSamples`` frames, or
/// ``reportWait`` seconds after its first frame); past that, the arrival of each medium's
/// first frame stands in, and ``basis`` says so. The picture is never held: it is the
/// timeline.
public struct RTPLipSync: Sendable {
    /// What the sound was placed by.
    public enum Basis: String, Sendable, Hashable, Codable {
        /// Both media's sender reports (RFC 3550 §6.4.1): the sender's own clock.
        case senderReports = "sender reports"
        /// The arrival of each medium's first frame: no report came in time.
        case arrival
    }

    /// One medium's clock as the receiver knows it.
    public struct MediumClock: Sendable, Hashable {
        /// The medium's RTP timestamp its sample times count from.
        public var firstTimestamp: UInt32?
        /// When its first sample's packet arrived (the caller's clock, seconds).
        public var firstArrival: Double?
        /// Its sender clock, from the last sender report.
        public var senderClock: RTPSenderClock?

        /// A clock of these readings.
        public init(firstTimestamp: UInt32?, firstArrival: Double?, senderClock: RTPSenderClock?) {
            self.firstTimestamp = firstTimestamp
            self.firstArrival = firstArrival
            self.senderClock = senderClock
        }

        /// The picture's clock as its receiving session knows it.
        public init(_ picture: RTPReceivingSession) {
            self.init(firstTimestamp: picture.firstTimestamp, firstArrival: picture.firstArrival, senderClock: picture.senderClock)
        }

        /// Nothing known yet.
        public static let unknown = MediumClock(firstTimestamp: nil, firstArrival: nil, senderClock: nil)
    }

    /// The most sound frames held while the reports are awaited (about 10 s of 48 kHz AAC).
    public let maximumHeldSamples: Int
    /// Seconds after the sound's first frame that the reports are awaited.
    public let reportWait: Double
    /// What the sound was placed by, once it was.
    public private(set) var basis: Basis?
    /// Seconds added to the sound's times (its start after the picture's), once known.
    public private(set) var offset: Double?
    private var held: [SampleBuffer] = []

    /// An aligner holding at most `maximumHeldSamples` frames for at most `reportWait` seconds.
    public init(maximumHeldSamples: Int = 500, reportWait: Double = 6) {
        self.maximumHeldSamples = max(1, maximumHeldSamples)
        self.reportWait = reportWait
    }

    /// Sound samples in (any number, in decode order), given both media's clocks at `now`:
    /// the sound samples that can go on, on the picture's timeline.
    public mutating func align(_ samples: [SampleBuffer], video: MediumClock, audio: MediumClock, now: Double) -> [SampleBuffer] {
        if offset == nil { decide(video: video, audio: audio, now: now, ending: false) }
        guard let offset else {
            held += samples
            return []
        }
        let ready = held + samples
        held = []
        return ready.map { Self.moved($0, by: offset) }
    }

    /// The end: the sound still held, placed by whatever is known.
    public mutating func finish(video: MediumClock, audio: MediumClock, now: Double) -> [SampleBuffer] {
        if offset == nil { decide(video: video, audio: audio, now: now, ending: true) }
        return align([], video: video, audio: audio, now: now)
    }

    private mutating func decide(video: MediumClock, audio: MediumClock, now: Double, ending: Bool) {
        if let videoClock = video.senderClock, let audioClock = audio.senderClock, let videoStart = video.firstTimestamp, let audioStart = audio.firstTimestamp {
            offset = audioClock.seconds(at: audioStart) - videoClock.seconds(at: videoStart)
            basis = .senderReports
            return
        }
        let waited = audio.firstArrival.map { now - $0 >= reportWait } ?? false
        guard ending || waited || held.count >= maximumHeldSamples else { return }
        if let videoArrival = video.firstArrival, let audioArrival = audio.firstArrival {
            offset = audioArrival - videoArrival
        } else {
            offset = 0
        }
        basis = .arrival
    }

    /// `sample` with its times moved by `seconds` (in its own timescale).
    static func moved(_ sample: SampleBuffer, by seconds: Double) -> SampleBuffer {
        guard seconds != 0 else { return sample }
        var moved = sample
        let ticks = MediaTime(value: Int64((seconds * Double(sample.decodeTime.timescale)).rounded()), timescale: sample.decodeTime.timescale)
        moved.timing.decodeTime = sample.decodeTime + ticks
        moved.timing.presentationTime = sample.presentationTime + ticks
        return moved
    }
}
