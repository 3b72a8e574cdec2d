public import MediaCore

/// The sound a receiver takes beside a picture: its ``RTPAudioReceivingSession`` and the
/// ``RTPLipSync`` that places its samples on the picture's timeline, as one state machine, so
/// that the RTP receiver, the RTSP client and the RTSP ingest (the shells around it: sockets,
/// clock, recording) decide the same way. Every call returns the sound samples now placed, in
/// order; ``finish(picture:now:)`` the rest. `picture` is the picture's clock at the time
/// (`RTPLipSync.MediumClock(_:)` of its receiving session).
public struct RTPAudioBesidePicture: Sendable {
    /// The sound's receiving session (its reports, statistics and format).
    public private(set) var session: RTPAudioReceivingSession
    /// How the sound is being placed.
    public private(set) var lipSync: RTPLipSync

    /// The sound received by `session`, placed by `lipSync`.
    public init(session: RTPAudioReceivingSession, lipSync: RTPLipSync = RTPLipSync()) {
        self.session = session
        self.lipSync = lipSync
    }

    /// The sound of `format` (on track 2), placed by a new ``RTPLipSync``; an error when the
    /// format does not describe its sound.
    public init(format: AudioPayloadFormat) throws(NetworkError) {
        self.init(session: try RTPAudioReceivingSession(configuration: .init(format: format)))
    }

    /// An RTP datagram of the sound that arrived at `arrival`.
    public mutating func receiveRTP(_ datagram: [UInt8], arrival: Double, picture: RTPLipSync.MediumClock) -> [SampleBuffer] {
        place(session.receiveRTP(datagram, arrival: arrival), picture: picture, now: arrival)
    }

    /// An RTCP datagram of the sound's; what it said.
    public mutating func receiveRTCP(_ datagram: [UInt8], arrival: Double) -> RTPReceivingSession.ControlEvents {
        datagram.withUnsafeBytes { session.receiveRTCP($0, arrival: arrival) }
    }

    /// The clock's tick: frames given up waiting for, and those the placing released.
    public mutating func expire(now: Double, picture: RTPLipSync.MediumClock) -> [SampleBuffer] {
        place(session.expire(now: now), picture: picture, now: now)
    }

    /// The receiver report due at `now`, or nil.
    public mutating func feedback(now: Double) -> [UInt8]? { session.feedback(now: now) }

    /// The end: the frames still held, placed, and every one the placing still holds.
    public mutating func finish(picture: RTPLipSync.MediumClock, now: Double) -> [SampleBuffer] {
        let tail = session.finish()
        let (video, audio) = clocks(picture)
        return lipSync.align(tail, video: video, audio: audio, now: now) + lipSync.finish(video: video, audio: audio, now: now)
    }

    private mutating func place(_ samples: [SampleBuffer], picture: RTPLipSync.MediumClock, now: Double) -> [SampleBuffer] {
        let (video, audio) = clocks(picture)
        return lipSync.align(samples, video: video, audio: audio, now: now)
    }

    private func clocks(_ picture: RTPLipSync.MediumClock) -> (video: RTPLipSync.MediumClock, audio: RTPLipSync.MediumClock) {
        (picture, RTPLipSync.MediumClock(firstTimestamp: session.firstTimestamp, firstArrival: session.firstArrival, senderClock: session.senderClock))
    }
}
