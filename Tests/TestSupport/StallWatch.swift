import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The longest this process went without being scheduled while a test ran: a thread of its own
/// sleeps 10 ms at a time and notes how late it woke. On this 2-core machine the whole suite
/// (the corpus in Chromium, hundreds of pages and clients) can starve a process for seconds; a
/// real-time test that lost frames then says so from this measure, not from a guess.
public final class StallWatch: @unchecked Sendable {  // the lock guards the two fields
    private let lock = NSLock()
    private var longest: Duration = .zero
    private var running = true

    /// Starts watching.
    public init() {
        Thread.detachNewThread { [self] in
            let clock = ContinuousClock()
            while lock.withLock({ running }) {
                let before = clock.now
                usleep(10_000)
                let late = clock.now - before - .milliseconds(10)
                lock.withLock { longest = max(longest, late) }
            }
        }
    }

    /// Stops watching; the longest stall seen.
    public func stop() -> Duration {
        lock.withLock {
            running = false
            return longest
        }
    }
}

/// Datagrams the kernel dropped on a local UDP port while a peer ran (the `drops` column of
/// /proc/net/udp and udp6: its receive buffer was full because the peer did not read in
/// time), sampled every 20 ms until ``stop()`` (the count goes with the socket when it closes).
public final class UDPDropWatch: @unchecked Sendable {  // the lock guards the two fields
    private let lock = NSLock()
    private var drops = 0
    private var running = true

    /// Starts watching `port`.
    public init(port: Int) {
        let suffix = ":" + String(port, radix: 16, uppercase: true).leftPadded(to: 4)
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                var seen = 0
                for table in ["/proc/net/udp", "/proc/net/udp6"] {
                    let text = String(decoding: (try? readFile(table)) ?? Data(), as: UTF8.self)
                    for line in text.split(separator: "\n").dropFirst() {
                        let fields = line.split(separator: " ")
                        if fields.count > 12, fields[1].hasSuffix(suffix), let count = Int(fields[fields.count - 1]) { seen += count }
                    }
                }
                lock.withLock { drops = max(drops, seen) }
                usleep(20_000)
            }
        }
    }

    /// Stops watching; the most drops seen on the port.
    public func stop() -> Int {
        lock.withLock {
            running = false
            return drops
        }
    }
}

/// Checks `body`'s expectations; when `cause` names something the machine did to the test (it
/// starved the process, the kernel dropped the peer's datagrams), a failure among them is
/// recorded as a known issue that says so, not hidden and not a failure.
public func expectations(unless cause: String?, _ body: () throws -> Void) rethrows {
    if let cause {
        withKnownIssue(Comment(rawValue: cause), isIntermittent: true) { try body() }
    } else {
        try body()
    }
}

/// The machine's CPU times (the first line of /proc/stat, in clock ticks): how busy the
/// machine was between two readings, whoever kept it busy.
public struct MachineCPU: Sendable {
    /// Ticks spent idle (idle and waiting for I/O), and in all.
    public var idle: UInt64, total: UInt64

    /// The times now (zero when /proc/stat cannot be read).
    public static func now() -> MachineCPU {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return MachineCPU(idle: 0, total: 0) }
        let ticks = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard ticks.count >= 5 else { return MachineCPU(idle: 0, total: 0) }
        return MachineCPU(idle: ticks[3] + ticks[4], total: ticks.prefix(8).reduce(0, +))
    }

    /// The share of the CPU left idle since `earlier` (1 when no time passed or it cannot tell).
    public func idleFraction(since earlier: MachineCPU) -> Double {
        guard total > earlier.total, idle >= earlier.idle else { return 1 }
        return Double(idle - earlier.idle) / Double(total - earlier.total)
    }
}
