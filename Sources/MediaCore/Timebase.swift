import Dispatch
import Synchronization
import SystemIO

/// A source of steadily advancing time (`CMClock`).
public protocol MediaClock: Sendable {
    /// The clock's current time.
    var currentTime: MediaTime { get }
}

/// The host's monotonic clock (`CMClockGetHostTimeClock`), in nanoseconds.
public struct HostClock: MediaClock {
    /// The host clock.
    public init() {}

    /// Now, on the monotonic clock (`CLOCK_MONOTONIC`, as `DispatchTime` reads it).
    public var currentTime: MediaTime {
        MediaTime(value: Int64(clamping: DispatchTime.now().uptimeNanoseconds), timescale: 1_000_000_000)
    }
}

/// A clock that moves only when told to: for tests and for rendering faster than real time.
public final class ManualClock: MediaClock {
    private let time: Locked<MediaTime>

    /// A clock standing at `start`.
    public init(_ start: MediaTime = MediaTime(value: 0, timescale: 1_000_000_000)) { time = Locked(start) }

    /// Where the clock stands.
    public var currentTime: MediaTime { time.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(by duration: MediaTime) { time.withLock { $0 = $0 + duration } }

    /// Puts the clock at `newTime`.
    public func set(_ newTime: MediaTime) { time.withLock { $0 = newTime } }
}

/// A timeline driven by a clock at a rate (`CMTimebase`): set its time and rate, read its
/// current time, wait until it reaches a time. Time advances as
/// `time + (clock now − clock then) × rate`; a rate of 0 pauses it, a negative rate runs it
/// backwards. Safe to use from any thread or task.
public final class Timebase: Sendable {
    private struct Anchor {
        var time: MediaTime
        var clockTime: MediaTime
        var rate: Double
        /// Bumped at every change, so waiters can tell they must look again.
        var generation: UInt64 = 0
    }

    /// What the timebase says about a time it is asked to reach (``schedule(for:)``).
    public enum Schedule: Sendable, Hashable {
        /// The time comes after this much clock time at the current rate.
        case after(MediaTime)
        /// The time has come: the timebase is at it, or past it by `late` (zero when exactly on
        /// time); for a timebase running backwards, past means above it.
        case due(late: MediaTime)
        /// The timebase is paused (rate 0) short of the time: it comes only when the rate changes.
        case paused
        /// The time is not a number (invalid, indefinite or infinite): it never comes.
        case unreachable
    }

    /// The clock the timebase follows.
    public let clock: any MediaClock
    private let anchor: Locked<Anchor>
    private let waiters = Locked<[UInt64: CheckedContinuation<Void, Never>]>([:])
    private let nextWaiter = Atomic<UInt64>(0)

    /// A timebase at `time`, paused (rate 0) as `CMTimebaseCreateWithSourceClock` leaves it.
    public init(clock: any MediaClock = HostClock(), time: MediaTime = MediaTime(value: 0, timescale: 1_000_000_000), rate: Double = 0) {
        self.clock = clock
        anchor = Locked(Anchor(time: time, clockTime: clock.currentTime, rate: rate))
    }

    /// The rate: 1 plays, 0 pauses, 2 plays twice as fast, negative plays backwards.
    public var rate: Double { anchor.withLock { $0.rate } }

    /// Whether the timebase is paused (rate 0).
    public var isPaused: Bool { rate == 0 }

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

    /// Moves the timeline to `time`; the rate is unchanged. Waiters look again.
    public func setTime(_ time: MediaTime) {
        let now = clock.currentTime
        anchor.withLock { $0 = Anchor(time: time, clockTime: now, rate: $0.rate, generation: $0.generation &+ 1) }
        wakeWaiters()
    }

    /// Changes the rate from now on; the current time is kept. Waiters look again. A rate that
    /// is not finite is ignored (there is no such speed).
    public func setRate(_ rate: Double) {
        guard rate.isFinite else { return }
        let now = clock.currentTime
        anchor.withLock { $0 = Anchor(time: Self.time(at: now, from: $0), clockTime: now, rate: rate, generation: $0.generation &+ 1) }
        wakeWaiters()
    }

    /// Sets time and rate together, atomically (`CMTimebaseSetRateAndAnchorTime`). A rate that
    /// is not finite leaves the rate as it is.
    public func setRate(_ rate: Double, time: MediaTime) {
        let now = clock.currentTime
        anchor.withLock { $0 = Anchor(time: time, clockTime: now, rate: rate.isFinite ? rate : $0.rate, generation: $0.generation &+ 1) }
        wakeWaiters()
    }

    /// When the timebase will reach `target` at the current rate, telling a paused timebase
    /// (``Schedule/paused``) apart from a late target (``Schedule/due(late:)``).
    public func schedule(for target: MediaTime) -> Schedule {
        let now = clock.currentTime
        let (time, rate) = anchor.withLock { (Self.time(at: now, from: $0), $0.rate) }
        let distance = target - time
        guard distance.isNumeric else { return .unreachable }
        if rate >= 0 && distance <= .zero { return .due(late: MediaTime.zero - distance) }
        if rate < 0 && distance >= .zero { return .due(late: distance) }
        if rate == 0 { return .paused }
        if (distance > .zero) != (rate > 0) { return .unreachable }
        return .after(MediaTime(seconds: distance.seconds / rate, preferredTimescale: 1_000_000_000))
    }

    /// How long the clock must run until the timebase reaches `target` at the current rate:
    /// zero when it is there; nil when it never will at this rate (paused, moving away, or
    /// past it already). ``schedule(for:)`` tells those cases apart.
    public func clockDuration(until target: MediaTime) -> MediaTime? {
        switch schedule(for: target) {
        case .after(let wait): wait
        case .due(let late): late == .zero ? MediaTime(value: 0, timescale: 1) : nil
        case .paused, .unreachable: nil
        }
    }

    /// Suspends until the timebase reaches `target`; returns how late that was noticed. A
    /// pause waits for the rate to change, and a change of time or rate is taken into account
    /// at once. Throws `CancellationError` when the task is cancelled.
    ///
    /// The clock must be one that advances by itself (a ``HostClock``): a ``ManualClock`` is
    /// only looked at again when the timebase changes.
    @discardableResult
    public func sleep(until target: MediaTime) async throws -> MediaTime {
        while true {
            try Task.checkCancellation()
            let generation = anchor.withLock { $0.generation }
            switch schedule(for: target) {
            case .due(let late):
                return late
            case .after(let wait):
                // Sleep the clock time it takes, or until a change wakes the waiters.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        let nanoseconds = max(0, wait.converted(toTimescale: 1_000_000_000, rounding: .awayFromZero).value)
                        try await Task.sleep(for: .nanoseconds(nanoseconds))
                    }
                    group.addTask { await self.waitForChange(after: generation) }
                    _ = try await group.next()
                    group.cancelAll()
                }
            case .paused, .unreachable:
                await waitForChange(after: generation)
            }
        }
    }

    /// Returns when the timebase changes after `generation` (or at once if it has), or when
    /// the waiting task is cancelled.
    private func waitForChange(after generation: UInt64) async {
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = waiters.withLock { waiting -> Bool in
                    if anchor.withLock({ $0.generation }) != generation || Task.isCancelled { return true }
                    waiting[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            waiters.withLock { $0.removeValue(forKey: id) }?.resume()
        }
    }

    private func wakeWaiters() {
        let waiting = waiters.withLock { waiting in
            defer { waiting.removeAll() }
            return Array(waiting.values)
        }
        for continuation in waiting { continuation.resume() }
    }
}
