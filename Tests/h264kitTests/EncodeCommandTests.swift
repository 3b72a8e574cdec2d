import Foundation
import TestSupport
import Testing

/// A y4m test source made by ffmpeg.
func y4mSource(size: String, frames: Int, pixelFormat: String = "yuv420p") throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-enc-\(UUID().uuidString).y4m").path
    let made = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25", "-frames:v", "\(frames)",
                                  "-pix_fmt", pixelFormat, "-strict", "-1", path])
    guard made.status == 0 else { throw TestFailure("ffmpeg failed: \(made.stderrText)") }
    return path
}

func fileSize(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1 }

/// PSNR (average) of `encoded` against `source`, from ffmpeg's psnr filter.
func psnr(_ encoded: String, _ source: String) throws -> Double {
    let result = try run("ffmpeg", ["-v", "info", "-i", encoded, "-i", source, "-lavfi", "psnr", "-f", "null", "-"])
    guard let range = result.stderrText.range(of: "average:"), let value = Double(result.stderrText[range.upperBound...].prefix { $0 != " " }) else {
        throw TestFailure("ffmpeg's psnr filter printed no average: \(result.stderrText)")
    }
    return value
}

@Suite("h264kit encode", .serialized, .requires(.ffmpeg, .ffprobe, .x264))
struct EncodeCommandTests {
    struct Preset: Sendable, CustomTestStringConvertible {
        var name: String
        var testDescription: String { name }
        static let all = ["ultrafast", "veryfast", "medium"].map(Preset.init)
    }

    /// The same settings give the x264 CLI's stream, byte for byte (so the same size and PSNR).
    @Test("Annex-B output is byte-identical with the x264 CLI at CRF 23", arguments: Preset.all)
    func matchesX264(_ preset: Preset) throws {
        let source = try y4mSource(size: "320x240", frames: 40)
        defer { try? FileManager.default.removeItem(atPath: source) }
        let ours = temporaryPath(".264"), theirs = temporaryPath(".264")
        defer { for path in [ours, theirs] { try? FileManager.default.removeItem(atPath: path) } }
        // One thread each: with frame threads x264 itself is not byte-stable under load (CI runs
        // found the two different twice, from byte 44,404 of 52,417 in the last, both streams
        // whole and decodable), and what is compared here is the settings, not the scheduling.
        let encoded = try h264kit(["encode", source, "-o", ours, "--preset", preset.name, "--crf", "23", "--threads", "1"])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        let x264 = try run("x264", ["--quiet", "--preset", preset.name, "--crf", "23", "--threads", "1", "-o", theirs, source])
        #expect(x264.status == 0, "x264: \(x264.stderrText)")
        #expect(fileSize(ours) > 0)
        if !FileManager.default.contentsEqual(atPath: ours, andPath: theirs) {
            let (a, b) = ([UInt8](try readFile(ours)), [UInt8](try readFile(theirs)))
            let firstDifference = a.indices.first { $0 >= b.count || a[$0] != b[$0] } ?? a.count
            Issue.record("""
                h264kit's stream (\(a.count) bytes, \(try ffmpegFrameHashes(ours).count) frames) differs from x264's \
                (\(b.count) bytes, \(try ffmpegFrameHashes(theirs).count) frames) from byte \(firstDifference); \
                x264 exited \(x264.status): \(x264.stderrText)
                """)
        }
        do { let hashes = try ffmpegFrameHashes(ours); #expect(hashes.count == 40) }
    }

    @Test("MP4 and MOV: ffprobe reports the requested profile, level, size and rate; every frame decodes")
    func container() throws {
        let source = try y4mSource(size: "320x240", frames: 30)
        defer { try? FileManager.default.removeItem(atPath: source) }
        for suffix in [".mp4", ".mov"] {
            let output = temporaryPath(suffix)
            defer { try? FileManager.default.removeItem(atPath: output) }
            let result = try h264kit(["encode", source, "-o", output, "--preset", "veryfast", "--profile", "main", "--level", "3.1", "--keyint", "10", "--fps", "30000/1001"])
            #expect(result.status == 0, "\(result.stderr)")
            let probe = try run("ffprobe", ["-v", "error", "-select_streams", "v", "-count_frames", "-show_entries",
                                            "stream=profile,level,width,height,r_frame_rate,nb_read_frames", "-of", "default=noprint_wrappers=1", output])
            for line in ["profile=Main", "level=31", "width=320", "height=240", "r_frame_rate=30000/1001", "nb_read_frames=30"] {
                #expect(probe.stdoutText.contains(line), "\(suffix): \(line) in \(probe.stdoutText)")
            }
            let errors = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"])
            #expect(errors.stderrText.isEmpty)
            // Keyframes every 10 frames at most.
            let inspect = try h264kit(["inspect", output, "--json"])
            let summary = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any]
            let track = (summary?["tracks"] as? [[String: Any]])?.first
            #expect((track?["syncSampleCount"] as? Int ?? 0) >= 3)
        }
    }

