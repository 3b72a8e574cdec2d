public import H264Bitstream

extension FrameRate {
    /// The duration of one frame: `denominator / numerator` seconds, exact when the numerator
    /// fits a timescale (every rate a stream or a container states), else the nearest
    /// nanosecond value, flagged as rounded. A rate of 0 gives ``MediaTime/positiveInfinity``.
    public var frameDuration: MediaTime {
        guard numerator > 0 else { return .positiveInfinity }
        if numerator <= UInt64(Int32.max), denominator <= UInt64(Int64.max) {
            return MediaTime(value: Int64(denominator), timescale: Int32(numerator))
        }
        return MediaTime(seconds: Double(denominator) / Double(numerator), preferredTimescale: 1_000_000_000)
    }

    /// The rate whose frames last `frameDuration`; nil unless it is a positive number.
    public init?(frameDuration: MediaTime) {
        guard frameDuration.isNumeric, frameDuration.value > 0 else { return nil }
        self.init(UInt64(frameDuration.timescale), UInt64(frameDuration.value))
    }

    /// The start of frame `index` (0-based) at this rate: `index` frame durations.
    public func time(ofFrame index: Int64) -> MediaTime { frameDuration * index }

    /// The frame that `time` falls in at this rate (rounded down; negative before 0); nil for a
    /// time that is not a number.
    public func frameIndex(at time: MediaTime) -> Int64? {
        guard time.isNumeric, numerator > 0 else { return nil }
        let ticks = time.multiplied(byRatio: Int64(clamping: numerator), Int64(clamping: denominator))
        guard ticks.isNumeric else { return nil }
        return ticks.converted(toTimescale: 1, rounding: .towardNegativeInfinity).value
    }
}

extension MediaTime {
    /// The time of a Swift `Duration`, in nanoseconds (attoseconds beyond are rounded, and the
    /// result flagged).
    public init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let nanoseconds = attoseconds / 1_000_000_000
        guard !overflow, whole.addingReportingOverflow(nanoseconds).overflow == false else {
            self = seconds < 0 ? .negativeInfinity : .positiveInfinity
            return
        }
        self.init(value: whole + nanoseconds, timescale: 1_000_000_000)
        if attoseconds % 1_000_000_000 != 0 { flags.insert(.hasBeenRounded) }
    }

    /// The time as a Swift `Duration` (exact to the attosecond); nil when it is not a number.
    public var duration: Duration? {
        guard isNumeric else { return nil }
        let scale = Int64(timescale)
        let whole = value / scale, remainder = value % scale
        return .seconds(whole) + .nanoseconds(remainder * 1_000_000_000 / scale)
            + Duration(secondsComponent: 0, attosecondsComponent: (remainder * 1_000_000_000 % scale) * 1_000_000_000 / scale)
    }
}

extension FrameRate {
    /// The rate a stream without VUI timing is timed at when no rate is given: 25 fps, as
    /// ffmpeg reads a raw H.264 stream. Everything that reads a stream uses it by default,
    /// with a warning (the tool's names `--fps`): `SampleBufferBuilder`, `SampleBufferReader`,
    /// and what is built on them (muxing, decoding, transcoding, probing).
    public static let assumedWithoutTiming = FrameRate(25, 1)
}
