#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex with one condition: for the blocking side of a bounded hand-over (a
/// session's producers, a read-ahead thread and its reader). Async code never waits on it: it
/// parks continuations and resumes them after the lock is released.
///
/// Unlike a dispatch semaphore, it can be let go in any state (libdispatch traps when a
/// semaphore is released with its count below its initial value).
package final class ConditionLock: @unchecked Sendable {  // the pthread objects are the synchronization
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// A lock and its condition, both unowned by any thread.
    package init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    package func withLock<R: ~Copyable, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a broadcast; call with the lock held (inside `withLock`).
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a broadcast or until `deadline` (``MonotonicClock`` nanoseconds), whichever
    /// comes first; call with the lock held. Returns false when the deadline passed.
    @discardableResult
    package func wait(until deadline: Int64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// Wakes every waiter.
    package func broadcast() { pthread_cond_broadcast(condition) }
}
