import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium, started for one page and stopped with the test.
public final class HeadlessChromium: @unchecked Sendable {
    public let process: ChildProcess
    public let profile: String

    /// Opens `url` in a new headless Chromium with a profile of its own, and `arguments` (a
    /// test's own flags, such as the key hash of a certificate to trust).
    public init(url: String, arguments: [String] = []) throws {
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-chromium-\(UUID().uuidString)").path
        // As root, headless Chromium needs --no-sandbox; no GL flags (measured: WebCodecs decodes
        // in software here). Timing is real: no --virtual-time-budget.
        guard let chromium = which("chromium") else { throw TestFailure("chromium is not on the PATH") }
        process = try ChildProcess(chromium, [
            "--headless=new", "--no-sandbox", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
            "--user-data-dir=\(profile)", "--autoplay-policy=no-user-gesture-required",
        ] + arguments + [url])
    }

    /// Ends the browser and removes its profile, and the directory of its singleton socket
    /// (Chromium makes one in the temporary directory per browser and leaves it when killed).
    /// A browser that does not end within `grace` seconds of SIGTERM (hung, or frozen: a
    /// stopped process keeps SIGTERM pending) is killed, with every process under it: stopping
    /// never waits on the browser (CI once waited for one until its time ran out).
    public func stop(grace: Double = 5) {
        let processes = Self.descendants(of: process.pid)
        kill(process.pid, SIGTERM)
        if process.wait(seconds: grace) == nil {
            kill(process.pid, SIGKILL)
            _ = process.wait()
        }
        // Its renderer, GPU and network processes end with it; one frozen or hung does not.
        for pid in processes { kill(pid, SIGKILL) }
        Self.removeProfile(profile)
    }

    /// Every process under `pid` (a browser's renderer, GPU and network processes), from /proc.
    public static func descendants(of pid: Int32) -> [Int32] {
        var children: [pid_t: [pid_t]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let child = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, let parent = pid_t(fields[1]) { children[parent, default: []].append(child) }
        }
        var found: [pid_t] = [], queue = [pid]
        while let next = queue.popLast() {
            for child in children[next] ?? [] { found.append(child); queue.append(child) }
        }
        return found
    }

    /// Removes a Chromium profile and the socket directory its `SingletonSocket` link names.
    public static func removeProfile(_ profile: String) {
        let link = (profile as NSString).appendingPathComponent("SingletonSocket")
        if let socket = try? FileManager.default.destinationOfSymbolicLink(atPath: link) {
            let directory = (socket as NSString).deletingLastPathComponent
            if (directory as NSString).lastPathComponent.hasPrefix("org.chromium.") {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        try? FileManager.default.removeItem(atPath: profile)
    }
}
