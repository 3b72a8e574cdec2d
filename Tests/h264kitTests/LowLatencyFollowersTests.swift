import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `h264kit stream … --low-latency` as its own process, followed by 300 clients at once
/// (scripts/llhls-followers.py: a blocking reload for the next part, then the part, for 15 s),
/// directly and through nginx as a caching proxy (scripts/nginx/llhls-cache.conf). The origin's
/// memory and CPU are read from /proc; its request count from its own once-a-second line.
// (Each test runs `.alone`: no other timely test beside it, the `.exclusive` ones included.)
@Suite("Low-Latency HLS followers", .requires(.ffmpeg, .python3), .serialized, .timely)
struct LowLatencyFollowersTests {
    static let followers = Checkout.root.appendingPathComponent("scripts/llhls-followers.py").path
    static let nginxTemplate = Checkout.root.appendingPathComponent("scripts/nginx/llhls-cache.conf").path
    static let nginxTLSTemplate = Checkout.root.appendingPathComponent("scripts/nginx/llhls-cache-https.conf").path

    /// The issue's source: 640x360 at 30 fps, an IDR picture every 2 s, 10 s (looped).
    static func makeSource(_ path: String) throws {
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "10", "-c:v", "libx264", "-preset", "veryfast",
                                      "-x264-params", "keyint=60:min-keyint=60:scenecut=0", "-bf", "2", "-pix_fmt", "yuv420p", path])
        try #require(made.status == 0, "\(made.stderrText)")
    }

    /// The origin process and what it says of itself.
    final class Origin: @unchecked Sendable {
        let process: ChildProcess
        let port: Int
        var media: String { "http://127.0.0.1:\(port)/live/index-video.m3u8" }

        init(source: String) async throws {
            port = try freeTCPPort()
            process = try ChildProcess(try h264kitURL(), ["stream", source, "http://127.0.0.1:\(port)/live/index.m3u8", "--loop", "--low-latency", "--verbose"])
            guard await waitUntilListening(port) else { throw TestFailure("the origin did not listen: \(process.stderrText)") }
            try await Task.sleep(for: .seconds(3))
        }

        /// User plus system CPU seconds so far.
        var cpuSeconds: Double {
            guard let stat = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return 0 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the name: state is field 3, utime 14 and stime 15 (1-based, of the whole line).
            let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
            return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        /// Peak resident memory, bytes.
        var peakRSS: Int {
            let status = (try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }

        /// The last once-a-second line: parts published and requests answered so far.
        var counts: (parts: Int, requests: Int) {
            guard let line = process.stderrText.split(separator: "\n").last(where: { $0.hasPrefix("segments ") }) else { return (0, 0) }
            func number(after word: String) -> Int {
                guard let range = line.range(of: word + " ") else { return 0 }
                return Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
            }
            return (number(after: "parts"), number(after: "requests"))
        }

        func stop() {
            kill(process.pid, SIGINT)
            _ = process.wait(seconds: 10)
        }
    }

    struct Report: Decodable {
        var errors: [String: Int]
        var parts_published: Int
        var parts_fetched_min: Int
        var worst_share: Double
        var latency_ms: [String: Double?]
        var requests: Int
    }

    static func follow(_ url: String, count: Int = 300, seconds: Int = 15, http2: Bool = false) throws -> Report {
        let result = try run("python3", [followers, url, "--followers", String(count), "--seconds", String(seconds)] + (http2 ? ["--http2"] : []))
        try #require(result.status == 0, "\(result.stderrText)")
        return try JSONDecoder().decode(Report.self, from: result.stdout)
    }

    @Test("300 followers on one origin for 15 s: no error, each gets at least half the parts, latency p95 under 1.5 s even on a loaded machine (the figure, p95 ≤ 500 ms, is the benchmark's: scripts/llhls-followers.py on a quiet machine), origin RSS ≤ 128 MB, CPU ≤ one core", .alone)
    func threeHundredFollowers() async throws {
        let source = StreamCommandTests.temporaryPath(".mp4")
        defer { try? FileManager.default.removeItem(atPath: source) }
        try Self.makeSource(source)
        let origin = try await Origin(source: source)
        defer { origin.stop() }
        let cpuBefore = origin.cpuSeconds, started = ContinuousClock.now
        let machineBefore = MachineCPU.now()
        let report = try Self.follow(origin.media)
        let idle = MachineCPU.now().idleFraction(since: machineBefore)
        let elapsed = ContinuousClock.now - started
        let cores = (origin.cpuSeconds - cpuBefore) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        #expect(report.errors.isEmpty, "\(report.errors)")
        // (A guard too: in CI of afd87b1, with the test process's threads shared among every
        // suite, the slowest of the 300 Python followers got 20 of 29 parts; an origin that
        // stops serving parts gives none.)
        let p95 = (report.latency_ms["p95"] ?? nil) ?? .infinity
        // (A guard, not the figure: CI runs this beside the rest of the suite on two cores,
        // where the Python followers themselves lag; it saw 937 ms there, 170 ms alone. A held
        // request that misses its part waits a whole target duration, 2 s: that fails. When the
        // machine had no idle CPU over the run, a miss is the machine's, and said as such.)
        let cause: String? = idle < 0.05 ? "the machine had \(Int(idle * 100))% of its CPU idle over the run (the rest of the suite beside it): the followers lagged" : nil
        expectations(unless: cause) {
            #expect(report.worst_share >= 0.5, "the worst follower got \(report.parts_fetched_min) of \(report.parts_published) parts")
            #expect(p95 <= 1500, "latency p95 \(p95) ms")
        }
        // Whatever the machine: an origin that stops serving parts gives none.
        #expect(report.worst_share >= 0.2, "the worst follower got \(report.parts_fetched_min) of \(report.parts_published) parts")
        #expect(origin.peakRSS <= 128 << 20, "origin peak RSS \(origin.peakRSS >> 20) MB")
        #expect(cores <= 1.0, "origin CPU \(cores) cores")
    }

    @Test("followers through nginx (a caching proxy, the CDN's edge): 300 plain, and 50 with TLS and HTTP/2 at the edge (each on one h2 connection): each served as directly, at most 3 origin requests per part",
          .requires(.nginx, .openssl), .alone, arguments: [false, true])
    func threeHundredFollowersThroughNginx(tls: Bool) async throws {
        let source = StreamCommandTests.temporaryPath(".mp4")
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-nginx-\(UUID().uuidString)").path
        defer {
            try? FileManager.default.removeItem(atPath: source)
            try? FileManager.default.removeItem(atPath: prefix)
        }
        try Self.makeSource(source)
        let origin = try await Origin(source: source)
        defer { origin.stop() }
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        let edge = try freeTCPPort()
        let certificate = try HTTPSOriginTests.certificate(in: prefix)
        let configuration = try String(contentsOfFile: tls ? Self.nginxTLSTemplate : Self.nginxTemplate, encoding: .utf8)
            .replacingOccurrences(of: "@PREFIX@", with: prefix).replacingOccurrences(of: "@LISTEN@", with: "127.0.0.1:\(edge)")
            .replacingOccurrences(of: "@ORIGIN@", with: "127.0.0.1:\(origin.port)")
            .replacingOccurrences(of: "@CERTIFICATE@", with: certificate.certificate).replacingOccurrences(of: "@KEY@", with: certificate.key)
        try configuration.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        let nginx = try ChildProcess(try #require(Tool.nginx.location), ["-p", prefix, "-c", prefix + "/nginx.conf", "-e", "stderr"])
        defer {
            kill(nginx.pid, SIGQUIT)
            _ = nginx.wait(seconds: 10)
        }
        try #require(await waitUntilListening(edge), "nginx did not listen: \(nginx.stderrText)")
        let before = origin.counts
        let machineBefore = MachineCPU.now()
        // (Over TLS, 50 followers: 300 Python h2 clients need the machine's spare core for their
        // own TLS and framing, and in CI here, beside the rest of the suite, got no part at all.)
        let report = try Self.follow("\(tls ? "https" : "http")://127.0.0.1:\(edge)/live/index-video.m3u8", count: tls ? 50 : 300, http2: tls)
        let idle = MachineCPU.now().idleFraction(since: machineBefore)
        try await Task.sleep(for: .milliseconds(1100))
        let after = origin.counts
        let parts = after.parts - before.parts, requests = after.requests - before.requests
        #expect(report.errors.isEmpty, "\(report.errors)")
        // nginx's cache lock wakes a waiting request every 500 ms to look for the answer, so a
        // follower waits up to 500 ms more behind it than at the origin (Benchmarks/llhls.sh
        // reports the figure: p95 about 475 ms); the bound allows that and no more, on a
        // machine with CPU to spare (with none, a miss is the machine's, and said as such).
        let p95 = (report.latency_ms["p95"] ?? nil) ?? .infinity
        expectations(unless: idle < 0.05 ? "the machine had \(Int(idle * 100))% of its CPU idle over the run (the rest of the suite beside it): the followers lagged" : nil) {
            #expect(report.worst_share >= 0.8, "the worst follower got \(report.parts_fetched_min) of \(report.parts_published) parts")
            // (Over TLS and HTTP/2 Python followers spend much CPU of their own on TLS and h2's
            // framing, measured: 300 took 12 s of CPU in 16; their own lag adds to the figure.)
            #expect(p95 <= (tls ? 800 : 600), "latency p95 \(p95) ms through nginx")
        }
        #expect(report.worst_share >= 0.2, "the worst follower got \(report.parts_fetched_min) of \(report.parts_published) parts")
        #expect(parts > 20 && Double(requests) / Double(parts) <= 3, "the origin answered \(requests) requests for \(parts) parts")
    }
}

/// `stream … http://` refuses option combinations that cannot work, before it listens.
@Suite("stream to an HTTP origin: options", .timely)
struct HTTPStreamOptionTests {
    @Test(arguments: [
        (["--low-latency", "--segment-format", "ts"], "--segment-format fmp4"),
        (["--low-latency", "--part-duration", "0.05"], "--part-duration 0.05"),
        (["--low-latency", "--part-duration", "3"], "up to the segment duration"),
        (["--part-duration", "0.5"], "--part-duration is for --low-latency"),
        (["--window", "2"], "--window 2"),
        (["--rendition", "pictures.y4m"], "--rendition pictures.y4m"),
        (["--cert", "cert.pem"], "--cert and --key go together"),
        (["--cert", "cert.pem", "--key", "key.pem"], "--cert and --key go with https:// and rtsps://"),
        (["--cert", "/nonexistent/cert.pem", "--key", "key.pem", "--cleartext-http2"], "--cert and --key go with https:// and rtsps://"),
    ])
    func refused(_ options: [String], _ message: String) throws {
        let source = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
        let result = try h264kit(["stream", source, "http://127.0.0.1:9/live/index.m3u8"] + options)
        #expect(result.status != 0 && result.stderr.contains(message), "\(result.status): \(result.stderr)")
    }
}
