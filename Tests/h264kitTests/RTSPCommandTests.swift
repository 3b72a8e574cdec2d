import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `h264kit stream … rtsp://` and `h264kit receive rtsp://…` with ffmpeg on the other end, and
/// live encoding of pictures; every connection is to 127.0.0.1.
@Suite("h264kit stream and receive over RTSP", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct RTSPCommandTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    static func temporaryPath(_ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-\(UUID().uuidString)\(suffix)").path
    }

    static func waitUntilListening(_ port: Int) throws {
        for _ in 0..<6000 where !tcpPortIsListening(UInt16(port)) { usleep(10_000) }
        try #require(tcpPortIsListening(UInt16(port)), "nothing listened on 127.0.0.1:\(port)")
    }

    @Test("stream FILE rtsp:// serves it: ffmpeg plays it over TCP (with credentials) to the source's frames; receive rtsp:// records it; SIGINT stops the server")
    func serveAndPlay() throws {
        let port = try freeTCPPort()
        let server = try ChildProcess(try h264kitURL(), ["stream", Self.source, "rtsp://127.0.0.1:\(port)/live", "--user", "viewer:pa55"])
        try Self.waitUntilListening(port)
        let played = try run("timeout", ["30", "ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://viewer:pa55@127.0.0.1:\(port)/live",
                                         "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
        #expect(played.status == 0, "\(played.stderrText)")
        #expect(framemd5Hashes(played.stdoutText) == (try ffmpegFrameHashes(Self.source)))
        let refused = try run("timeout", ["30", "ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(port)/live", "-f", "null", "-"])
        #expect(refused.status != 0 && refused.stderrText.contains("401"), "\(refused.stderrText)")

        let movie = Self.temporaryPath(".mp4"), stats = Self.temporaryPath(".json")
        defer { for path in [movie, stats] { try? FileManager.default.removeItem(atPath: path) } }
        let received = try h264kit(["receive", "rtsp://viewer:pa55@127.0.0.1:\(port)/live", movie, "--stats", stats])
        #expect(received.status == 0 && received.stderr.contains("90 samples (goodbye)"), "\(received.stderr)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        #expect(counts["samples"] as? Int == 90 && (counts["receiverReports"] as? Int ?? 0) > 0)

        kill(server.pid, SIGINT)
        #expect(server.wait() == 0, "\(server.stderrText)")
    }

    @Test("receive rtsp:// of a stream with sound records both (the sound placed by the sender reports); --no-audio records the video and warns that the sound is not received")
    func receiveRecordsTheSound() throws {
        let source = Self.temporaryPath(".mp4"), movie = Self.temporaryPath(".mp4")
        defer { for path in [source, movie] { try? FileManager.default.removeItem(atPath: path) } }
        try #require(try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000",
                                        "-t", "2", "-ac", "2", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "25", "-c:a", "aac", source]).status == 0)
        let port = try freeTCPPort()
        let server = try ChildProcess(try h264kitURL(), ["stream", source, "rtsp://127.0.0.1:\(port)/live"])
        try Self.waitUntilListening(port)
        let both = try h264kit(["receive", "--rtsp-transport", "tcp", "rtsp://127.0.0.1:\(port)/live", movie])
        #expect(both.status == 0 && both.stderr.contains("50 samples (goodbye)") && both.stderr.contains("placed by the sender reports"), "\(both.stderr)")
        let streams = try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", movie]).stdoutText
        #expect(streams.split(separator: "\n").sorted() == ["audio", "video"], "\(streams)")
        let received = try h264kit(["receive", "--no-audio", "--rtsp-transport", "tcp", "rtsp://127.0.0.1:\(port)/live", movie])
        #expect(received.status == 0 && received.stderr.contains("50 samples (goodbye)"), "\(received.stderr)")
        #expect(received.stderr.lowercased().contains("warning: rtsp://127.0.0.1:\(port)/live: audio mpeg4-generic/48000/2 not received"), "\(received.stderr)")
        kill(server.pid, SIGINT)
        #expect(server.wait() == 0, "\(server.stderrText)")
    }

    @Test("receive --listen rtsp:// records what ffmpeg publishes (ffmpeg -f rtsp): the source's frames and times; it ends at the TEARDOWN")
    func listenForPublisher() throws {
        let port = try freeTCPPort()
        let sent = Self.temporaryPath(".mp4"), movie = Self.temporaryPath(".mov")
        defer { for path in [sent, movie] { try? FileManager.default.removeItem(atPath: path) } }
        try #require(try h264kit(["mux", Self.source, sent]).status == 0)
        let receiver = try ChildProcess(try h264kitURL(), ["receive", "--listen", "rtsp://127.0.0.1:\(port)/ingest", movie])
        try Self.waitUntilListening(port)
        let published = try run("timeout", ["30", "ffmpeg", "-v", "error", "-re", "-i", sent, "-c", "copy", "-f", "rtsp", "-rtsp_transport", "tcp",
                                             "rtsp://127.0.0.1:\(port)/ingest"])
        #expect(published.status == 0, "\(published.stderrText)")
        #expect(receiver.wait() == 0, "\(receiver.stderrText)")
        #expect(receiver.stderrText.contains("90 samples (teardown)"), "\(receiver.stderrText)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        #expect(try ffprobePresentationTimes(movie) == ffprobePresentationTimes(sent))
    }

    @Test("stream PICTURES.y4m encodes live: over RTP to receive (--frames), and served over RTSP to ffmpeg; what arrives decodes cleanly")
    func liveEncoding() throws {
        let pictures = Self.temporaryPath(".y4m"), received = Self.temporaryPath(".mp4")
        defer { for path in [pictures, received] { try? FileManager.default.removeItem(atPath: path) } }
        let made = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "50", "-pix_fmt", "yuv420p", pictures])
        try #require(made.status == 0, "\(made.stderrText)")

        let rtp = try freeUDPPortPair()
        // (It ends on the sender's BYE; the timeout is for a BYE that never comes. CI saw a loaded
        // machine take over 5 s to start the live encoder: a 5-s timeout ended the receiver first.)
        let receiver = try ChildProcess(try h264kitURL(), ["receive", "rtp://127.0.0.1:\(rtp)", received, "--timeout", "120"])
        for _ in 0..<6000 where !udpPortIsBound(UInt16(rtp)) { usleep(10_000) }
        let sent = try h264kit(["stream", pictures, "rtp://127.0.0.1:\(rtp)", "--preset", "veryfast", "--frames", "40", "-v"])
        #expect(sent.status == 0 && sent.stderr.contains("40 samples"), "\(sent.stderr)")
        #expect(receiver.wait() == 0 && receiver.stderrText.contains("40 samples (goodbye)"), "\(receiver.stderrText)")
        let decoded = try run("ffmpeg", ["-v", "error", "-i", received, "-f", "framemd5", "-"])
        #expect(decoded.status == 0 && decoded.stderrText.isEmpty && framemd5Hashes(decoded.stdoutText).count == 40, "\(decoded.stderrText)")

        let port = try freeTCPPort()
        let server = try ChildProcess(try h264kitURL(), ["stream", pictures, "rtsp://127.0.0.1:\(port)/cam", "--preset", "veryfast", "--loop"])
        try Self.waitUntilListening(port)
        let played = try run("timeout", ["30", "ffmpeg", "-v", "error", "-rtsp_transport", "udp", "-i", "rtsp://127.0.0.1:\(port)/cam", "-frames:v", "30", "-f", "framemd5", "-"])
        #expect(played.status == 0 && played.stderrText.isEmpty && framemd5Hashes(played.stdoutText).count == 30, "\(played.stderrText)")
        kill(server.pid, SIGINT)
        #expect(server.wait() == 0, "\(server.stderrText)")
    }

    @Test("bad RTSP options: a clear error, exit ≠ 0")
    func badOptions() throws {
        let cases: [([String], String)] = [
            (["stream", Self.source, "rtsp://127.0.0.1:0/live", "--sdp", "x.sdp"], "--sdp is for rtp://"),
            (["stream", Self.source, "rtp://127.0.0.1:5004", "--user", "a:b"], "--user is for rtsp://"),
            (["stream", Self.source, "rtsp://127.0.0.1:8554/live", "--user", "nocolon"], "USER:PASSWORD"),
            (["stream", Self.source, "rtsp://127.0.0.1:8554/live", "--frames", "5"], "--frames with rtsp://"),
            (["receive", "rtp://127.0.0.1:5004", "x.mp4", "--listen"], "--listen serves an rtsp:// path"),
            (["receive", "rtsp://127.0.0.1:1/live", "x.mp4", "--rtsp-transport", "tcp", "--timeout", "1"], "cannot connect"),
        ]
        for (arguments, message) in cases {
            let result = try h264kit(arguments)
            #expect(result.status != 0 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
