import Foundation

/// Threads of their own for the tests whose timing matters (``TimelyTrait``): a task that
/// prefers this executor never waits for Swift's cooperative pool.
///
/// The cooperative pool has one thread a core, two here. A parallel run holds both for minutes
/// with blocking work (a corpus decode, a synchronous wait for a child process): measured in CI,
/// a server task resumed over ten minutes late and a receiver gave up for lack of packets its
/// socket had. This executor starts a thread whenever a job comes and every thread it has is
/// busy (running or blocked), up to ``maximumThreads``; threads that run dry wait for the next
/// job. The operating system then shares the cores among everything runnable, so a real-time
/// test is slowed by a loaded machine, never stopped by it. The shared executor has 16: room
/// for the four timely tests at a time to block several each, while the 180 in-process
/// clients of one test take less of the cores from the two event loops that serve them (with
/// 64, an RTSP server's answers took over a minute in a CI run here).
public final class TimelyExecutor: TaskExecutor, @unchecked Sendable {  // `condition` guards the mutable fields
    /// The executor every timely test and its tasks prefer.
    public static let shared = TimelyExecutor(maximumThreads: 16)

    /// The most threads this executor starts.
    public let maximumThreads: Int

    /// Whether the calling thread is one of a timely executor's.
    public static var isCurrentThreadTimely: Bool { Thread.current.threadDictionary[marker] as? Bool == true }
    private static let marker = "h264kit.timely"

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var threads = 0
    private var idle = 0

    /// An executor that starts at most `maximumThreads` threads (at least one).
    public init(maximumThreads: Int) {
        self.maximumThreads = max(1, maximumThreads)
    }

    /// Runs `job` on an idle thread, or on a new one when none is idle.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let waiting = jobs.count - next
        let starts = waiting > idle && threads < maximumThreads
        if starts { threads += 1 }
        condition.signal()
        condition.unlock()
        if starts { Thread.detachNewThread { [self] in work() } }
    }

    private func work() {
        Thread.current.threadDictionary[Self.marker] = true
        condition.lock()
        while true {
            while next == jobs.count {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
        }
    }
}
