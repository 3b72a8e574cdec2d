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
    public func stop() {
        kill(process.pid, SIGTERM)
        _ = process.wait()
        Self.removeProfile(profile)
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
