import Dispatch
import SystemIO

/// The plumbing both sessions share: where the codec work runs (the caller's thread, or a
/// serial dispatch queue of the session's own, off Swift's cooperative pool), where outputs go
/// (a handler, or one `AsyncSequence` consumer), and the bound on work in flight.
///
/// In flight = inputs queued for the codec + outputs waiting for the consumer. At the bound,
/// producers block (``acquire()``) or suspend (``acquire(cancelled:)``) until the consumer
/// catches up; when a queued input produces its first output, its place passes to that output
/// in one step, so the count never dips and lets a producer overshoot. Continuations are
/// resumed after the lock is released.
final class SessionPipeline<Output: Sendable>: Sendable {
    typealias Failure = SessionError
    typealias Handler = @Sendable (Output) -> Void

    let limit: Int
    let handler: Handler?
    /// Nanoseconds a blocking producer waits for an absent consumer (see ``acquire()``).
    let consumerWaitLimit: Int64?
    let queue: DispatchQueue?
    private let lock = ConditionLock()
    private nonisolated(unsafe) var state = State()  // guarded by `lock`

    private enum Step { case stop, buffered, handOff(UnsafeContinuation<Output?, Never>) }
    private enum Next { case output(Output), end, wait }

    private struct State {
        /// Inputs handed to the queue and not yet through the codec.
        var queued = 0
        /// Outputs waiting for the consumer, from `readyStart`; a slot is emptied as soon as
        /// its output is taken, so nothing the consumer has had is kept alive here.
        var ready: [Output?] = []
        var readyStart = 0
        /// No more outputs will come (finished or invalidated).
        var ended = false
        var failure: Failure?
        /// Whether the end is an error the consumer should see (not a finish or invalidation).
        var endedInError = false
        /// Whether the output sequence was handed out (one consumer per session).
        var sequenceTaken = false
        var producers: [(id: Int, continuation: UnsafeContinuation<Void, Never>)] = []
        var consumer: UnsafeContinuation<Output?, Never>?
        var nextWaiterID = 0
        var highWater = 0
        /// Outputs the consumer has taken (a blocking producer watches it move).
        var taken = 0

        var readyCount: Int { ready.count - readyStart }

