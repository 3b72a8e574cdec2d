import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import H264Network
import H264Streaming
import MediaCore
import SampleFlow
import SystemIO
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The live origin: a file looped as if live, served to FFmpeg, GStreamer and Chromium at once
/// for a minute, the playlists read every 50 ms (never a segment that is not whole, the media
/// sequence rising), and hostile HTTP beside a client that must stay served.
@Suite("HLS live origin", .requires(.ffmpeg, .ffprobe), .serialized, .timely, .exclusive)
struct HLSOriginTests {
    static let source = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    /// An origin of the sample stream looped, on a port of its own; stopped with the task.
    final class Running: @unchecked Sendable {
        let origin: HLSOrigin
        let url: String
        private let tasks: [Task<Void, any Error>]

        init(format: MediaSegmenter.Format = .fragmentedMP4, segmentDuration: Double = 2, window: Int = 6, source: String = HLSOriginTests.source,
             lowLatency: HLSOrigin.LowLatency? = nil, accessKey: URLSigningKey? = nil, transport: HTTPTransport = .cleartext) async throws {
            let port = try freeTCPPort()
            var options = HLSOrigin.Options(port: port, segmenter: .init(format: format, segmentDuration: MediaTime(seconds: segmentDuration, preferredTimescale: 90_000)),
                                            windowSize: window, servesDASH: format == .fragmentedMP4, lowLatency: lowLatency)
            options.accessKey = accessKey
            options.transport = transport
            origin = try HLSOrigin(options: options)
            let origin = self.origin
            tasks = [
                Task(executorPreference: TimelyExecutor.shared) { try await origin.run() },
                Task(executorPreference: TimelyExecutor.shared) { try await origin.publish(MediaFileSamples(path: source, loops: true), paced: true) },
            ]
            url = origin.url(port: port)
            guard await waitUntilListening(port) else { throw TestFailure("the origin did not listen on \(port)") }
        }

        /// Waits until the playlist lists `segments` segments.
        func waitForSegments(_ segments: Int, seconds: Double = 30) async throws {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline {
                if origin.statistics.segmentsPublished >= segments { return }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw TestFailure("\(segments) segments were not published in \(seconds) s")
        }

        func stop() { for task in tasks { task.cancel() } }
    }

    /// GET `url`: the status and the body (a status of 0 when the connection failed).
    static func get(_ url: String, headers: [String: String] = [:]) async -> (status: Int, body: Data, headers: [String: String]) {
        var request = URLRequest(url: URL(string: url)!)
        request.timeoutInterval = 5
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        guard let (data, response) = try? await URLSession.shared.data(for: request), let http = response as? HTTPURLResponse else { return (0, Data(), [:]) }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields { fields[String(describing: name).lowercased()] = String(describing: value) }
        return (http.statusCode, data, fields)
    }

    /// The top-level boxes of a fragmented MP4 segment, or nil when their sizes do not add up
    /// to the bytes exactly (a segment served before it was whole).
    static func boxes(_ data: Data) -> [String]? {
        var offset = 0
        var types: [String] = []
        let bytes = [UInt8](data)
        while offset + 8 <= bytes.count {
            let size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard size >= 8, offset + size <= bytes.count else { return nil }
            types.append(String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self))
            offset += size
        }
        return offset == bytes.count ? types : nil
    }

