#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, with `Synchronization.Mutex`'s `withLock`: the lock every
/// module uses for state that threads share.
///
/// On Linux `Mutex` waits on a futex directly, which ThreadSanitizer does not see: two threads
/// taking turns through a `Mutex` look to it like a race on the value (measured here: a
/// 20-line program of four threads appending under one `Mutex` is reported), so the
/// sanitized test suite could not tell a real race from the lock. `pthread_mutex_lock` is
/// intercepted, and costs the same uncontended (a futex underneath).
package final class Locked<Value: ~Copyable>: @unchecked Sendable {  // the pthread mutex is the synchronization
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    /// A lock around `value`.
    package init(_ value: consuming Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    package func withLock<Result: ~Copyable, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
