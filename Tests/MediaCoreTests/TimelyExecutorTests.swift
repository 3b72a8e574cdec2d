import Foundation
import Synchronization
import TestSupport
import Testing

/// The test harness's timely executor (`TestSupport`): a `.timely` test, its child tasks and
/// what it resumes after a sleep or a continuation run on its threads, never waiting for
/// Swift's cooperative pool (which the corpus and synchronous waits hold in a parallel run).
@Suite("TimelyExecutor: timely tests on threads of their own", .timely)
struct TimelyExecutorTests {
    @Test("a timely test runs on the executor's threads: at its start, after a sleep, after a continuation resumed elsewhere, in child tasks and in a task that prefers it")
    func timelyTestsStayOnTheirThreads() async throws {
        #expect(TimelyExecutor.isCurrentThreadTimely, "at the start")
        try await Task.sleep(for: .milliseconds(5))
        #expect(TimelyExecutor.isCurrentThreadTimely, "after Task.sleep")
        try await ContinuousClock().sleep(until: .now + .milliseconds(5))
        #expect(TimelyExecutor.isCurrentThreadTimely, "after a clock's sleep")
        await withCheckedContinuation { continuation in DispatchQueue.global().async { continuation.resume() } }
        #expect(TimelyExecutor.isCurrentThreadTimely, "after a continuation resumed on a dispatch thread")
        async let child = { () async -> Bool in TimelyExecutor.isCurrentThreadTimely }()
        #expect(await child, "in an async let")
        let inGroup = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { try? await Task.sleep(for: .milliseconds(2)); return TimelyExecutor.isCurrentThreadTimely } }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(inGroup, "in a task group's tasks, after their sleeps")
        let unstructured = await Task(executorPreference: TimelyExecutor.shared) { TimelyExecutor.isCurrentThreadTimely }.value
        #expect(unstructured, "in a Task that prefers the executor")
    }

    @Test("the executor starts a thread for a job when every thread it has is busy (blocked or running), up to its maximum")
    func blockedThreadsDoNotHoldUpOthers() async throws {
        let executor = TimelyExecutor(maximumThreads: 8)
        // Four tasks each block their thread until all four have started: that ends only if
        // each got a thread of its own.
        final class Count: Sendable { let value = Mutex(0) }
        let count = Count()
        let all = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask(executorPreference: executor) {
                    count.value.withLock { $0 += 1 }
                    let deadline = Date().addingTimeInterval(10)
                    while count.value.withLock({ $0 }) < 4, Date() < deadline { usleep(1000) }
                    return count.value.withLock { $0 } == 4
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(all, "four blocked jobs at once")
    }
}

/// The timely tests' turns: shared ones together, an alone one by itself, in order of arrival.
@Suite("RealTimeTurns: shared and alone turns")
struct RealTimeTurnsTests {
    /// A log of the turns' starts and ends.
    actor Log {
        var events: [String] = []
        func add(_ event: String) { events.append(event) }
    }

    @Test("shared turns run together; an alone turn waits for those running and runs by itself; shared ones asked after it wait for it")
    func aloneWaitsAndIsWaitedFor() async throws {
        let turns = RealTimeTurns()
        let log = Log()
        await turns.acquire(alone: false)
        await turns.acquire(alone: false)  // two shared at once
        let alone = Task {
            await turns.acquire(alone: true)
            await log.add("alone")
            try? await Task.sleep(for: .milliseconds(50))
            await log.add("alone done")
            await turns.release(alone: true)
        }
        try await Task.sleep(for: .milliseconds(50))
        let later = Task {
            await turns.acquire(alone: false)
            await log.add("later")
            await turns.release(alone: false)
        }
        try await Task.sleep(for: .milliseconds(50))
        let early = await log.events
        #expect(early.isEmpty, "nothing may start while two shared turns run and the alone one waits: \(early)")
        await turns.release(alone: false)
        await turns.release(alone: false)
        await alone.value
        await later.value
        let events = await log.events
        #expect(events == ["alone", "alone done", "later"])
    }
}
