import Foundation
import H264Bitstream
import H264Codec
import MediaCore
import MediaIO
import TestSupport
import Testing

func temporaryPath(_ suffix: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-io-\(UUID().uuidString)\(suffix)").path
}

/// A Y4M file from ffmpeg's test source.
func ffmpegY4M(size: String = "160x120", frames: Int = 5, pixelFormat: String = "yuv420p") throws -> String {
    let path = temporaryPath(".y4m")
    let made = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25", "-frames:v", "\(frames)", "-pix_fmt", pixelFormat, "-strict", "-1", path])
    guard made.status == 0 else { throw TestFailure(made.stderrText) }
    return path
}

@Suite("Media files against ffmpeg", .requires(.ffmpeg))
struct MediaIOTests {
    struct Format: Sendable, CustomTestStringConvertible {
        var name: String
        var testDescription: String { name }
        static let all = ["yuv420p", "yuv422p", "yuv444p", "yuv420p10le", "gray"].map(Format.init)
    }

    /// A Y4M read (mapped, and as a stream) and written again is the bytes ffmpeg wrote.
    @Test(arguments: Format.all)
    func y4mReadsAndWritesFFmpegsBytes(_ format: Format) throws {
        let source = try ffmpegY4M(pixelFormat: format.name)
        let copy = temporaryPath(".y4m"), raw = temporaryPath(".yuv")
        defer { for path in [source, copy, raw] { try? FileManager.default.removeItem(atPath: path) } }
        let reader = try Y4MReader(path: source)
        #expect(reader.width == 160 && reader.height == 120 && reader.frameRate == FrameRate(25, 1))
        let writer = try Y4MWriter(path: copy, frameRate: reader.frameRate)
        let rawWriter = try RawVideoWriter(path: raw)
        var count = 0
        while let picture = try reader.next() {
            try writer.write(picture, at: reader.frameRate.time(ofFrame: Int64(count)), fieldOrder: .progressive)
            try rawWriter.write(picture, at: .zero, fieldOrder: .progressive)
            count += 1
        }
        try writer.finish()
        try rawWriter.finish()
        #expect(count == 5)
        let theirs = try Data(contentsOf: URL(fileURLWithPath: source))
        let ours = try Data(contentsOf: URL(fileURLWithPath: copy))
        // ffmpeg's header for its own lavfi source carries no VUI: compare the frames, and the
        // size, rate and colour fields of the header.
        let headerEnd = { (data: Data) in data.firstIndex(of: 0x0A)! }
        #expect(ours[headerEnd(ours)...] == theirs[headerEnd(theirs)...])
        let rawFFmpeg = try run("ffmpeg", ["-v", "error", "-i", source, "-f", "rawvideo", "-"]).stdout
        #expect(try Data(contentsOf: URL(fileURLWithPath: raw)) == rawFFmpeg)
    }

    @Test func framemd5MatchesFFmpeg() throws {
        let source = try ffmpegY4M(frames: 8)
        let ours = temporaryPath(".framemd5")
        defer { for path in [source, ours] { try? FileManager.default.removeItem(atPath: path) } }
        let reader = try Y4MReader(path: source)
        let writer = try FrameMD5Writer(path: ours, frameRate: reader.frameRate)
        var index: Int64 = 0
        while let picture = try reader.next() {
            try writer.write(picture, at: reader.frameRate.time(ofFrame: index), fieldOrder: .progressive)
            index += 1
        }
        try writer.finish()
        let theirs = try run("ffmpeg", ["-v", "error", "-i", source, "-f", "framemd5", "-"]).stdoutText
        let lines = { (text: String) in text.split(separator: "\n").filter { !$0.hasPrefix("#") } }
        #expect(lines(try String(contentsOfFile: ours, encoding: .utf8)) == lines(theirs))
    }

    @Test func psnrIsFFmpegsAverage() throws {
        let a = try ffmpegY4M(frames: 4)
        let b = temporaryPath(".y4m")
        defer { for path in [a, b] { try? FileManager.default.removeItem(atPath: path) } }
        let noisy = try run("ffmpeg", ["-v", "error", "-i", a, "-vf", "noise=alls=20:allf=t", b])
        try #require(noisy.status == 0)
        var meter = PSNRMeter()
        let x = try Y4MReader(path: a), y = try Y4MReader(path: b)
        while let p = try x.next(), let q = try y.next() { try meter.add(p, q) }
        let result = try run("ffmpeg", ["-v", "info", "-i", b, "-i", a, "-lavfi", "psnr", "-f", "null", "-"]).stderrText
        let average = try #require(result.range(of: "average:").flatMap { Double(result[$0.upperBound...].prefix { $0 != " " }) })
        #expect(abs(meter.average - average) < 0.005, "\(meter.average) vs ffmpeg \(average)")
        #expect(meter.frameCount == 4)
    }

