import ArgumentParser
import SystemIO

/// SIGINT and SIGTERM for the whole tool, from its first instruction (a signal that came
/// before a command had set up its own handling used to end the process on the spot, its
/// output half written). A command hands its work's cancellation here; a signal cancels the
/// work, which then finishes its output or leaves nothing, as its job documents. With no work
/// registered (argument parsing, a command that does not run long), the signal ends the tool
/// at once with 130, as a shell reports a Ctrl-C.
final class Interruption: Sendable {
    static let shared = Interruption()

    private let state = Locked<(interrupted: Bool, next: Int, actions: [Int: @Sendable () -> Void])>((false, 0, [:]))
    private let signals: Locked<InterruptionSignals?> = Locked(nil)

    /// Takes SIGINT and SIGTERM from now on.
    func install() {
        signals.withLock { $0 = InterruptionSignals { [self] in interrupt() } }
    }

    /// Whether a signal has come.
    var interrupted: Bool { state.withLock { $0.interrupted } }

    /// Calls `action` at a signal (at once when one came already) until the returned token is
    /// given back with ``remove(_:)``.
    func onInterrupt(_ action: @escaping @Sendable () -> Void) -> Int {
        let (id, already) = state.withLock { state -> (Int, Bool) in
            state.next += 1
            state.actions[state.next] = action
            return (state.next, state.interrupted)
        }
        if already { action() }
        return id
    }

    /// Stops calling the action registered under `id`.
    func remove(_ id: Int) { state.withLock { _ = $0.actions.removeValue(forKey: id) } }

    private func interrupt() {
        let actions = state.withLock { state -> [@Sendable () -> Void] in
            state.interrupted = true
            return Array(state.actions.values)
        }
        guard !actions.isEmpty else {
            writeToStandardError("interrupted\n")
            exitProcess(130)
        }
        for action in actions { action() }
    }
}

/// A subcommand whose work stops early and cleanly at SIGINT or SIGTERM: the work runs in a
/// task the signals cancel; the library job it calls sees the cancellation between samples
/// and finishes its output with what it has (a decode, a mux) or leaves nothing (a transcode,
/// a join), as its documentation says. The tool then says so and exits 130 (128 + SIGINT, as
/// a shell reports a Ctrl-C), never dying of the signal.
protocol InterruptibleCommand: AsyncParsableCommand {
    /// The command's work, run in a task that SIGINT and SIGTERM cancel.
    func work() throws
}

extension InterruptibleCommand {
    mutating func run() async throws {
        nonisolated(unsafe) let command = self  // read, never written, by the one task
        try await runInterruptibly { try command.work() }
    }
}

/// Runs `work` in a task that SIGINT and SIGTERM cancel; when they did, says so and exits 130
/// once the work has ended (finishing or discarding its output, as the job documents). The
/// work may cancel its own task too (its standard output closed): that ends it the same way,
/// with its own error and exit status.
@discardableResult
func runInterruptibly<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
    let task = Task { try await work() }
    let token = Interruption.shared.onInterrupt { task.cancel() }
    defer { Interruption.shared.remove(token) }
    let result: Result<T, any Error>
    do { result = .success(try await task.value) } catch { result = .failure(error) }
    if Interruption.shared.interrupted {
        if case .failure(let error) = result, !(error is ExitCode) {
            printError("interrupted: \(error)")
        } else {
            printError("interrupted")
        }
        throw ExitCode(130)
    }
    return try result.get()
}

