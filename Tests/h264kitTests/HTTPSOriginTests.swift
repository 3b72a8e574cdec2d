import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `stream … https://` as a separate process (its peak RSS read from /proc): hostile HTTP/2
/// peers, and a renewed certificate on SIGHUP.
@Suite("an HTTPS origin: hostile HTTP/2 peers, a certificate renewed on SIGHUP", .requires(.openssl, .curl, .python3), .serialized, .timely)
struct HTTPSOriginTests {
    static let source = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
    static let hostile = Checkout.root.appendingPathComponent("scripts/h2-hostile.py").path

    /// A self-signed certificate for 127.0.0.1 and its key in `directory` (`name`.pem, `name`-key.pem).
    static func certificate(in directory: String, name: String = "cert") throws -> (certificate: String, key: String) {
        let made = try SelfSignedCertificate(in: directory, name: name)
        return (made.certificate, made.privateKey)
    }

    /// `h264kit stream` of the sample, looped, low latency, over TLS on a free port; its URL once it listens.
    static func origin(certificate: String, key: String) async throws -> (ChildProcess, String) {
        let port = try freeTCPPort()
        let url = "https://127.0.0.1:\(port)/live/index.m3u8"
        let origin = try ChildProcess(try h264kitURL(), ["stream", source, url, "--loop", "--low-latency", "--cert", certificate, "--key", key])
        guard await waitUntilListening(port, seconds: 60) else { throw TestFailure("the origin did not listen: \(origin.stderrText)") }
        return (origin, url)
    }

    /// The time curl takes to get `url` by HTTP/2, or nil when it failed.
    static func playerTime(_ url: String) throws -> Double? {
        let result = try run("curl", ["-sk", "--http2", "--fail", "--max-time", "5", "-o", "/dev/null", "-w", "%{time_total}", url])
        return result.status == 0 ? Double(result.stdoutText) : nil
    }

    static func peakRSSMegabytes(_ pid: pid_t) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kilobytes / 1024
    }

    @Test("rapid reset, a SETTINGS flood, an endless CONTINUATION, 1 MB of HEADERS, 10,000 unread streams, a zero window, 200 half handshakes, 1,000 idle TLS connections: each connection answered or closed, a player served within 2 s after each, peak RSS <= 128 MB",
          .alone)
    func hostilePeers() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-https-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (certificate, key) = try Self.certificate(in: work)
        let (origin, url) = try await Self.origin(certificate: certificate, key: key)
        defer { kill(origin.pid, SIGKILL); _ = origin.wait(seconds: 10) }
        let media = url.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8")
        let deadline = ContinuousClock.now + .seconds(30)
        while try Self.playerTime(media) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
        #expect(try Self.playerTime(media) != nil, "the media playlist was not published")
        // What the server must do with each connection: close it (a GOAWAY first or not), or,
        // for peers that only ask and never read, keep it within flow control's bounds.
        let attacks: [(name: String, seconds: Int, closes: Bool)] = [
            ("rapid-reset", 4, true), ("settings-flood", 4, true), ("continuation-flood", 4, true), ("huge-headers", 4, true),
            ("unread-streams", 4, false), ("zero-window", 4, false), ("stalled-handshake", 20, true), ("idle-tls", 4, false),
        ]
        for attack in attacks {
            let result = try run("python3", [Self.hostile, media, "--attack", attack.name, "--seconds", String(attack.seconds)])
            #expect(result.status == 0, "\(attack.name): \(result.stderrText)")
            let report = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
            let endings = report?["endings"] as? [String: Int] ?? [:]
            if attack.closes {
                #expect(!endings.isEmpty && endings["open"] == nil, "\(attack.name): \(result.stdoutText)")
            }
            let time = try Self.playerTime(media)
            #expect(time.map { $0 < 2 } == true, "after \(attack.name) a player waited \(String(describing: time)) s")
            let rss = Self.peakRSSMegabytes(origin.pid) ?? .infinity
            #expect(rss <= 128, "after \(attack.name): peak RSS \(rss) MB")
            print("h2 hostile \(attack.name): \(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)); player \(time ?? -1) s; origin peak RSS \(rss) MB")
        }
        #expect(!origin.stderrText.contains("handshake"), "handshake failures are counted, not logged one by one: \(origin.stderrText.suffix(500))")
    }

    @Test("SIGHUP: connections made after it get the renewed certificate, one open before it keeps working; a broken key file leaves the certificate in use")
    func certificateRenewedOnHangup() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-https-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (certificate, key) = try Self.certificate(in: work)
        let renewed = try Self.certificate(in: work, name: "renewed")
        let (origin, url) = try await Self.origin(certificate: certificate, key: key)
        defer { kill(origin.pid, SIGKILL); _ = origin.wait(seconds: 10) }
        let port = url.split(separator: ":")[2].split(separator: "/")[0]
        let fingerprint = "import ssl, hashlib, sys; print(hashlib.sha256(ssl.PEM_cert_to_DER_cert(open(sys.argv[1]).read())).hexdigest())"
        let first = try run("python3", ["-c", fingerprint, certificate]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let second = try run("python3", ["-c", fingerprint, renewed.certificate]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        // A connection's certificate, and (with a wait) a request on it later.
        let client = """
            import ssl, socket, hashlib, sys, time
            context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE
            s = context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10), server_hostname="127.0.0.1")
            print(hashlib.sha256(s.getpeercert(True)).hexdigest(), flush=True)
            time.sleep(float(sys.argv[2]))
            s.sendall(b"GET /live/index.m3u8 HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
            print(s.recv(12).decode(), flush=True)
            """
        let python = try #require(which("python3")).path
        FileManager.default.createFile(atPath: work + "/held.txt", contents: nil)
        let held = try ChildProcess(URL(fileURLWithPath: python), ["-c", client, String(port), "6"], stdout: work + "/held.txt")
        try await Task.sleep(for: .seconds(2))
        // Renewed files in place (as certbot writes them), then SIGHUP.
        try FileManager.default.removeItem(atPath: certificate)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: renewed.certificate, toPath: certificate)
        try FileManager.default.copyItem(atPath: renewed.key, toPath: key)
        kill(origin.pid, SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        let after = try run("python3", ["-c", client, String(port), "0"])
        #expect(after.stdoutText.hasPrefix(second + "\n"), "a new connection: \(after.stdoutText)")
        #expect(held.wait(seconds: 30) == 0)
        let heldOutput = try String(contentsOfFile: work + "/held.txt", encoding: .utf8)
        #expect(heldOutput == first + "\nHTTP/1.1 200\n", "the connection open across the reload: \(heldOutput)")
        #expect(origin.stderrText.contains("reloaded \(certificate)"), "\(origin.stderrText)")
        // A key that is not the certificate's: said, and the renewed certificate stays.
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: work + "/renewed.pem", toPath: key)
        kill(origin.pid, SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        #expect(origin.stderrText.contains("warning: the certificate in use stays"), "\(origin.stderrText)")
        let still = try run("python3", ["-c", client, String(port), "0"])
        #expect(still.stdoutText == second + "\nHTTP/1.1 200\n", "\(still.stdoutText)")
    }
}
