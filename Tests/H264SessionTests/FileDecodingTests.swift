import Foundation
import H264Bitstream
import H264Codec
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import MediaIO
import TestSupport
import SampleFlow
import Testing

@Suite("Files in one call: FrameReader, MediaSource, PictureEncoder", .requires(.ffmpeg, .x264))
struct FileDecodingTests {
    static func hashes(_ reader: FrameReader) throws -> [String] {
        var result: [String] = []
        while let frame = try reader.next() {
            guard let picture = frame.pixelBuffer else { continue }
            var md5 = MD5()
            picture.forEachPackedRow { md5.update($0) }
            result.append(md5.finalize())
        }
        return result
    }

    /// A stream, and the same stream in an MP4 with B-frames and an edit list: the frames ffmpeg
    /// decodes, in order, from one call each.
    @Test func aStreamAndAMovieDecodeLikeFFmpeg() throws {
        let (stream, samples) = try resolutionChange()
        let raw = try Checkout.temporaryFile(stream)
        let movie = temporaryMovieFile()
        defer { for path in [raw, movie] { try? FileManager.default.removeItem(atPath: path) } }
        let writer = try MovieWriter(path: movie)
        for sample in samples { try writer.append(sample) }
        try writer.finish()
        let expected = try ffmpegFrameHashes(raw, format: "h264")  // scaled to the first size, as ffmpeg does
        #expect(expected.count == 20)
        #expect(try Self.hashes(FrameReader(path: raw)) == expected)
        #expect(try Self.hashes(FrameReader(path: movie)) == ffmpegFrameHashes(movie))
        let native = try FrameReader(path: raw, options: .init(size: .native))
        var widths: [Int] = []
        while let frame = try native.next() { if let width = frame.pixelBuffer?.width { widths.append(width) } }
        #expect(widths == Array(repeating: 176, count: 10) + Array(repeating: 320, count: 10))
    }

    /// A real file with an invalid NAL unit near its end (androidx/media's robustness sample):
    /// with the default frame threads the decoder reports the failure from a later call, while
    /// draining, and that must not end the stream: ffmpeg's 29 frames, not 26.
    @Test func aDamagedFileKeepsTheFramesAfterTheDamageWithDefaultThreads() throws {
        let path = Checkout.fixtures.appendingPathComponent("androidx-sample_with_invalid_nalu.mp4").path
        let expected = try ffmpegFrameHashes(path)
        #expect(expected.count == 29)
        #expect(try Self.hashes(FrameReader(path: path)) == expected)
        #expect(try Self.hashes(FrameReader(path: path, options: .init(threading: .single))) == expected)
    }

    /// The interval option keeps one picture per period (thumbnails every second).
    @Test func oneFrameAnInterval() throws {
        let stream = try x264Stream(frames: 75, size: "160x120", arguments: ["--fps", "25"])
        let path = try Checkout.temporaryFile(stream)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try FrameReader(path: path, options: .init(interval: MediaTime(value: 1, timescale: 1)))
        var times: [MediaTime] = []
        while let frame = try reader.next() { if frame.pixelBuffer != nil { times.append(frame.presentationTime) } }
        #expect(times == [0, 1, 2].map { MediaTime(value: $0, timescale: 1) })
    }

    /// A picture file to a movie in one call: the frames, the timing and the file.
    @Test func encodingAPictureFileInOneCall() throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-pe-\(UUID().uuidString).y4m").path
        let output = temporaryMovieFile(".mov")
        defer { for path in [source, output] { try? FileManager.default.removeItem(atPath: path) } }
        try TestPattern(width: 320, height: 240).writeY4M(to: source, frames: 30, frameRate: FrameRate(25, 1))
        let settings = EncoderSettings(width: 320, height: 240, frameRate: FrameRate(25, 1), preset: "ultrafast")
        let summary = try PictureEncoder(settings: settings).run(reading: { () throws(MediaIOError) in try Y4MReader(path: source) },
                                                                 into: SampleOutput(path: output))
        #expect(summary.frames == 30 && summary.duration == MediaTime(value: 30, timescale: 25))
        let reader = try MovieReader(path: output)
        #expect(reader.majorBrand == "qt  " && reader.tracks.first?.samples.count == 30)
        #expect(try ffmpegFrameHashes(output).count == 30)
    }

    /// Gray pictures (which x264 does not take here) are converted to 4:2:0, in a file encode
    /// and live; before, both failed ("the session encodes yuv420p pictures; this one is gray",
    /// "x264 does not take gray").
    @Test func picturesX264DoesNotTakeAreConverted() async throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-gray-\(UUID().uuidString).y4m").path
        let output = temporaryMovieFile(".mp4")
        defer { for path in [source, output] { try? FileManager.default.removeItem(atPath: path) } }
        let made = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25", "-frames:v", "20", "-pix_fmt", "gray", "-y", source])
        #expect(made.status == 0, "\(made.stderrText)")
        #expect(H264Encoder.encodingFormat(for: .gray) == .yuv420p && H264Encoder.encodingFormat(for: .yuv422p) == .yuv422p
                && H264Encoder.encodingFormat(for: .rgb24) == .yuv420p)
        let probe = try Y4MReader(path: source)
        #expect(probe.format == .gray)
        let settings = EncoderSettings(width: 320, height: 240, pixelFormat: H264Encoder.encodingFormat(for: probe.format), frameRate: FrameRate(25, 1), preset: "ultrafast")
        let summary = try PictureEncoder(settings: settings).run(reading: { () throws(MediaIOError) in try Y4MReader(path: source) }, into: SampleOutput(path: output))
        let decoded = try ffmpegFrameHashes(output)
        #expect(summary.frames == 20 && decoded.count == 20)
        let live = try LivePictureSamples(settings: settings, options: .init(paced: false, frameLimit: 20)) { () throws(MediaIOError) in try Y4MReader(path: source) }
        var samples = 0
        for try await _ in live { samples += 1 }
        #expect(samples == 20 && live.settings.pixelFormat == .yuv420p)
    }
}

func temporaryMovieFile(_ suffix: String = ".mp4") -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-session-\(UUID().uuidString)\(suffix)").path
}

/// A stream whose size changes mid-way, and its samples.
func resolutionChange() throws -> (stream: [UInt8], samples: [SampleBuffer]) {
    let stream = try x264Stream(frames: 10, size: "176x144", arguments: ["--bframes", "2"]) + x264Stream(frames: 10, size: "320x240", arguments: ["--bframes", "2"])
    return (stream, try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .fixed(FrameRate(25, 1))).samples)
}