    @Test func pngSequencesAreReadByFFmpeg() throws {
        let source = try ffmpegY4M(frames: 3)
        let directory = temporaryPath("")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: source); try? FileManager.default.removeItem(atPath: directory) }
        let writer = try PNGSequenceWriter(pattern: directory + "/f-%03d.png")
        let reader = try Y4MReader(path: source)
        while let picture = try reader.next() { try writer.write(picture, at: .zero, fieldOrder: .progressive) }
        try writer.finish()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["f-001.png", "f-002.png", "f-003.png"])
        let probe = try run("ffmpeg", ["-v", "error", "-i", directory + "/f-002.png", "-f", "null", "-"])
        #expect(probe.status == 0 && probe.stderrText.isEmpty)
        #expect(PNGSequenceWriter.expand("a%d.png", number: 12) == "a12.png" && PNGSequenceWriter.expand("one.png", number: 3) == "one.png")
    }
}

@Suite("Media files: bad input")
struct MediaIOBadInputTests {
    @Test func aFileThatIsNotY4M() throws {
        let path = temporaryPath(".y4m")
        try Data("not a y4m\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect { try Y4MReader(path: path) } throws: { ($0 as? MediaIOError)?.code == .invalidData && "\($0)".contains("YUV4MPEG2") }
    }

    @Test func aCutFrameIsAnErrorWithItsOffset() throws {
        let path = temporaryPath(".y4m")
        let header = "YUV4MPEG2 W16 H16 F25:1 C420jpeg\n"
        try Data((header + "FRAME\n").utf8 + [UInt8](repeating: 1, count: 100)).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try Y4MReader(path: path)
        #expect { _ = try reader.next() } throws: { ($0 as? MediaIOError)?.byteOffset == header.utf8.count + 6 }
    }

    @Test func hugeDimensionsAreRefused() throws {
        #expect(throws: MediaIOError.self) { try Y4MHeader(parsing: Array("YUV4MPEG2 W99999 H16 F25:1".utf8)) }
        #expect(throws: MediaIOError.self) { try Y4MHeader(parsing: Array("YUV4MPEG2 W16 H16 F0:1".utf8)) }
    }

    /// A header declaring pictures over the limits is refused before any picture is
    /// allocated, naming the size and the limit; raising the limit lets it through.
    @Test func picturesOverTheLimitsAreRefused() throws {
        let path = temporaryPath(".y4m")
        try Data("YUV4MPEG2 W16384 H16384 F25:1 C444p12\nFRAME\n".utf8 + [0, 1, 2]).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect { try Y4MReader(path: path) } throws: {
            ($0 as? MediaIOError)?.code == .limitExceeded && "\($0)".contains("16384x16384 (268435456 pixels), over the limit of 35651584")
        }
        let reader = try Y4MReader(path: path, limits: PictureLimits(maximumPixels: 1 << 28))
        #expect { _ = try reader.next() } throws: { "\($0)".contains("cut off") }
        #expect { try RawVideoReader(path: path, width: 9000, height: 9000, format: .yuv420p, frameRate: FrameRate(25, 1)) } throws: {
            ($0 as? MediaIOError)?.code == .limitExceeded
        }
    }

    /// From a pipe, a FRAME line alone does not make the reader allocate the picture: it ends
    /// with a clean error (the picture is allocated once its first row has arrived).
    @Test func aStreamedFrameIsAllocatedOnlyWhenItsDataComes() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let header = "YUV4MPEG2 W8192 H4352 F25:1 C444p12\nFRAME\n"
        _ = header.utf8CString.withUnsafeBytes { write(descriptors[1], $0.baseAddress, $0.count - 1) }
        close(descriptors[1])
        defer { close(descriptors[0]) }
        let reader = try Y4MReader(path: "/dev/fd/\(descriptors[0])")
        #expect { _ = try reader.next() } throws: { "\($0)".contains("cut off") }
    }

    @Test func rawVideoMustHoldWholeFrames() throws {
        let path = temporaryPath(".yuv")
        try Data([UInt8](repeating: 0, count: 16 * 16 * 3 / 2 + 5)).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect { try RawVideoReader(path: path, width: 16, height: 16, format: .yuv420p, frameRate: FrameRate(25, 1)) } throws: {
            "\($0)".contains("not a whole number")
        }
    }
}