        /// Takes the oldest waiting output, and reclaims the emptied slots now and then.
        mutating func takeReady() -> Output {
            let output = ready[readyStart].take()!
            readyStart += 1
            taken += 1
            if readyStart == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyStart = 0
            } else if readyStart >= 64 && readyStart * 2 >= ready.count {
                ready.removeFirst(readyStart)
                readyStart = 0
            }
            return output
        }
        var inFlight: Int { queued + readyCount }
    }

    init(label: String, asynchronous: Bool, limit: Int, handler: Handler?, consumerWaitLimit: Double? = nil) {
        precondition(limit > 0, "the in-flight bound must be positive")
        self.limit = limit
        self.handler = handler
        self.consumerWaitLimit = consumerWaitLimit.map { Int64(max(0, min($0, 1e9)) * 1e9) }
        queue = asynchronous ? DispatchQueue(label: label) : nil
    }

    var inFlight: Int { lock.withLock { state.inFlight } }
    var highWater: Int { lock.withLock { state.highWater } }
    var failure: Failure? { lock.withLock { state.failure } }

    // MARK: Producers

    /// Waits, blocking, for room in flight, and takes it.
    ///
    /// A blocking producer of a session whose outputs go to its one sequence can wait for ever
    /// if nobody consumes them (the consumer was to run on this very thread, after the
    /// loop that feeds the session). So while outputs wait for a consumer and none is waiting
    /// for them, it waits at most ``consumerWaitLimit`` without one being taken, then throws
    /// ``SessionError/outputsNotConsumed(waited:inFlight:)``.
    func acquire() throws(Failure) {
        try lock.withLock { () throws(Failure) in
            var deadline: Int64?
            var takenAtDeadline = state.taken
            while state.failure == nil && state.inFlight >= limit {
                guard handler == nil, let wait = consumerWaitLimit, state.consumer == nil, state.readyCount > 0 else {
                    deadline = nil
                    lock.wait()
                    continue
                }
                let now = MonotonicClock.nanoseconds
                if deadline == nil || state.taken != takenAtDeadline {
                    deadline = now + wait
                    takenAtDeadline = state.taken
                }
                if now >= deadline! { throw .outputsNotConsumed(waited: Double(wait) / 1e9, inFlight: state.inFlight) }
                lock.wait(until: deadline!)
            }
            try reserve()
        }
    }

    /// Waits, suspending, for room in flight, and takes it; throws `cancelled()` when the
    /// waiting task is cancelled.
    func acquire(cancelled: @autoclosure () -> Failure) async throws(Failure) {
        while true {
            let id: Int? = try lock.withLock { () throws(Failure) -> Int? in
                if state.failure == nil && state.inFlight >= limit {
                    state.nextWaiterID += 1
                    return state.nextWaiterID
                }
                try reserve()
                return nil
            }
            guard let id else { return }
            await withTaskCancellationHandler {
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                    let resumeNow = lock.withLock {
                        if state.failure != nil || state.inFlight < limit || Task.isCancelled { return true }
                        state.producers.append((id, continuation))
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                let waiter = lock.withLock { () -> UnsafeContinuation<Void, Never>? in
                    guard let index = state.producers.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.producers.remove(at: index).continuation
                }
                waiter?.resume()
            }
            if Task.isCancelled { throw cancelled() }
        }
    }

    /// Counts an input in flight (lock held).
    private func reserve() throws(Failure) {
        if let failure = state.failure { throw failure }
        if queue != nil {
            state.queued += 1
            state.highWater = max(state.highWater, state.inFlight)
        }
    }

    /// Hands out the output sequence's source once; a second consumer is an error.
    func takeSequence() throws(Failure) {
        guard handler == nil else { throw .outputsGoToHandler }
        try lock.withLock { () throws(Failure) in
            guard !state.sequenceTaken else { throw .outputSequenceTaken }
            state.sequenceTaken = true
        }
    }

    /// Runs the work for an input taken with `acquire`: now, or on the queue.
    func submit(_ work: @escaping @Sendable () throws(Failure) -> [Output]) {
        guard let queue else {
            run(releasingQueued: false, work)
            return
        }
        queue.async { [self] in
            if lock.withLock({ state.failure != nil }) {
                lock.withLock { state.queued -= 1 }
                wakeProducers()
                return
            }
            run(releasingQueued: true, work)
        }
    }

    /// Runs work that is not an input (a drain): now, or after the queued inputs.
    func perform(_ work: @escaping @Sendable () throws(Failure) -> [Output]) {
        guard let queue else {
            run(releasingQueued: false, work)
            return
        }
        queue.async { [self] in
            if lock.withLock({ state.failure == nil }) { run(releasingQueued: false, work) }
        }
    }

    /// Blocks until the queued work is done.
    func waitForQueue() { queue?.sync {} }

    /// Suspends until the queued work is done.
    func waitForQueue() async {
        guard let queue else { return }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in queue.async { continuation.resume() } }
    }

    private func run(releasingQueued: Bool, _ work: () throws(Failure) -> [Output]) {
        let outputs: [Output]
        do { outputs = try work() } catch {
            if releasingQueued { lock.withLock { state.queued -= 1 } }
            end(with: error, isError: true)
            return
        }
        deliver(outputs, releasingQueued: releasingQueued)
    }

    private func deliver(_ outputs: [Output], releasingQueued: Bool) {
        var release = releasingQueued
        if let handler {
            for output in outputs { handler(output) }
        } else {
            for output in outputs {
                // Wait for room: the consumer, not the codec, sets the pace.
                let step = lock.withLock { () -> Step in
                    while !state.ended && state.readyCount >= limit { lock.wait() }
                    if release {
                        // The input's place in flight becomes its output's, in one step.
                        state.queued -= 1
                        release = false
                    }
                    if state.ended { return .stop }
                    if let waiting = state.consumer, state.readyCount == 0 {
                        state.consumer = nil
                        return .handOff(waiting)
                    }
                    state.ready.append(output as Output?)
                    state.highWater = max(state.highWater, state.inFlight)
                    return .buffered
                }
                if case .stop = step { break }
                if case .handOff(let consumer) = step { consumer.resume(returning: output) }
            }
        }
        if release { lock.withLock { state.queued -= 1 } }
        wakeProducers()
    }

    // MARK: Ending

    /// No more outputs: the consumer's sequence ends once it has taken the waiting ones (with
    /// `error` thrown when `isError`), and producers get `error` (the first error given is kept).
    func end(with error: Failure, isError: Bool = false) {
        let (consumer, producers) = lock.withLock { () -> (UnsafeContinuation<Output?, Never>?, [UnsafeContinuation<Void, Never>]) in
            if state.failure == nil {
                state.failure = error
                state.endedInError = isError
            }
            state.ended = true
            let consumer = state.readyCount == 0 ? state.consumer : nil
            if consumer != nil { state.consumer = nil }
            let producers = state.producers.map(\.continuation)
            state.producers.removeAll()
            lock.broadcast()
            return (consumer, producers)
        }
        consumer?.resume(returning: nil)
        for producer in producers { producer.resume() }
    }

    private func wakeProducers() {
        let producers = lock.withLock { () -> [UnsafeContinuation<Void, Never>] in
            lock.broadcast()
            let waiting = state.producers.map(\.continuation)
            state.producers.removeAll()
            return waiting
        }
        for producer in producers { producer.resume() }
    }

    // MARK: The consumer

    /// The next output for the one consumer, or nil at the end (the session's failure is thrown
    /// there when it ended in error). Cancelling the consuming task invalidates the pipeline
    /// (nobody would take its outputs).
    func next() async throws(Failure) -> Output? {
        let output: Output? = await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Output?, Never>) in
                let next = lock.withLock { () -> Next in
                    if state.readyCount > 0 { return .output(state.takeReady()) }
                    if state.ended || Task.isCancelled || state.consumer != nil { return .end }
                    state.consumer = continuation
                    lock.broadcast()  // (a blocking producer sees a consumer came)
                    return .wait
                }
                switch next {
                case .output(let output): continuation.resume(returning: output)
                case .end: continuation.resume(returning: nil)
                case .wait: break
                }
            }
        } onCancel: {
            end(with: .invalidated)
        }
        wakeProducers()
        if output == nil, let failure = lock.withLock({ state.endedInError ? state.failure : nil }) { throw failure }
        return output
    }
}

