import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// `h264kit sign`, and `stream … http:// --secret-file`: the origin answers the URL it prints and
/// the URLs `sign` makes, 403 to anything else; a bad secret file is a clear error at start.
@Suite("signed URLs from the command line", .requires(.python3), .timely)
struct SignCommandTests {
    static let source = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
    static let secret = "signed-URL test secret, 32 bytes"

    static func secretFile(_ contents: String) throws -> String {
        try Checkout.temporaryFile(Array(contents.utf8), suffix: ".key")
    }

    /// The status of GET `url` (0 when the connection failed).
    static func status(_ url: String) async -> Int {
        var request = URLRequest(url: URL(string: url)!)
        request.timeoutInterval = 10
        guard let (_, response) = try? await URLSession.shared.data(for: request) else { return 0 }
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    @Test("sign prints the URL with its token first in the path: the HMAC-SHA256 Python's hmac makes of the expiry and the folder")
    func signsWithTheSecret() throws {
        let file = try Self.secretFile(Data(Self.secret.utf8).base64EncodedString() + "\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let before = Int(Date().timeIntervalSince1970)
        let result = try h264kit(["sign", "http://example.test:8080/live/index.m3u8?x=1", "--secret-file", file, "--expires-in", "600"])
        #expect(result.status == 0, "\(result.stderr)")
        let printed = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let match = try #require(printed.firstMatch(of: /^http:\/\/example\.test:8080\/token\.(\d+)\.([0-9a-f]{64})\/live\/index\.m3u8\?x=1$/), "\(printed)")
        let expires = try #require(Int(match.1))
        #expect((before + 600...before + 605).contains(expires))
        let script = "import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), ('h264kit-url-v1\\n' + sys.argv[2] + '\\n/live/').encode(), hashlib.sha256).hexdigest())"
        let python = try run("python3", ["-c", script, Self.secret, String(expires)])
        #expect(String(match.2) == python.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        // An RTSP URL is scoped to its path; a scope that does not hold the path is refused.
        let rtsp = try h264kit(["sign", "rtsp://127.0.0.1:8554/cam", "--secret-file", file])
        #expect(rtsp.status == 0 && rtsp.stdout.hasPrefix("rtsp://127.0.0.1:8554/token.") && rtsp.stdout.contains("/cam"), "\(rtsp)")
        let outside = try h264kit(["sign", "http://h/live/index.m3u8", "--secret-file", file, "--scope", "/other/"])
        #expect(outside.status != 0 && outside.stderr.contains("scope /other/"), "\(outside)")
    }

    @Test("a short, missing or oversized secret file is an error naming the file; --secret-file is refused where it does nothing")
    func badSecretFiles() throws {
        let short = try Self.secretFile("too short")
        defer { try? FileManager.default.removeItem(atPath: short) }
        let huge = try Checkout.temporaryFile([UInt8](repeating: 0x41, count: 70_000), suffix: ".key")
        defer { try? FileManager.default.removeItem(atPath: huge) }
        for (file, words) in [(short, "a secret of 9 bytes: at least 16"), ("/nonexistent/h264kit.key", "could not be read"), (huge, "more than 65536 bytes")] {
            let result = try h264kit(["sign", "http://h/live/index.m3u8", "--secret-file", file])
            #expect(result.status != 0 && result.stderr.contains(file) && result.stderr.contains(words), "\(result)")
            let stream = try h264kit(["stream", Self.source, "http://127.0.0.1:9/live/index.m3u8", "--secret-file", file])
            #expect(stream.status != 0 && stream.stderr.contains(file), "\(stream)")
            #expect(!stream.stderr.contains("too short"), "the secret's bytes are never printed")
        }
        let rtp = try h264kit(["stream", Self.source, "rtp://127.0.0.1:9", "--secret-file", short])
        #expect(rtp.status != 0 && rtp.stderr.contains("--secret-file is for an HTTP origin or an RTSP server"), "\(rtp)")
    }

    @Test("an RTSP server with --secret-file: FFmpeg plays the signed URL it prints (TCP and UDP), an unsigned URL gets 403", .requires(.ffmpeg))
    func rtspServesSignedURLs() async throws {
        let file = try Self.secretFile(Self.secret)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let port = try freeTCPPort()
        let plain = "rtsp://127.0.0.1:\(port)/cam"
        let server = try ChildProcess(try h264kitURL(), ["stream", Self.source, plain, "--loop", "--secret-file", file])
        defer { kill(server.pid, SIGKILL); _ = server.wait(seconds: 10) }
        var printed: String?
        let deadline = ContinuousClock.now + .seconds(60)
        while printed == nil, ContinuousClock.now < deadline {
            printed = server.stderrText.firstMatch(of: /serving (rtsp:\/\/\S+\/token\.\S+\/cam) \(signed/).map { String($0.1) }
            try await Task.sleep(for: .milliseconds(100))
        }
        let signed = try #require(printed, "\(server.stderrText)")
        let piece = try ffmpegFrameHashes(Self.source, format: "h264")
        for transport in ["tcp", "udp"] {
            let played = try run("ffmpeg", ["-v", "error", "-rtsp_transport", transport, "-i", signed, "-frames:v", "30", "-f", "framemd5", "-"])
            let frames = framemd5Hashes(played.stdoutText)
            #expect(played.status == 0 && frames.count == 30 && piece.contains(frames.first ?? ""), "\(transport): \(played.stderrText)")
        }
        let refused = try run("ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", plain, "-frames:v", "1", "-f", "null", "-"])
        #expect(refused.status != 0 && refused.stderrText.contains("403"), "\(refused.stderrText)")
    }

    @Test("stream --secret-file serves the signed URL it prints and those sign makes; anything else 403")
    func streamServesSignedURLs() async throws {
        let file = try Self.secretFile(Self.secret)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let port = try freeTCPPort()
        let plain = "http://127.0.0.1:\(port)/live/index.m3u8"
        let server = try ChildProcess(try h264kitURL(), ["stream", Self.source, plain, "--loop", "--secret-file", file, "--expires-in", "120"])
        defer { kill(server.pid, SIGKILL); _ = server.wait(seconds: 10) }
        var printed: String?
        let deadline = ContinuousClock.now + .seconds(60)
        while printed == nil, ContinuousClock.now < deadline {
            printed = server.stderrText.firstMatch(of: /serving (http:\/\/\S+\/token\.\S+) \(signed, good for 120 s\)/).map { String($0.1) }
            try await Task.sleep(for: .milliseconds(100))
        }
        let signed = try #require(printed, "\(server.stderrText)")
        #expect(signed.hasSuffix("/live/index.m3u8"))
        var served = 0
        while served != 200, ContinuousClock.now < deadline {
            served = await Self.status(signed)
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(served == 200)
        #expect(await Self.status(signed.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8")) == 200)
        let made = try h264kit(["sign", plain, "--secret-file", file, "--expires-in", "30"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(await Self.status(made) == 200, "\(made)")
        #expect(await Self.status(plain) == 403)
        let other = try Self.secretFile("another secret, not the server's")
        defer { try? FileManager.default.removeItem(atPath: other) }
        let foreign = try h264kit(["sign", plain, "--secret-file", other]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(await Self.status(foreign) == 403)
        #expect(!server.stderrText.contains(Self.secret))
    }
}
