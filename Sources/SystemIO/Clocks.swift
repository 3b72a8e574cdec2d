#if canImport(Glibc)
import Glibc
#endif

/// The system's clocks, read in one place (`clock_gettime`).
package enum MonotonicClock {
    /// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`: steady, not set by anyone,
    /// stopped while the machine sleeps).
    @inline(__always)
    package static var nanoseconds: Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Seconds on the monotonic clock.
    package static var seconds: Double { Double(nanoseconds) / 1e9 }
}

/// The wall clock (`CLOCK_REALTIME`): what time it is, for timestamps people and other
/// machines read (NTP times in RTCP, a playlist's program date).
package enum WallClock {
    /// Seconds and nanoseconds since 1970-01-01 00:00:00 UTC.
    package static var now: (seconds: Int64, nanoseconds: Int64) {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return (Int64(time.tv_sec), Int64(time.tv_nsec))
    }

    /// Seconds since 1970-01-01 00:00:00 UTC, as a real number.
    package static var seconds: Double {
        let (seconds, nanoseconds) = now
        return Double(seconds) + Double(nanoseconds) / 1e9
    }
}
