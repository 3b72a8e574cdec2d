import SystemIO

/// The bytes waiting between a socket's event loop and the task that takes them, against a
/// limit: the event loop takes from it for what it hands on (a datagram that does not fit is
/// dropped, as a full socket buffer drops it; a TCP reader waits until it fits, so the peer is
/// slowed), and the task gives back what it has taken off the queue.
final class ByteBudget: Sendable {
    let limit: Int
    private let queued = Locked(0)

    init(limit: Int) { self.limit = limit }

    /// Takes `count` bytes if they fit (a single item larger than the limit fits an empty queue).
    func take(_ count: Int) -> Bool {
        queued.withLock { queued in
            guard queued == 0 || queued + count <= limit else { return false }
            queued += count
            return true
        }
    }

    /// Gives back `count` bytes taken off the queue.
    func give(_ count: Int) {
        queued.withLock { $0 -= count }
    }
}
