import Dispatch
import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM turned into a call (cancelling a task, so that its output is finished
/// rather than cut off), until ``restore()`` takes the call back; with no call left, the
/// signals get their default action again.
///
/// A `sigaction` handler writes the signal's number to a pipe, whichever thread the kernel
/// gives the signal to, and a thread of its own reads the pipe and makes the calls. (A dispatch
/// signal source sets the signal to be ignored and watches a signalfd, which sees only a signal
/// that every thread blocks: when a thread that does not, an event loop's or a codec's, takes
/// it, the signal is ignored and lost; measured here: 4 SIGINTs in 8 lost by a live RTSP server.)
package final class InterruptionSignals: Sendable {
    private let ids: [Int]

    /// Calls `action` at each SIGINT or SIGTERM, until ``restore()``.
    package init(_ action: @escaping @Sendable () -> Void) {
        ids = [SignalDispatcher.shared.add(SIGINT, action), SignalDispatcher.shared.add(SIGTERM, action)]
    }

    /// Takes the call back; with no call left, the signals get their default action again.
    package func restore() {
        for id in ids { SignalDispatcher.shared.remove(id) }
    }
}

/// SIGHUP turned into a call (a server reading its certificate again, as nginx does), until
/// ``restore()``; with no call left, SIGHUP gets its default action again (the process ends).
package final class HangupSignal: Sendable {
    private let id: Int

    /// Calls `action` at each SIGHUP, until ``restore()``.
    package init(_ action: @escaping @Sendable () -> Void) {
        id = SignalDispatcher.shared.add(SIGHUP, action)
    }

    /// Takes the call back.
    package func restore() {
        SignalDispatcher.shared.remove(id)
    }
}

/// The process's one handler of the signals it turns into calls, and the calls it makes.
private final class SignalDispatcher: Sendable {
    static let shared = SignalDispatcher()

    /// The pipe's write end, for the signal handler (which can capture nothing).
    nonisolated(unsafe) static var writeEnd: Int32 = -1

    private let calls = Locked<(next: Int, bySignal: [Int32: [Int: @Sendable () -> Void]])>((0, [:]))
    private let readEnd: Int32

    private init() {
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        readEnd = ends[0]
        Self.writeEnd = ends[1]
        let readEnd = readEnd
        DispatchQueue.global().async { [self] in
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                let signal = Int32(byte)
                for call in calls.withLock({ Array(($0.bySignal[signal] ?? [:]).values) }) { call() }
            }
        }
    }

    func add(_ number: Int32, _ call: @escaping @Sendable () -> Void) -> Int {
        let (id, install) = calls.withLock { state -> (Int, Bool) in
            state.next += 1
            let first = state.bySignal[number]?.isEmpty ?? true
            state.bySignal[number, default: [:]][state.next] = call
            return (state.next, first)
        }
        if install {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(SignalDispatcher.writeEnd, &byte, 1)
            }
            action.sa_flags = SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
        }
        return id
    }

    func remove(_ id: Int) {
        let emptied = calls.withLock { state -> [Int32] in
            var emptied: [Int32] = []
            for (number, var calls) in state.bySignal where calls.removeValue(forKey: id) != nil {
                state.bySignal[number] = calls
                if calls.isEmpty { emptied.append(number) }
            }
            return emptied
        }
        for number in emptied { signal(number, SIG_DFL) }
    }
}

/// SIGPIPE ignored for the whole process: a write to a pipe whose reader has gone then fails
/// with `EPIPE` (`Errno.brokenPipe`), which the writer reports like any other failed write,
/// instead of the signal ending the process on the spot. What a tool that writes to pipes
/// does at start (as ffmpeg does); child processes get the default action back
/// (``ChildProcess/withSpawnAttributes(_:)``).
package func ignoreBrokenPipeSignal() {
    signal(SIGPIPE, SIG_IGN)
}

/// Whether `error` is a write to a pipe or socket whose reader has gone (`EPIPE`).
package func isBrokenPipe(_ error: SystemError) -> Bool { error.errno == .brokenPipe }

/// Ends the process now with `status` (`exit`: buffered standard output flushed, no
/// unwinding).
package func exitProcess(_ status: Int32) -> Never {
    exit(status)
}
