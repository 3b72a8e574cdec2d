#if canImport(Glibc)
import Glibc
#endif

/// A mutex with a condition, for the blocking (synchronous) side of a session. The async side
/// never waits on it: it parks continuations, resumed after the lock is released.
final class ConditionLock: @unchecked Sendable {  // the pthread objects are the synchronization
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a broadcast; call with the lock held (inside `withLock`).
    func wait() { pthread_cond_wait(condition, mutex) }

    func broadcast() { pthread_cond_broadcast(condition) }
}
