import SystemIO

/// Wall-clock time in the NTP timestamp format RTCP sender reports carry (RFC 3550 §4): seconds
/// since 1 January 1900 in the high 32 bits, the fraction of a second in the low 32.
enum NTPTime {
    /// Seconds from the NTP epoch (1900) to the Unix epoch (1970).
    static let unixEpochOffset: UInt64 = 2_208_988_800

    /// A wall-clock time given in seconds since 1970.
    static func time(secondsSince1970 seconds: Double) -> UInt64 {
        let whole = seconds.rounded(.down)
        let fraction = UInt64(((seconds - whole) * 4_294_967_296).rounded(.down))
        return (UInt64(max(0, whole)) + unixEpochOffset) << 32 | min(fraction, 0xFFFF_FFFF)
    }

    /// The current wall-clock time.
    static func now() -> UInt64 {
        let (seconds, nanoseconds) = WallClock.now
        let fraction = (UInt64(nanoseconds) << 32) / 1_000_000_000
        return (UInt64(seconds) + unixEpochOffset) << 32 | fraction
    }
}

/// A monotonic clock reading in seconds (any fixed origin): packet arrival times for jitter.
func monotonicSeconds() -> Double { MonotonicClock.seconds }
