import Foundation
import TestSupport
import Testing

@Suite("h264kit sdp", .requires(.ffmpeg), .timely)
struct SDPCommandTests {
    /// The fmtp parameters of an SDP, by name.
    static func fmtp(_ sdp: String) -> [String: String] {
        guard let line = sdp.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).first(where: { $0.hasPrefix("a=fmtp:") }) else { return [:] }
        var parameters: [String: String] = [:]
        for pair in line.drop(while: { $0 != " " }).split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { parameters[parts[0]] = parts[1] }
        }
        return parameters
    }

    @Test func announcesWhatFFmpegAnnouncesForTheSameStream() throws {
        let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"
        let ours = try h264kit(["sdp", source, "rtp://127.0.0.1:5004"])
        #expect(ours.status == 0, "\(ours.stderr)")
        #expect(ours.stdout.contains("m=video 5004 RTP/AVP 96") && ours.stdout.contains("a=rtpmap:96 H264/90000") && ours.stdout.contains("c=IN IP4 127.0.0.1"))
        // ffmpeg writes its SDP while sending one frame to a loopback port nobody reads.
        let sdpPath = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-\(UUID().uuidString).sdp").path
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        _ = try run("ffmpeg", ["-v", "error", "-i", source, "-frames:v", "1", "-c", "copy", "-f", "rtp", "-sdp_file", sdpPath, "rtp://127.0.0.1:5004"])
        let theirs = try String(contentsOfFile: sdpPath, encoding: .utf8)
        #expect(Self.fmtp(ours.stdout) == Self.fmtp(theirs), "ours: \(Self.fmtp(ours.stdout)), ffmpeg: \(Self.fmtp(theirs))")
    }

    @Test("a MOV with G.711: the sound medium on PORT+2 as ffmpeg announces it (PCMU, static payload type 0); --no-audio leaves it out")
    func announcesAFilesG711() throws {
        let movie = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-\(UUID().uuidString).mov").path
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=8000",
                                      "-t", "1", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "pcm_mulaw", "-ac", "1", movie])
        try #require(made.status == 0, "\(made.stderrText)")
        let ours = try h264kit(["sdp", movie, "rtp://127.0.0.1:5004"])
        #expect(ours.status == 0 && ours.stdout.contains("m=audio 5006 RTP/AVP 0") && ours.stdout.contains("a=rtpmap:0 PCMU/8000"), "\(ours.stdout)\(ours.stderr)")
        let alone = try h264kit(["sdp", movie, "rtp://127.0.0.1:5004", "--no-audio"])
        #expect(alone.status == 0 && !alone.stdout.contains("m=audio"), "\(alone.stdout)")
    }

    @Test func badDestinationsAndModesAreErrors() throws {
        let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"
        for arguments in [["sdp", source, "udp://127.0.0.1:5004"], ["sdp", source, "rtp://127.0.0.1"], ["sdp", source, "rtp://127.0.0.1:65535"],
                          ["sdp", source, "rtp://127.0.0.1:5004", "--packetization-mode", "2"], ["sdp", "/nonexistent.264", "rtp://127.0.0.1:5004"]] {
            let result = try h264kit(arguments)
            #expect(result.status != 0 && !result.stderr.isEmpty, "\(arguments)")
        }
    }
}
