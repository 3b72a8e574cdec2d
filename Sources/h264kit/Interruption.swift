import ArgumentParser
import SystemIO

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
    let interrupted = Locked(false)
    let stop = InterruptionSignals {
        interrupted.withLock { $0 = true }
        task.cancel()
    }
    defer { stop.restore() }
    let result: Result<T, any Error>
    do { result = .success(try await task.value) } catch { result = .failure(error) }
    if interrupted.withLock({ $0 }) {
        if case .failure(let error) = result, !(error is ExitCode) {
            printError("interrupted: \(error)")
        } else {
            printError("interrupted")
        }
        throw ExitCode(130)
    }
    return try result.get()
}