    @Test(arguments: [MediaSegmenter.Format.fragmentedMP4, .transportStream])
    func thePlaylistNeverListsASegmentThatIsNotWhole(format: MediaSegmenter.Format) async throws {
        let running = try await Running(format: format, segmentDuration: 1, window: 4)
        defer { running.stop() }
        try await running.waitForSegments(1)
        let mediaURL = running.url.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8")
        var sequences: [Int] = []
        var checked = Set<String>()
        let deadline = ContinuousClock.now + .seconds(8)
        while ContinuousClock.now < deadline {
            let (status, body, headers) = await Self.get(mediaURL)
            #expect(status == 200 && headers["content-type"] == "application/vnd.apple.mpegurl")
            let playlist = HLSChecker.media(String(decoding: body, as: UTF8.self))
            #expect(playlist.problems.isEmpty, "\(playlist.problems)")
            #expect(!playlist.endList && playlist.playlistType == nil && playlist.entries.allSatisfy { $0.programDateTime != nil })
            sequences.append(playlist.mediaSequence)
            // Every segment listed is whole the moment it is listed.
            for entry in playlist.entries where !checked.contains(entry.uri) {
                let segment = await Self.get(mediaURL.replacingOccurrences(of: "index-video.m3u8", with: entry.uri))
                #expect(segment.status == 200, "\(entry.uri): \(segment.status)")
                if format == .fragmentedMP4 {
                    let types = Self.boxes(segment.body)
                    #expect(types?.first == "styp" && types?.contains("mdat") == true, "\(entry.uri): boxes \(String(describing: types))")
                } else {
                    #expect(segment.body.count % 188 == 0 && segment.body.first == 0x47, "\(entry.uri): \(segment.body.count) bytes")
                }
                checked.insert(entry.uri)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 <= $1 } && (sequences.last ?? 0) > (sequences.first ?? 0), "media sequence \(sequences.first ?? -1) to \(sequences.last ?? -1)")
        #expect(running.origin.statistics.segmentsDropped > 0, "segments that left the window were dropped from memory")
    }

    @Test(.requires(.gstLaunch, .chromium))
    func ffmpegGStreamerAndChromiumPullAMinuteWithoutAGap() async throws {
        let running = try await Running()
        defer { running.stop() }
        try await running.waitForSegments(3)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-live-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        // A page for Chromium's own player, served by the origin's neighbour (a static server
        // would need CORS; the origin sends it).
        try Self.livePage(running.url).write(toFile: work + "/live.html", atomically: true, encoding: .utf8)
        let pages = try await StaticHTTPServer(directory: work)
        defer { pages.stop() }
        let ffmpeg = try ChildProcess(try #require(which("ffmpeg")), ["-v", "warning", "-i", running.url, "-t", "60", "-map", "0:v:0", "-f", "framemd5", work + "/ffmpeg.md5"])
        let gstreamer = try ChildProcess(try #require(which("timeout")), ["62", "gst-launch-1.0", "-q", "-e", "uridecodebin3", "uri=\(running.url)", "!", "videoconvert", "!",
                                                                          "video/x-raw,format=I420", "!", "filesink", "location=\(work)/gst.yuv"])
        let browser = try HeadlessChromium(url: pages.url + "live.html")
        defer { browser.stop() }
        let played = await pages.waitForRequest(startingWith: "/report?playing", seconds: 40)
        #expect(played != nil, "Chromium did not play the live stream: \(pages.requests.filter { $0.hasPrefix("/report") })")
        #expect(ffmpeg.wait(seconds: 100) == 0, "\(ffmpeg.stderrText)")
        // FFmpeg 5.1's HLS reader prepends the initialization section again at each reload of a
        // live fMP4 playlist and its MP4 reader then notes the second moov: it says the same of
        // FFmpeg's own live fMP4 HLS (`-f hls -hls_segment_type fmp4`). Anything else is ours.
        let warnings = ffmpeg.stderrText.split(separator: "\n").filter { !$0.contains("Found duplicated MOOV Atom") && !$0.contains("Last message repeated") }
        #expect(warnings.isEmpty, "ffmpeg warned: \(warnings)")
        kill(gstreamer.pid, SIGINT)
        _ = gstreamer.wait(seconds: 20)
        // No gap: the frames pulled are the source's, one after another, round and round.
        let piece = try ffmpegFrameHashes(Self.source, format: "h264")
        let pulled = framemd5Hashes(try String(contentsOfFile: work + "/ffmpeg.md5", encoding: .utf8))
        #expect(pulled.count >= 1790, "ffmpeg pulled \(pulled.count) frames in 60 s")
        #expect(Self.isContiguous(pulled, in: piece), "ffmpeg's frames skip or repeat")
        let raw = try Data(contentsOf: URL(fileURLWithPath: work + "/gst.yuv"))
        let size = 320 * 240 * 3 / 2
        let frames = stride(from: 0, to: raw.count - size + 1, by: size).map { md5Hex(raw[$0..<($0 + size)]) }
        #expect(frames.count >= 1000, "GStreamer decoded \(frames.count) frames")
        #expect(Self.isContiguous(frames, in: piece), "GStreamer's frames skip or repeat")
    }

