import H264Bitstream
import MediaCore
import TestSupport
import Testing

@Suite("Timebase: waiting, paused and late", .timely)
struct TimebaseWaitTests {
    static func seconds(_ value: Double) -> MediaTime { MediaTime(seconds: value, preferredTimescale: 1_000_000_000) }

    @Test func scheduleTellsPausedFromLate() {
        let clock = ManualClock()
        let timebase = Timebase(clock: clock, time: Self.seconds(10), rate: 0)
        #expect(timebase.schedule(for: Self.seconds(11)) == .paused)
        #expect(timebase.schedule(for: Self.seconds(9)) == .due(late: Self.seconds(1)))
        timebase.setRate(2)
        #expect(timebase.schedule(for: Self.seconds(11)) == .after(Self.seconds(0.5)))
        timebase.setRate(-1)
        // Backwards: a later time is behind the timebase (late), an earlier one ahead.
        #expect(timebase.schedule(for: Self.seconds(11)) == .due(late: Self.seconds(1)))
        #expect(timebase.schedule(for: Self.seconds(9)) == .after(Self.seconds(1)))
        #expect(timebase.schedule(for: .indefinite) == .unreachable)
    }

    @Test func durationsConvert() {
        #expect(MediaTime(.milliseconds(1500)) == MediaTime(value: 3, timescale: 2))
        #expect(MediaTime(value: 1001, timescale: 30000).duration == .nanoseconds(33_366_666) + Duration(secondsComponent: 0, attosecondsComponent: 666_666_666))
        #expect(MediaTime.invalid.duration == nil)
        #expect(FrameRate(30000, 1001).frameDuration == MediaTime(value: 1001, timescale: 30000))
        #expect(FrameRate(frameDuration: MediaTime(value: 1, timescale: 25)) == FrameRate(25, 1))
        #expect(FrameRate(25, 1).frameIndex(at: MediaTime(value: 99, timescale: 100)) == 24)
    }

    /// sleep(until:) returns when the time comes on the host clock, waits out a pause, and
    /// sees a rate change at once.
    @Test func sleepUntilFollowsRateChanges() async throws {
        let timebase = Timebase(time: .zero, rate: 0)
        let waiter = Task(executorPreference: TimelyExecutor.shared) { try await timebase.sleep(until: Self.seconds(0.2)) }
        try await Task.sleep(for: .milliseconds(50))
        timebase.setRate(4)  // 0.2 s of timebase in 50 ms of clock
        let late = try await waiter.value
        #expect(late >= .zero)
        #expect(timebase.time >= Self.seconds(0.2))
        let cancelled = Task(executorPreference: TimelyExecutor.shared) { try await Timebase(time: .zero, rate: 0).sleep(until: Self.seconds(1)) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }
}
