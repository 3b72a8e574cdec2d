import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `h264kit preview` as a user runs it: a process printing its URL, headless Chromium opening
/// it, the report and captures written, the exit status.
@Suite("h264kit preview", .requires(.chromium, .ffmpeg), .serialized, .timely, .exclusive)
struct PreviewCommandTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    /// Starts `h264kit preview ARGUMENTS`, waits for the URL on its first line of output and
    /// opens it in headless Chromium; returns once the preview has ended.
    static func preview(_ arguments: [String], seconds: Double = 90, chromiumArguments: [String] = []) async throws -> (status: Int32, url: String, stderr: String) {
        let output = StreamCommandTests.temporaryPath(".txt"), profile = StreamCommandTests.temporaryPath("-chromium")
        defer {
            try? FileManager.default.removeItem(atPath: output)
            HeadlessChromium.removeProfile(profile)
        }
        try #require(FileManager.default.createFile(atPath: output, contents: nil), "creating \(output) for the preview's output")
        let preview = try ChildProcess(try h264kitURL(), ["preview"] + arguments + ["--port", "0"], stdout: output)
        var url: String?
        for _ in 0..<2000 where url == nil {
            url = (try? readFile(output)).flatMap { String(decoding: $0, as: UTF8.self).split(separator: "\n").first.map(String.init) }
            if url == nil { try await Task.sleep(for: .milliseconds(5)) }
        }
        let address = try #require(url, "no URL printed: \(preview.stderrText)")
        let browser = try ChildProcess(try #require(which("chromium")), [
            "--headless=new", "--no-sandbox", "--no-first-run", "--disable-extensions", "--user-data-dir=\(profile)",
            "--autoplay-policy=no-user-gesture-required",
        ] + chromiumArguments + [address])
        defer {
            kill(browser.pid, SIGTERM)
            browser.wait()
        }
        let status = try await withDeadline(seconds: seconds, "h264kit preview to end") { try await offThePool { preview.wait() } }
        return (status, address, preview.stderrText)
    }

    @Test("preview FILE --exit-after-playback --report --capture: the URL first on stdout (loopback), every frame decoded and presented (or dropped as late under load), the report's fields, PNGs of the frames asked for, exit 0")
    func fileToTheEnd() async throws {
        let report = StreamCommandTests.temporaryPath(".json"), captures = StreamCommandTests.temporaryPath("-captures")
        defer { for path in [report, captures] { try? FileManager.default.removeItem(atPath: path) } }
        let result = try await Self.preview([Self.source, "--exit-after-playback", "--report", report, "--capture", "0,45,89", "--capture-dir", captures])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.url.hasPrefix("http://127.0.0.1:"))
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        for key in ["framesReceived", "framesDecoded", "framesPresented", "framesDropped", "decodeErrors", "latenessMs", "codec", "width", "height", "userAgent"] {
            #expect(fields[key] != nil, "the report lacks \(key)")
        }
        // Every frame decoded, and each one either presented or dropped as late (the page drops a
        // frame whose time has passed: under the whole suite's load a few are); frames asked for
        // are drawn late rather than dropped, so the captures below exist either way.
        let presented = fields["framesPresented"] as? Int ?? -1, dropped = fields["framesDropped"] as? Int ?? -1
        #expect(fields["framesDecoded"] as? Int == 90 && presented + dropped == 90 && presented >= 45, "\(fields)")
        #expect(fields["decodeErrors"] as? Int == 0 && fields["width"] as? Int == 320 && fields["height"] as? Int == 240, "\(fields)")
        for number in [0, 45, 89] {
            let png = try Data(contentsOf: URL(fileURLWithPath: "\(captures)/frame-\(number).png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "frame-\(number).png is not a PNG")
            let size = try run("ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", "\(captures)/frame-\(number).png"])
            #expect(size.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "320,240")
        }
    }

    @Test("preview --https --cert --key --secret-file: the URL printed is https:// and signed; Chromium (the certificate trusted) plays the file to its end by it, exit 0",
          .requires(.openssl))
    func overHTTPSBySignedURL() async throws {
        let work = StreamCommandTests.temporaryPath("-preview-tls")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let certificate = try SelfSignedCertificate(in: work)
        try Data("the preview command's secret, 32".utf8).write(to: URL(fileURLWithPath: work + "/secret"))
        let report = work + "/report.json"
        let result = try await Self.preview([Self.source, "--exit-after-playback", "--report", report, "--https", "--cert", certificate.certificate,
                                             "--key", certificate.privateKey, "--secret-file", work + "/secret"],
                                            chromiumArguments: [try certificate.chromiumTrust()])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.url.hasPrefix("https://127.0.0.1:") && result.url.contains("/token."), "\(result.url)")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect(fields["framesDecoded"] as? Int == 90 && fields["decodeErrors"] as? Int == 0, "\(fields)")
    }

    @Test("preview of a stream no frame of which decodes: exit 1, the browser's reason on stderr and in the report")
    func undecodable() async throws {
        let report = StreamCommandTests.temporaryPath(".json")
        defer { try? FileManager.default.removeItem(atPath: report) }
        let result = try await Self.preview([Checkout.root.path + "/Tests/Fixtures/jcodec-fmo-explicit.264", "--exit-after-playback", "--report", report])
        #expect(result.status == 1 && result.stderr.contains("the page could not play it: No frame could be decoded"), "\(result.stderr)")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        #expect((fields["error"] as? String)?.contains("No frame could be decoded") == true, "\(fields)")
    }

    @Test("what preview refuses before it starts: each with a message and exit 64, or 1 for a file it cannot read",
          arguments: [
              (["--rate", "8"], "--rate 8"), (["--capture", "1"], "--capture needs --capture-dir"),
              (["--port", "70000"], "--port 70000"), (["--start=-1"], "--start -1"),
              (["--https"], "--https and --cert/--key go together"), (["--cacert", "x.pem", "--insecure"], "--cacert or --insecure"),
          ])
    func refusals(_ extra: [String], _ message: String) throws {
        let result = try h264kitProcess(["preview", Self.source] + extra)
        #expect(result.status == 64 && result.stderrText.contains(message), "\(result.stderrText)")
    }

    @Test("a live source takes no --loop, --start or --capture; a missing file is named")
    func liveAndMissing() throws {
        let live = try h264kitProcess(["preview", "rtp://@:5004", "--loop"])
        #expect(live.status == 64 && live.stderrText.contains("--loop and --start are for a file"), "\(live.stderrText)")
        let missing = try h264kitProcess(["preview", "/nonexistent/clip.mp4", "--port", "0"])
        #expect(missing.status == 1 && missing.stderrText.contains("/nonexistent/clip.mp4"), "\(missing.stderrText)")
    }
}