    @Test("a signed origin: ffmpeg plays a signed URL (low latency, every playlist, part and segment found from it carrying the token); no token, another key's, a changed or an expired one get 403, counted")
    func signedURLsOpenTheStreamAndNothingElse() async throws {
        let key = try URLSigningKey(secret: Array("a secret of the signed-origin test".utf8))
        let running = try await Running(segmentDuration: 1, lowLatency: .init(partDuration: MediaTime(value: 1, timescale: 4)), accessKey: key)
        defer { running.stop() }
        try await running.waitForSegments(2)
        let port = Int(running.url.split(separator: ":")[2].split(separator: "/")[0])!
        let now = Int(Date().timeIntervalSince1970)
        let signed = try running.origin.url(port: port, signedBy: key, expires: now + 60)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-signed-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let ffmpeg = try ChildProcess(try #require(which("ffmpeg")), ["-v", "warning", "-i", signed, "-t", "5", "-map", "0:v:0", "-f", "framemd5", work + "/signed.md5"])
        #expect(ffmpeg.wait(seconds: 60) == 0, "\(ffmpeg.stderrText)")
        let pulled = framemd5Hashes(try String(contentsOfFile: work + "/signed.md5", encoding: .utf8))
        #expect(pulled.count >= 140, "ffmpeg pulled \(pulled.count) frames in 5 s through the signed URL")
        #expect(Self.isContiguous(pulled, in: try ffmpegFrameHashes(Self.source, format: "h264")), "ffmpeg's frames skip or repeat")
        #expect(running.origin.statistics.forbidden == 0, "ffmpeg was refused \(running.origin.statistics.forbidden) times")
        // The playlists name their files relatively: the token rides along without a rewrite.
        let media = await Self.get(signed.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8"))
        #expect(media.status == 200)
        let playlist = String(decoding: media.body, as: UTF8.self)
        #expect(playlist.contains("#EXT-X-PART:") && !playlist.contains("token."), "\(playlist.prefix(400))")
        let newest = try #require(HLSChecker.media(playlist).entries.last?.uri)
        let signedFolder = String(signed.dropLast("index.m3u8".count))
        #expect(await Self.get(signedFolder + newest).status == 200)
        // Refused: no token, another key's, a later expiry than signed, an expired one, junk.
        let base = "http://127.0.0.1:\(port)"
        let other = try URLSigningKey(secret: Array("another secret, not the origin's".utf8))
        let token = String(signed.dropFirst(base.count).split(separator: "/")[0])
        let parts = token.split(separator: ".")
        let refused = [
            running.url, signedFolder + newest.replacingOccurrences(of: ".m4s", with: ".mp4"),
            base + (try other.signedPath("/live/index.m3u8", expires: now + 60)),
            base + "/token.\(Int(parts[1])! + 1).\(parts[2])/live/index.m3u8",
            base + (try key.signedPath("/live/index.m3u8", expires: now - 5)),
            base + "/token.x.y/live/index.m3u8", base + "/token.\(parts[1]).\(parts[2])/../live/index.m3u8".replacingOccurrences(of: "/../", with: "/%2e%2e/"),
        ]
        let before = running.origin.statistics.forbidden
        for url in refused.dropFirst(2) + [refused[0]] {
            let answer = await Self.get(url)
            #expect(answer.status == 403 && answer.body.isEmpty, "\(url): \(answer.status)")
        }
        #expect(await Self.get(refused[1]).status == 404, "a signed name that is not published is 404, as without a key")
        #expect(running.origin.statistics.forbidden == before + refused.count - 1, "\(running.origin.statistics)")
        let unsigned = try ChildProcess(try #require(which("ffmpeg")), ["-v", "error", "-i", running.url, "-t", "1", "-f", "null", "-"])
        #expect(unsigned.wait(seconds: 30) != 0)
        #expect(unsigned.stderrText.contains("403"), "\(unsigned.stderrText)")
    }

    /// A self-signed certificate for 127.0.0.1 and its key, made by OpenSSL in `directory`.
    static func selfSignedCertificate(in directory: String) throws -> TLSFiles {
        let made = try SelfSignedCertificate(in: directory)
        return TLSFiles(certificateChain: made.certificate, privateKey: made.privateKey)
    }

    /// curl's body and HTTP version for `url` (`--http2` or `--http1.1` over TLS, trusting `ca`;
    /// `--http2-prior-knowledge` in the clear).
    static func curl(_ url: String, _ version: String, ca: String? = nil) throws -> (body: Data, version: String) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-curl-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try run("curl", ["-sS", "--fail", "--max-time", "10", version, "-o", out, "-w", "%{http_version}"] + (ca.map { ["--cacert", $0] } ?? []) + [url])
        guard result.status == 0 else { throw TestFailure("curl \(version) \(url): \(result.status) \(result.stderrText)") }
        return (try Data(contentsOf: URL(fileURLWithPath: out)), result.stdoutText)
    }

    @Test("over TLS: curl gets the same playlists and segments by HTTP/2 and HTTP/1.1 (ALPN), the certificate verified; ffmpeg plays https://; h2c with prior knowledge; a bad certificate or key is an error naming the file",
          .requires(.openssl, .curl))
    func tlsOffersHTTP2AndHTTP1() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let files = try Self.selfSignedCertificate(in: work)
        let running = try await Running(segmentDuration: 1, lowLatency: .init(), transport: .tls(files))
        defer { running.stop() }
        #expect(running.url.hasPrefix("https://127.0.0.1:"))
        try await running.waitForSegments(2)
        // The same multivariant playlist and init section both ways; the media playlist's
        // newest segment fetched both ways is the same bytes.
        let (h2, v2) = try Self.curl(running.url, "--http2", ca: files.certificateChain)
        let (h1, v1) = try Self.curl(running.url, "--http1.1", ca: files.certificateChain)
        #expect(v2 == "2" && v1 == "1.1", "HTTP versions: \(v2), \(v1)")
        #expect(h2 == h1 && String(decoding: h2, as: UTF8.self).hasPrefix("#EXTM3U"))
        let mediaURL = running.url.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8")
        let playlist = HLSChecker.media(String(decoding: try Self.curl(mediaURL, "--http2", ca: files.certificateChain).body, as: UTF8.self))
        #expect(playlist.problems.isEmpty, "\(playlist.problems)")
        let segment = try #require(playlist.entries.first?.uri)
        let segmentURL = mediaURL.replacingOccurrences(of: "index-video.m3u8", with: segment)
        let (s2, _) = try Self.curl(segmentURL, "--http2", ca: files.certificateChain)
        let (s1, _) = try Self.curl(segmentURL, "--http1.1", ca: files.certificateChain)
        #expect(s2 == s1 && Self.boxes(s2)?.first == "styp", "\(s2.count) and \(s1.count) bytes")
        // A blocking reload over HTTP/2 is held and answered.
        let next = playlist.mediaSequence + playlist.entries.count
        let (held, _) = try Self.curl(mediaURL + "?_HLS_msn=\(next)&_HLS_part=0", "--http2", ca: files.certificateChain)
        #expect(String(decoding: held, as: UTF8.self).contains("#EXT-X-PART:"))
        // ffmpeg plays it over TLS (its TLS does not verify by default).
        let ffmpeg = try ChildProcess(try #require(which("ffmpeg")), ["-v", "error", "-i", running.url, "-t", "3", "-map", "0:v:0", "-f", "framemd5", work + "/tls.md5"])
        #expect(ffmpeg.wait(seconds: 60) == 0, "\(ffmpeg.stderrText)")
        let pulled = framemd5Hashes(try String(contentsOfFile: work + "/tls.md5", encoding: .utf8))
        let piece = try ffmpegFrameHashes(Self.source, format: "h264")
        #expect(pulled.count >= 80 && Self.isContiguous(pulled, in: piece), "\(pulled.count) frames")

        // Cleartext HTTP/2 with prior knowledge.
        let cleartext = try await Running(segmentDuration: 1, transport: .cleartextHTTP2)
        defer { cleartext.stop() }
        try await cleartext.waitForSegments(1)
        let (c2, cv) = try Self.curl(cleartext.url, "--http2-prior-knowledge")
        #expect(cv == "2" && String(decoding: c2, as: UTF8.self).hasPrefix("#EXTM3U"))

        // Bad files: named at init.
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: work + "/junk.pem"))
        try FileManager.default.createDirectory(atPath: work + "/other", withIntermediateDirectories: true)
        let other = try Self.selfSignedCertificate(in: work + "/other")  // (another key pair)
        for (bad, named) in [(TLSFiles(certificateChain: work + "/junk.pem", privateKey: files.privateKey), work + "/junk.pem"),
                             (TLSFiles(certificateChain: work + "/missing.pem", privateKey: files.privateKey), work + "/missing.pem"),
                             (TLSFiles(certificateChain: files.certificateChain, privateKey: work + "/junk.pem"), work + "/junk.pem"),
                             (TLSFiles(certificateChain: files.certificateChain, privateKey: other.privateKey), other.privateKey)] {
            var options = HLSOrigin.Options(port: 0)
            options.transport = .tls(bad)
            #expect { try HLSOrigin(options: options) } throws: { "\($0)".contains(named) }
        }
    }