/// The outputs of a session made without a handler, as an `AsyncSequence` for its one
/// consumer: ``DecompressionSession/frames`` and ``CompressionSession/frames``. The sequence
/// ends after the session finishes or is invalidated, and throws the error when the session
/// failed. Cancelling the consuming task invalidates the session, and so does letting go of
/// the sequence and its iterators (a `break` out of `for try await`, as `AsyncStream` ends
/// when its last iterator goes): nobody would take its outputs, so producers waiting on the
/// bound get an error, and `finish()` does not wait for ever to deliver what is left. Memory
/// is bounded: an output is let go here as soon as it is handed to the consumer.
public struct SessionOutputs<Element: Sendable>: AsyncSequence, Sendable {
    /// The session's error, thrown when the session failed.
    public typealias Failure = SessionError
    let pipeline: SessionPipeline<Element>
    private let consumer: OutputsConsumer

    init(pipeline: SessionPipeline<Element>) {
        self.pipeline = pipeline
        consumer = OutputsConsumer { [pipeline] in pipeline.end(with: .invalidated) }
    }

    /// Iterates the outputs.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let pipeline: SessionPipeline<Element>
        fileprivate let consumer: OutputsConsumer
        /// The next output, or nil at the end.
        public mutating func next() async throws(SessionError) -> Element? {
            defer { withExtendedLifetime(consumer) {} }  // (the consumer lives while it waits)
            return try await pipeline.next()
        }
        /// The next output, or nil at the end.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SessionError) -> Element? {
            defer { withExtendedLifetime(consumer) {} }
            return try await pipeline.next()
        }
    }

    /// An iterator over the session's outputs.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(pipeline: pipeline, consumer: consumer) }
}

/// The one consumer of a session's outputs, shared by the sequence and its iterators: when the
/// last of them goes, the session is invalidated.
private final class OutputsConsumer: Sendable {
    let gone: @Sendable () -> Void
    init(gone: @escaping @Sendable () -> Void) { self.gone = gone }
    deinit { gone() }
}
