import MediaCore
import SystemIO

/// Sample buffers handed from producing tasks to one consumer, at most `limit` waiting: a
/// producer's `send` suspends while the channel is full (the consumer's pace holds the
/// producers back), the consumer's `next` while it is empty. `finish(throwing:)` ends it after
/// what waits; `close()` (the consumer went away) ends it at once and wakes every producer
/// with ``SessionError/cancelled``.
final class SampleChannel: Sendable {
    private struct State {
        var buffer: [SampleBuffer] = []
        var head = 0
        var consumer: CheckedContinuation<SampleBuffer?, any Error>?
        var producers: [CheckedContinuation<Void, any Error>] = []
        /// Set when the producers are done: nil for a clean end, or their error.
        var end: (any Error)??
        var closed = false

        var count: Int { buffer.count - head }

        mutating func take() -> SampleBuffer {
            let sample = buffer[head]
            head += 1
            if head > 32, head * 2 > buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return sample
        }
    }

    private let limit: Int
    private let state = Locked(State())

    init(limit: Int) { self.limit = max(1, limit) }

    /// Hands `sample` to the consumer, waiting while `limit` samples wait already.
    func send(_ sample: SampleBuffer) async throws {
        while true {
            try Task.checkCancellation()
            let sent: Bool = try state.withLock { state in
                if state.closed { throw SessionError.cancelled }
                if let consumer = state.consumer {
                    state.consumer = nil
                    consumer.resume(returning: sample)
                    return true
                }
                guard state.count < limit else { return false }
                state.buffer.append(sample)
                return true
            }
            if sent { return }
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow: (any Error)?? = state.withLock { state in
                    if state.closed { return .some(SessionError.cancelled) }
                    if state.count < limit { return .some(nil) }
                    state.producers.append(continuation)
                    return nil
                }
                if let resumeNow {
                    if let error = resumeNow { continuation.resume(throwing: error) } else { continuation.resume() }
                }
            }
        }
    }

    /// The next sample; nil after the end (or when the consumer's task is cancelled: the
    /// channel closes); the producers' error after what waited. One consumer at a time.
    func next() async throws -> SampleBuffer? {
        try await withTaskCancellationHandler {
            try await take()
        } onCancel: {
            close()
        }
    }

    private func take() async throws -> SampleBuffer? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SampleBuffer?, any Error>) in
            let (result, woken): (Result<SampleBuffer?, any Error>?, [CheckedContinuation<Void, any Error>]) = state.withLock { state in
                if state.count > 0 {
                    let sample = state.take()
                    let woken = state.producers
                    state.producers = []
                    return (.success(sample), woken)
                }
                if state.closed { return (.success(nil), []) }
                if let end = state.end {
                    state.closed = true  // (the end is told once)
                    return (end.map { .failure($0) } ?? .success(nil), [])
                }
                if let other = state.consumer {
                    // (Two consumers at once, a misuse: the first is ended rather than left waiting.)
                    other.resume(returning: nil)
                }
                state.consumer = continuation
                return (nil, [])
            }
            for producer in woken { producer.resume() }
            if let result { continuation.resume(with: result) }
        }
    }

    /// The producers are done (`error` nil) or failed: the consumer gets what waits, then the end.
    func finish(throwing error: (any Error)?) {
        let consumer: CheckedContinuation<SampleBuffer?, any Error>? = state.withLock { state in
            guard !state.closed, state.end == nil else { return nil }
            state.end = .some(error)
            guard let consumer = state.consumer else { return nil }
            state.consumer = nil
            state.closed = true
            return consumer
        }
        if let error { consumer?.resume(throwing: error) } else { consumer?.resume(returning: nil) }
    }

    /// The consumer went away: waiting producers get ``SessionError/cancelled``, nothing more is taken.
    func close() {
        let (producers, consumer) = state.withLock { state in
            state.closed = true
            state.buffer = []
            state.head = 0
            defer { state.producers = []; state.consumer = nil }
            return (state.producers, state.consumer)
        }
        for producer in producers { producer.resume(throwing: SessionError.cancelled) }
        consumer?.resume(returning: nil)
    }
}