    @Test("Chromium's own player plays the low-latency origin over HTTPS (HTTP/2 by ALPN), the test's self-signed certificate trusted by its key's hash", .requires(.openssl, .chromium))
    func chromiumPlaysTheOriginOverHTTPS() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-tls-page-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let made = try SelfSignedCertificate(in: work)
        let running = try await Running(lowLatency: .init(), transport: .tls(TLSFiles(certificateChain: made.certificate, privateKey: made.privateKey)))
        defer { running.stop() }
        try await running.waitForSegments(4)  // (more than HOLD-BACK, three targets: Chromium starts that far behind the edge)
        try Self.livePage(running.url).write(toFile: work + "/live.html", atomically: true, encoding: .utf8)
        let pages = try await StaticHTTPServer(directory: work)
        defer { pages.stop() }
        let browser = try HeadlessChromium(url: pages.url + "live.html", arguments: [try made.chromiumTrust()])
        defer { browser.stop() }
        let played = await pages.waitForRequest(startingWith: "/report?playing", seconds: 40)
        #expect(played != nil, "Chromium did not play the HTTPS origin: \(pages.requests.filter { $0.hasPrefix("/report") })")
        #expect(running.origin.statistics.tlsHandshakes >= 1 && running.origin.statistics.served > 10, "\(running.origin.statistics)")
    }

    /// Whether `frames` are consecutive frames of `piece` played round and round.
    static func isContiguous(_ frames: [String], in piece: [String]) -> Bool {
        guard let first = frames.first, let start = piece.firstIndex(of: first) else { return false }
        return frames.enumerated().allSatisfy { $0.element == piece[(start + $0.offset) % piece.count] }
    }

    /// A page whose player reports `playing` once it has shown 150 pictures (and decoded
    /// `soundBytes` of sound).
    static func livePage(_ url: String, soundBytes: Int = 0) -> String {
        """
        <!doctype html><html><body>
        <video id="v" src="\(url)" muted autoplay playsinline></video>
        <script>
        const v = document.getElementById('v');
        let told = false;
        v.addEventListener('timeupdate', () => {
          if (!told && v.currentTime > 0 && v.getVideoPlaybackQuality().totalVideoFrames > 150 && (v.webkitAudioDecodedByteCount || 0) >= \(soundBytes)) {
            told = true; fetch('/report?playing&t=' + v.currentTime + '&audio=' + (v.webkitAudioDecodedByteCount || 0));
          }
        });
        v.addEventListener('error', () => fetch('/report?error&code=' + (v.error && v.error.code)));
        v.play().catch(e => fetch('/report?playfailed'));
        </script></body></html>
        """
    }

    @Test func hostileClientsGetFourHundredsAndLeaveTheStreamServed() async throws {
        raiseTestDescriptorLimit()
        let running = try await Running(segmentDuration: 1)
        defer { running.stop() }
        try await running.waitForSegments(2)
        let base = running.url.replacingOccurrences(of: "/live/index.m3u8", with: "")
        let port = Int(running.url.split(separator: ":")[2].split(separator: "/")[0])!
        // A thousand connections that never send, and a slowloris sending a header byte at a time.
        var idle: [Int32] = []
        for _ in 0..<1000 { if let socket = connectLoopback(port: port) { idle.append(socket) } }
        defer { for socket in idle { close(socket) } }
        #expect(idle.count >= 990, "\(idle.count) idle connections opened")
        let slow = try #require(connectLoopback(port: port))
        defer { close(slow) }
        let slowloris = Task.detached(executorPreference: TimelyExecutor.shared) {
            for byte in Array("GET /live/index.m3u8 HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8) {
                var value = byte
                if write(slow, &value, 1) != 1 { return }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        defer { slowloris.cancel() }
        // Traversal, encoded traversal, a method not served, a huge query, a bad range.
        for path in ["/live/../../etc/passwd", "/live/%2e%2e/%2e%2e/etc/passwd", "/live/index-video-99999.m4s", "/live/..%2f..%2fetc%2fpasswd"] {
            let status = await Self.get(base + path).status
            #expect(status == 404 || status == 400, "\(path): \(status)")
        }
        let huge = await Self.get(running.url + "?" + String(repeating: "a=b&", count: 20_000)).status
        #expect(huge == 431 || huge == 400 || huge == 414 || huge == 0, "a 80 KB query: \(huge)")
        let range = await Self.get(base + "/live/index-video-init.mp4", headers: ["Range": "bytes=999999-"]).status
        #expect(range == 416)
        // Beside all that, a player is served: the playlist and its newest segment, every time.
        for _ in 0..<20 {
            let started = ContinuousClock.now
            let (status, body, _) = await Self.get(running.url.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8"))
            #expect(status == 200)
            let playlist = HLSChecker.media(String(decoding: body, as: UTF8.self))
            let newest = try #require(playlist.entries.last?.uri)
            #expect(await Self.get(base + "/live/" + newest).status == 200)
            #expect(ContinuousClock.now - started < .seconds(1), "a playlist and a segment took \(ContinuousClock.now - started)")
            try await Task.sleep(for: .milliseconds(100))
        }
        let statistics = running.origin.statistics
        #expect(statistics.notFound >= 3 && statistics.badRanges >= 1, "\(statistics)")
    }
}

/// A TCP connection to 127.0.0.1:`port`, or nil.
func connectLoopback(port: Int) -> Int32? {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard connected == 0 else { close(socket); return nil }
    return socket
}

/// Raises this test process's descriptor limit to its hard limit (a thousand sockets).
func raiseTestDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

/// The MD5 of bytes, hex, as framemd5 prints it (through ffmpeg's own tool would be slower).
func md5Hex(_ bytes: Data) -> String {
    var md5 = MD5()
    bytes.withUnsafeBytes { md5.update($0) }
    return md5.finalize()
}