    /// The session drives x264's two passes as the x264 CLI does: the same stream, byte for
    /// byte, within 5% of the target.
    @Test("two passes: the x264 CLI's two-pass stream, within 5% of the target")
    func twoPass() throws {
        let source = try y4mSource(size: "640x360", frames: 250)
        defer { try? FileManager.default.removeItem(atPath: source) }
        let ours = temporaryPath(".264"), theirs = temporaryPath(".264"), stats = temporaryPath(".stats")
        defer { for path in [ours, theirs, stats, stats + ".mbtree"] { try? FileManager.default.removeItem(atPath: path) } }
        let two = try h264kit(["encode", source, "-o", ours, "--preset", "veryfast", "--bitrate", "400", "--passes", "2"])
        #expect(two.status == 0, "\(two.stderr)")
        let kbps = Double(fileSize(ours) * 8) / 10 / 1000
        #expect(abs(kbps - 400) / 400 < 0.05, "two-pass: \(kbps) kbit/s")
        _ = try run("x264", ["--quiet", "--preset", "veryfast", "--bitrate", "400", "--pass", "1", "--stats", stats, "-o", "/dev/null", source])
        _ = try run("x264", ["--quiet", "--preset", "veryfast", "--bitrate", "400", "--pass", "2", "--stats", stats, "-o", theirs, source])
        #expect(FileManager.default.contentsEqual(atPath: ours, andPath: theirs))
    }

    /// On camera footage (the corpus's GoPro clip, 854x480, 362 frames) two passes at a bit rate
    /// give at least the PSNR of one-pass ABR at the same rate, both within 5% of it. (On
    /// testsrc2, where every frame costs the same, x264's two passes are 0.02 dB below ABR.)
    @Test(.requiresCorpus) func twoPassBeatsOnePassABROnCameraFootage() throws {
        let clip = try #require(Corpus.directory).appendingPathComponent("gopro_gpmf-parser/karma.mp4").path
        try #require(FileManager.default.fileExists(atPath: clip), "the corpus has \(clip)")
        let source = temporaryPath(".y4m")
        defer { try? FileManager.default.removeItem(atPath: source) }
        let decoded = try run("ffmpeg", ["-v", "error", "-i", clip, "-pix_fmt", "yuv420p", source])
        try #require(decoded.status == 0, "\(decoded.stderrText)")
        let one = temporaryPath(".264"), two = temporaryPath(".264")
        defer { for path in [one, two] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(try h264kit(["encode", source, "-o", one, "--preset", "medium", "--bitrate", "600"]).status == 0)
        #expect(try h264kit(["encode", source, "-o", two, "--preset", "medium", "--bitrate", "600", "--passes", "2"]).status == 0)
        let seconds = 362.0 * 1001 / 30000
        for path in [one, two] {
            let kbps = Double(fileSize(path) * 8) / seconds / 1000
            #expect(abs(kbps - 600) / 600 < 0.05, "\(kbps) kbit/s")
        }
        let onePass = try psnr(one, source), twoPass = try psnr(two, source)
        #expect(twoPass >= onePass, "two-pass \(twoPass) dB, one-pass ABR \(onePass) dB")
    }

    @Test("bad input and impossible settings: a clear error before any output")
    func refusals() throws {
        let source = try y4mSource(size: "320x240", frames: 3)
        defer { try? FileManager.default.removeItem(atPath: source) }
        let brokenHeader = try Checkout.temporaryFile(Array("YUV4MPEG2 W320 F25:1\nFRAME\n".utf8), suffix: ".y4m")
        let raw = try Checkout.temporaryFile([UInt8](repeating: 16, count: 320 * 240 * 3 / 2 * 2 + 100), suffix: ".yuv")
        defer { for path in [brokenHeader, raw] { try? FileManager.default.removeItem(atPath: path) } }
        for (arguments, message) in [
            ([brokenHeader], "width and height"),
            ([raw, "--size", "320x240", "--pix-fmt", "yuv420p", "--fps", "25"], "not a whole number"),
            ([source, "--level", "1"], "level 1 allows frames of 99 macroblocks"),
            ([source, "--profile", "baseline", "--bframes", "2"], "baseline has no B-frames"),
            ([source, "--preset", "warp"], "preset warp"),
            ([source, "--passes", "2"], "--bitrate"),
        ] {
            let output = temporaryPath(".mp4")
            let result = try h264kit(["encode"] + arguments + ["-o", output])
            #expect(result.status != 0, "\(arguments)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(arguments)")
        }
    }
}
