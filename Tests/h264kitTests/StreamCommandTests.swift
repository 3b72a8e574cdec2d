import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `h264kit stream` and `h264kit receive` over loopback UDP, with ffmpeg as the other end and
/// with each other. Every packet goes to 127.0.0.1.
@Suite("h264kit stream and receive", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct StreamCommandTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    static func waitUntilBound(_ port: Int) throws {
        for _ in 0..<6000 where !udpPortIsBound(UInt16(port)) { usleep(10_000) }
        try #require(udpPortIsBound(UInt16(port)), "nothing listened on 127.0.0.1:\(port)")
    }

    static func temporaryPath(_ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-\(UUID().uuidString)\(suffix)").path
    }

    /// Each packet's presentation time (seconds) as ffprobe reads it.
    static func packetTimes(_ path: String) throws -> [Double] {
        try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
            .stdoutText.split(separator: "\n").compactMap { Double($0) }
    }

    @Test("sdp, then stream to ffmpeg: its decode of what arrives is the source's, ended by the BYE")
    func streamToFFmpeg() throws {
        let port = try freeUDPPortPair()
        let sdp = Self.temporaryPath(".sdp")
        defer { try? FileManager.default.removeItem(atPath: sdp) }
        let described = try h264kit(["sdp", Self.source, "rtp://127.0.0.1:\(port)", "--packetization-mode", "0"])
        try #require(described.status == 0, "\(described.stderr)")
        try Data(described.stdout.utf8).write(to: URL(fileURLWithPath: sdp))
        let hashes = Self.temporaryPath(".framemd5")
        defer { try? FileManager.default.removeItem(atPath: hashes) }
        let ffmpeg = try ChildProcess(try #require(which("timeout")), ["30", "ffmpeg", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-buffer_size", "4194304", "-i", sdp,
                                                                      "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-y", hashes])
        try Self.waitUntilBound(port)
        let sent = try h264kit(["stream", Self.source, "rtp://127.0.0.1:\(port)", "--packetization-mode", "0", "--mtu", "65507", "-v"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stderr.contains("90 samples"), "\(sent.stderr)")
        #expect(ffmpeg.wait() == 0, "ffmpeg ends on the BYE: \(ffmpeg.stderrText)")
        let received = framemd5Hashes(try String(contentsOfFile: hashes, encoding: .utf8))
        #expect(received == (try ffmpegFrameHashes(Self.source)))
    }

    @Test("ffmpeg sends (its SDP), receive records a MOV: the source's frames and times, --stats counts it")
    func receiveFromFFmpeg() throws {
        let port = try freeUDPPortPair()
        let sdp = Self.temporaryPath(".sdp"), movie = Self.temporaryPath(".mov"), stats = Self.temporaryPath(".json"), sent = Self.temporaryPath(".mp4")
        defer { for path in [sdp, movie, stats, sent] { try? FileManager.default.removeItem(atPath: path) } }
        let muxed = try h264kit(["mux", Self.source, sent])
        try #require(muxed.status == 0, "\(muxed.stderr)")
        let output = ["-c", "copy", "-f", "rtp", "-sdp_file", sdp, "rtp://127.0.0.1:\(port)"]
        let dryRun = try run("ffmpeg", ["-v", "error", "-i", sent, "-frames:v", "1"] + output)  // writes the SDP (one frame to an unbound loopback port)
        try #require(dryRun.status == 0 && FileManager.default.fileExists(atPath: sdp), "ffmpeg wrote no SDP: \(dryRun.stderrText)")
        let receiver = try ChildProcess(try h264kitURL(), ["receive", sdp, movie, "--timeout", "2", "--stats", stats])
        try receiver.waitUntil("its port \(port) bound") { udpPortIsBound(UInt16(port)) }
        let sender = try run("timeout", ["20", "ffmpeg", "-v", "error", "-re", "-i", sent] + output)
        #expect(sender.status == 0, "\(sender.stderrText)")
        #expect(receiver.wait() == 0, "\(receiver.stderrText)")
        #expect(receiver.stderrText.contains("90 samples (idleTimeout)"), "\(receiver.stderrText)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        #expect(try Self.packetTimes(movie) == Self.packetTimes(sent))
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        let depacketizer = try #require(counts["depacketizer"] as? [String: Any])
        #expect(counts["samples"] as? Int == 90 && depacketizer["packetsLost"] as? Int == 0 && depacketizer["accessUnitsComplete"] as? Int == 90)
    }

    @Test("stream --loop --frames 150 to receive: an Annex-B file of 150 frames, times rising across the loop; SIGINT ends a receive with its file finished")
    func loopAndInterrupt() throws {
        let port = try freeUDPPortPair()
        let stream = Self.temporaryPath(".264"), movie = Self.temporaryPath(".mp4")
        defer { for path in [stream, movie] { try? FileManager.default.removeItem(atPath: path) } }
        let receiver = try ChildProcess(try h264kitURL(), ["receive", "rtp://127.0.0.1:\(port)", stream])
        try Self.waitUntilBound(port)
        let sent = try h264kit(["stream", Self.source, "rtp://127.0.0.1:\(port)", "--loop", "--frames", "150", "--no-pace"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(receiver.wait() == 0, "\(receiver.stderrText)")
        #expect(receiver.stderrText.contains("150 samples (goodbye)"), "\(receiver.stderrText)")
        let source = try ffmpegFrameHashes(Self.source)
        #expect(try ffmpegFrameHashes(stream, format: "h264") == source + source[..<60])

        // A paced, looping stream with no end; SIGINT to the receiver after a second.
        let listener = try ChildProcess(try h264kitURL(), ["receive", "rtp://127.0.0.1:\(port)", movie, "--timeout", "30"])
        try Self.waitUntilBound(port)
        let endless = try ChildProcess(try h264kitURL(), ["stream", Self.source, "rtp://127.0.0.1:\(port)", "--loop"])
        usleep(1_500_000)
        kill(listener.pid, SIGINT)
        #expect(listener.wait() == 0, "\(listener.stderrText)")
        #expect(listener.stderrText.contains("(cancelled)"), "\(listener.stderrText)")
        kill(endless.pid, SIGINT)
        #expect(endless.wait() == 0, "stream ends on SIGINT, sending its BYE: \(endless.stderrText)")
        // Cut off in decoding order, the file shows the source's frames in order, less the
        // B-frames whose later reference never came.
        let frames = try ffmpegFrameHashes(movie)
        #expect(frames.count > 10, "\(frames.count) frames")
        var position = source.startIndex
        for hash in frames {
            let found = try #require(source[position...].firstIndex(of: hash), "a recorded frame that is not the source's next ones")
            position = found + 1
        }
        let times = try Self.packetTimes(movie)
        #expect(times.count == frames.count)
    }

    @Test("bad sources, destinations and options: a clear error, exit ≠ 0")
    func badArguments() throws {
        let sdp = Self.temporaryPath(".sdp")
        defer { try? FileManager.default.removeItem(atPath: sdp) }
        try Data("v=0\nm=audio 5004 RTP/AVP 0\n".utf8).write(to: URL(fileURLWithPath: sdp))
        for arguments in [["stream", Self.source, "rtp://@:5004"], ["stream", Self.source, "udp://127.0.0.1:5004"], ["stream", "/nonexistent.264", "rtp://127.0.0.1:5004"],
                          ["stream", Self.source, "rtp://127.0.0.1:5004", "--mtu", "10"], ["stream", "-", "rtp://127.0.0.1:5004", "--sdp", sdp], ["receive", "/nonexistent.sdp", "out.mp4"], ["receive", sdp, "out.mp4"],
                          ["receive", "rtp://127.0.0.1:5004", "out.mp4", "--timeout", "0"]] {
            let result = try h264kit(arguments)
            #expect(result.status != 0 && !result.stderr.isEmpty, "\(arguments): \(result.stderr)")
        }
    }
}
