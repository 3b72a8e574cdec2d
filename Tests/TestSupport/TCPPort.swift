import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Whether some process listens on TCP `port` on this host (from /proc/net/tcp and tcp6: a
/// socket in state 0A, LISTEN), to wait until a server under test is ready.
public func tcpPortIsListening(_ port: UInt16) -> Bool {
    let suffix = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4)
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        guard let file = fopen(table, "r") else { continue }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let fields = text.split(separator: " ")
            if fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "0A" { return true }
        }
    }
    return false
}

/// Ports a test may pick for a server: from 20000 up to below the kernel's ephemeral range
/// (`ip_local_port_range`, 32768 by default), where the outgoing connections of other tests
/// take their local ports: a port picked there could be taken by one between the pick and the
/// server's bind (CI saw a test's HTTP server fail to bind that way).
public let serverPortRange: ClosedRange<UInt16> = {
    let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
    let low = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { UInt16($0) } ?? 32_768
    return 20_000...max(21_000, low - 1)
}()

/// A TCP port that nothing listens on now (for a server a test starts), in ``serverPortRange``.
public func freeTCPPort() throws -> Int {
    for _ in 0..<100 {
        let port = UInt16.random(in: serverPortRange)
        if !tcpPortIsListening(port), !udpPortIsBound(port) { return Int(port) }
    }
    throw TestFailure("no free TCP port found")
}

/// Waits (up to `seconds`) until something listens on TCP `port`; whether it did.
public func waitUntilListening(_ port: Int, seconds: Double = 10) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if tcpPortIsListening(UInt16(port)) { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return tcpPortIsListening(UInt16(port))
}

/// Runs blocking work (a socket read, a child process) on a thread of its own rather than one
/// of Swift's cooperative pool, whose few threads (one a core) every async test shares: a test
/// that blocks one stalls the others.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// The test's bound on something that waits for another program (a browser, a peer): past
/// `seconds`, `body` is cancelled and the test fails with `what` instead of hanging the run.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public let description: String
}

/// Whether a caller of ``withDeadline(seconds:_:_:)`` has been answered (once, by the body or the clock).
private final class DeadlineAnswer: Sendable {
    private let given = Atomic<Bool>(false)
    func claim() -> Bool { given.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
}

/// Runs `body`, and throws ``DeadlineExceeded`` once `seconds` have passed without it ending:
/// `body` is then cancelled and *not waited for*. (A task group would wait for it, and a body
/// that does not answer cancellation, such as one blocked on a hung browser, then held the
/// test, and CI's run, until its time ran out.) Cancelling the caller cancels `body`.
public func withDeadline<T: Sendable>(seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let work = Task(executorPreference: TimelyExecutor.isCurrentThreadTimely ? TimelyExecutor.shared : nil) { try await body() }
    let answer = DeadlineAnswer()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let timer = Task(executorPreference: TimelyExecutor.shared) {
                try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                guard !Task.isCancelled, answer.claim() else { return }
                work.cancel()
                continuation.resume(throwing: DeadlineExceeded(description: "\(what): not done in \(seconds) s"))
            }
            Task(executorPreference: TimelyExecutor.shared) {
                let result = await work.result
                timer.cancel()
                guard answer.claim() else { return }
                continuation.resume(with: result)
            }
        }
    } onCancel: {
        work.cancel()
    }
}

/// A blocking TCP connection to 127.0.0.1:`port` (its descriptor), for tests that speak a
/// protocol by hand: `receiveBuffer` sets SO_RCVBUF (small, for a peer that reads slowly),
/// `receiveTimeout` bounds every read (seconds).
public func loopbackTCPConnection(port: Int, receiveBuffer: Int32? = nil, receiveTimeout: Int = 5) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
    if var size = receiveBuffer { setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
    var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard connected == 0 else {
        let failure = errno
        close(descriptor)
        throw TestFailure("connect to 127.0.0.1:\(port): errno \(failure)")
    }
    return descriptor
}

/// The port a server reports it bound (its `onListening`), for a test that waits for it.
public final class BoundPort: Sendable {
    private let port = LockedPort()

    public init() {}

    /// Called from the server's `onListening`.
    public func set(_ value: Int) { port.set(value) }

    /// The port once the server has bound it, or nil after `seconds`.
    public func value(within seconds: Double) async -> Int? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let value = port.get() { return value }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return port.get()
    }
}

private final class LockedPort: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int?

    func set(_ port: Int) { lock.lock(); value = port; lock.unlock() }
    func get() -> Int? { lock.lock(); defer { lock.unlock() }; return value }
}
