#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A source of steadily advancing time (`CMClock`).
public protocol MediaClock: Sendable {
    /// The clock's current time.
    var currentTime: MediaTime { get }
}

/// The host's monotonic clock (`CMClockGetHostTimeClock`), in nanoseconds.
public struct HostClock: MediaClock {
    public init() {}
    public var currentTime: MediaTime {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return MediaTime(value: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), timescale: 1_000_000_000)
    }
}

/// A clock that moves only when told to: for tests and for rendering faster than real time.
public final class ManualClock: MediaClock {
    private let time: Mutex<MediaTime>
    public init(_ start: MediaTime = MediaTime(value: 0, timescale: 1_000_000_000)) { time = Mutex(start) }
    public var currentTime: MediaTime { time.withLock { $0 } }
    public func advance(by duration: MediaTime) { time.withLock { $0 = $0 + duration } }
    public func set(_ newTime: MediaTime) { time.withLock { $0 = newTime } }
}

/// A timeline driven by a clock at a rate (`CMTimebase`): set its time and rate, read its
/// current time. Time advances as `time + (clock now − clock then) × rate`; a rate of 0
/// pauses it, a negative rate runs it backwards. Safe to use from any thread.
public final class Timebase: Sendable {
    private struct Anchor {
        var time: MediaTime
        var clockTime: MediaTime
        var rate: Double
    }
    public let clock: any MediaClock
    private let anchor: Mutex<Anchor>

    /// A timebase at `time`, paused (rate 0) as `CMTimebaseCreateWithSourceClock` leaves it.
    public init(clock: any MediaClock = HostClock(), time: MediaTime = MediaTime(value: 0, timescale: 1_000_000_000), rate: Double = 0) {
        self.clock = clock
        anchor = Mutex(Anchor(time: time, clockTime: clock.currentTime, rate: rate))
    }

    public var rate: Double { anchor.withLock { $0.rate } }

    /// The timebase's current time.
    public var time: MediaTime {
        let now = clock.currentTime
        return anchor.withLock { Self.time(at: now, from: $0) }
    }

    private static func time(at now: MediaTime, from anchor: Anchor) -> MediaTime {
        let elapsed = now - anchor.clockTime
        switch anchor.rate {
        case 0: return anchor.time
        case 1: return anchor.time + elapsed
        case -1: return anchor.time - elapsed
        default:
            let scale = max(anchor.time.timescale, elapsed.timescale)
            return anchor.time + MediaTime(seconds: elapsed.seconds * anchor.rate, preferredTimescale: scale)
        }
    }

    /// Moves the timeline to `time`; the rate is unchanged.
    public func setTime(_ time: MediaTime) {
        let now = clock.currentTime
        anchor.withLock { $0 = Anchor(time: time, clockTime: now, rate: $0.rate) }
    }

    /// Changes the rate from now on; the current time is kept.
    public func setRate(_ rate: Double) {
        precondition(rate.isFinite, "a timebase rate must be finite")
        let now = clock.currentTime
        anchor.withLock { $0 = Anchor(time: Self.time(at: now, from: $0), clockTime: now, rate: rate) }
    }

    /// Sets time and rate together, atomically (`CMTimebaseSetRateAndAnchorTime`).
    public func setRate(_ rate: Double, time: MediaTime) {
        precondition(rate.isFinite, "a timebase rate must be finite")
        let now = clock.currentTime
        anchor.withLock { $0 = Anchor(time: time, clockTime: now, rate: rate) }
    }

    /// How long the clock must run until the timebase reaches `target` at the current rate;
    /// nil when it never will (paused, or moving away from it). For pacing output.
    public func clockDuration(until target: MediaTime) -> MediaTime? {
        let (now, rate) = (time, self.rate)
        let distance = (target - now).seconds
        guard rate != 0, distance == 0 || (distance > 0) == (rate > 0) else { return distance == 0 ? MediaTime(value: 0, timescale: 1) : nil }
        return MediaTime(seconds: distance / rate, preferredTimescale: 1_000_000_000)
    }
}
