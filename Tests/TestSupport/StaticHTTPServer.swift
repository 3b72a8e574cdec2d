import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A directory served over HTTP on loopback by Python's `http.server` (another implementation
/// than ours, for what a package looks like to any web server), with its request log: a page
/// reports to the test by fetching `/report?...`, which the log records (404 and all).
public final class StaticHTTPServer: @unchecked Sendable {
    public let port: Int
    public let process: ChildProcess

    /// Serves `directory` on 127.0.0.1.
    /// A port taken between the pick and python's bind is tried again, with another.
    public init(directory: String) async throws {
        guard let python = which("python3") else { throw TestFailure("python3 is not on the PATH") }
        var failures: [String] = []
        for _ in 0..<3 {
            let port = try freeTCPPort()
            let process = try ChildProcess(python, ["-u", "-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", directory])
            if await waitUntilListening(port) {
                self.port = port
                self.process = process
                return
            }
            kill(process.pid, SIGKILL)
            _ = process.wait()
            failures.append("port \(port): \(process.stderrText)")
        }
        throw TestFailure("python3 -m http.server did not listen: \(failures)")
    }

    /// The server's address, `http://127.0.0.1:PORT/`.
    public var url: String { "http://127.0.0.1:\(port)/" }

    /// The paths requested so far, in order.
    public var requests: [String] {
        process.stderrText.split(separator: "\n").compactMap { line in
            guard let start = line.range(of: "\"GET ")?.upperBound, let end = line[start...].range(of: " HTTP/")?.lowerBound else { return nil }
            return String(line[start..<end])
        }
    }

    /// Waits (up to `seconds`) for a request whose path starts with `prefix`; the path, or nil.
    public func waitForRequest(startingWith prefix: String, seconds: Double) async -> String? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let found = requests.first(where: { $0.hasPrefix(prefix) }) { return found }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// Stops the server.
    public func stop() {
        kill(process.pid, SIGTERM)
        _ = process.wait()
    }
}
