import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
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
             lowLatency: HLSOrigin.LowLatency? = nil) async throws {
            let port = try freeTCPPort()
            origin = try HLSOrigin(options: .init(port: port, segmenter: .init(format: format, segmentDuration: MediaTime(seconds: segmentDuration, preferredTimescale: 90_000)),
                                                  windowSize: window, servesDASH: format == .fragmentedMP4, lowLatency: lowLatency))
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
