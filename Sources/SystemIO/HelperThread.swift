#if canImport(Glibc)
import Glibc
#endif
import SystemPackage
import CSystemShims

/// A thread of its own for long blocking work (searching a mapped file ahead of its reader),
/// joined by its owner: ``join()`` returns once the body has returned. A helper that is never
/// joined is detached when this value goes, and finishes on its own.
///
/// A thread of its own rather than a dispatch worker: the work waits on its consumer, and a
/// dispatch worker held that way is one fewer for everyone else.
package final class HelperThread: @unchecked Sendable {  // `thread` is written once, in init; `joined` under the caller's discipline
    private var thread: pthread_t
    private var joined = false

    /// Starts `body` on a new thread named `name` (at most 15 bytes show in `top`).
    package init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        final class Start { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
        let context = Unmanaged.passRetained(Start(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let start = Unmanaged<AnyObject>.fromOpaque(context!).takeRetainedValue() as! Start
            start.body()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<AnyObject>.fromOpaque(context).release()
            throw SystemError(.spawn, path: name, errno: Errno(rawValue: result))
        }
        _ = csystem_set_thread_name(thread, String(name.utf8.prefix(15))!)
        self.thread = thread
    }

    /// Waits until the body has returned. Called once, from another thread than the helper.
    package func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }

    deinit { if !joined { pthread_detach(thread) } }
}

/// Work done ahead of its consumer on a ``HelperThread``: `produce(k)` for k = 0 ..< `count`
/// in order, at most `depth` results ahead of ``next()``. The consumer stops it whenever it
/// likes: ``cancel()`` (or letting go of this object) stops the helper after the item it is
/// producing and waits for it, in any state, so nothing the helper uses goes away under it.
package final class ReadAhead<Element>: @unchecked Sendable {  // `shared` is guarded by its lock
    private final class Shared: @unchecked Sendable {
        let lock = ConditionLock()
        /// Produced and not yet taken, in order (at most `depth`).
        var ready: [Element] = []
        var readyStart = 0
        var cancelled = false
    }

    /// How many items there are.
    package let count: Int
    private let shared = Shared()
    private var helper: HelperThread?
    private var taken = 0

    /// Starts producing; without a helper thread (none can be started) the consumer's own
    /// `next()` produces each item.
    package init(count: Int, depth: Int, name: String, produce: @escaping @Sendable (Int) -> Element) {
        self.count = count
        self.produce = produce
        let shared = shared
        let depth = max(1, depth)
        helper = try? HelperThread(name: name) {
            for k in 0..<count {
                let proceed = shared.lock.withLock { () -> Bool in
                    while !shared.cancelled && shared.ready.count - shared.readyStart >= depth { shared.lock.wait() }
                    return !shared.cancelled
                }
                guard proceed else { return }
                let item = produce(k)
                shared.lock.withLock {
                    shared.ready.append(item)
                    shared.lock.broadcast()
                }
            }
        }
    }

    private let produce: @Sendable (Int) -> Element

    /// The next item, waiting for the helper if it is behind; nil after the last (or after
    /// ``cancel()``).
    package func next() -> Element? {
        guard taken < count else { return nil }
        guard helper != nil else {
            defer { taken += 1 }
            return produce(taken)
        }
        let item = shared.lock.withLock { () -> Element? in
            while !shared.cancelled && shared.ready.count == shared.readyStart { shared.lock.wait() }
            guard !shared.cancelled else { return nil }
            let item = shared.ready[shared.readyStart]
            shared.readyStart += 1
            if shared.readyStart == shared.ready.count {
                shared.ready.removeAll(keepingCapacity: true)
                shared.readyStart = 0
            }
            shared.lock.broadcast()
            return item
        }
        if item != nil { taken += 1 }
        return item
    }

    /// Stops the helper after the item it is producing and waits for it; ``next()`` returns
    /// nil from then on. Safe to call more than once, and at any point.
    package func cancel() {
        shared.lock.withLock {
            shared.cancelled = true
            shared.ready.removeAll()
            shared.readyStart = 0
            shared.lock.broadcast()
        }
        helper?.join()
        taken = count
    }

    deinit { cancel() }
}

/// One piece of work started on a ``HelperThread`` now, its result taken later with
/// ``wait()`` (the caller meanwhile does other work). Letting go of it waits for the work.
package final class BackgroundWork<Result>: @unchecked Sendable {  // `result` is handed over by the join
    private final class Box: @unchecked Sendable { var result: Result? }
    private let box = Box()
    private var helper: HelperThread?
    private var taken = false

    /// Starts `work`; where no thread can be started, ``wait()`` runs it.
    package init(name: String, _ work: @escaping @Sendable () -> Result) {
        let box = box
        helper = try? HelperThread(name: name) { box.result = work() }
        if helper == nil { self.work = work } else { self.work = nil }
    }

    private let work: (@Sendable () -> Result)?

    /// Waits for the work and returns its result (once).
    package func wait() -> Result? {
        guard !taken else { return nil }
        taken = true
        if let helper {
            helper.join()
            return box.result
        }
        return work?()
    }

    deinit { helper?.join() }
}

/// The processors online now (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
package var onlineProcessorCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
