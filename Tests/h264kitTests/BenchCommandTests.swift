import Foundation
import TestSupport
import Testing

@Suite("h264kit bench", .serialized)
struct BenchCommandTests {
    struct Report: Decodable {
        struct Tool: Decodable { var framesPerSecond: Double; var megabitsPerSecond: Double; var psnr: Double; var psnrY: Double }
        struct Result: Decodable {
            var preset: String
            var frames: Int
            var framesPerSecond: Double
            var megabitsPerSecond: Double
            var psnr: Double
            var x264: Tool?
            var speedRatio: Double?
            var identicalToX264: Bool?
        }
        var width: Int
        var height: Int
        var results: [Result]
    }

    /// Each preset is timed beside the x264 CLI; the PSNR is ffmpeg's psnr filter "average" of the
    /// same stream (the x264 CLI's, which is byte-identical with ours), and the bit rate its size.
    @Test(.requires(.ffmpeg, .x264)) func presetsBesideTheX264CLIWithFFmpegsPSNR() throws {
        let source = try y4mSource(size: "320x240", frames: 30)
        defer { try? FileManager.default.removeItem(atPath: source) }
        let result = try h264kit(["bench", source, "--presets", "ultrafast,medium", "--runs", "1", "--threads", "2", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.width == 320 && report.height == 240)
        #expect(report.results.map(\.preset) == ["ultrafast", "medium"])
        for preset in report.results {
            #expect(preset.frames == 30)
            #expect(preset.framesPerSecond > 0 && (preset.speedRatio ?? 0) > 0)
            #expect(preset.identicalToX264 == true)
            let reference = temporaryPath(".264")
            defer { try? FileManager.default.removeItem(atPath: reference) }
            _ = try run("x264", ["--quiet", "--preset", preset.preset, "--crf", "23", "--threads", "2", "-o", reference, source])
            let expected = try psnr(reference, source)
            #expect(abs(preset.psnr - expected) < 0.005, "\(preset.preset): \(preset.psnr) dB, ffmpeg \(expected) dB")
            #expect(abs((preset.x264?.psnr ?? 0) - expected) < 0.005)
            let megabits = Double(fileSize(reference) * 8) / (30.0 / 25.0) / 1e6
            #expect(abs(preset.megabitsPerSecond - megabits) < 1e-9)
        }
    }

    /// Without an input, a synthetic 1080p source is made (and removed afterwards).
    @Test func theSyntheticSourceIs1080p() throws {
        let result = try h264kit(["bench", "--frames", "3", "--presets", "ultrafast", "--runs", "1", "--no-x264", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.width == 1920 && report.height == 1080)
        let only = try #require(report.results.first)
        #expect(only.frames == 3 && only.x264 == nil && only.psnr > 30)
    }

    @Test func badArgumentsAreRefused() throws {
        let unknown = try h264kit(["bench", "--presets", "ultrafast,warp"])
        #expect(unknown.status != 0 && unknown.stderr.contains("unknown preset warp"), "\(unknown.stderr)")
        let notY4M = try h264kit(["bench", "input.264"])
        #expect(notY4M.status != 0 && notY4M.stderr.contains("Y4M"), "\(notY4M.stderr)")
        let broken = try Checkout.temporaryFile(Array("YUV4MPEG2 W320 F25:1\nFRAME\n".utf8), suffix: ".y4m")
        defer { try? FileManager.default.removeItem(atPath: broken) }
        let header = try h264kit(["bench", broken, "--no-x264"])
        #expect(header.status != 0 && header.stderr.contains("width and height"), "\(header.stderr)")
    }
}
