import Foundation
import H264Bitstream
import H264Codec
import MediaCore
import TestSupport
import Testing

/// The per-frame MD5s of pictures in FFmpeg's rawvideo layout (what `-f framemd5` hashes).
func frameHashes(_ pictures: [PixelBuffer]) throws -> [String] {
    pictures.map { picture in
        var md5 = MD5()
        picture.forEachPackedRow { md5.update($0) }
        return md5.finalize()
    }
}

/// Decodes an Annex-B stream's samples with a decoder made from their description.
func decodeAll(_ stream: [UInt8], threading: H264Decoder.Threading = .single) throws -> [DecodedPicture] {
    let (samples, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: FrameRate(25, 1)))
    var decoder = try H264Decoder(formatDescription: samples[0].videoFormatDescription!, threading: threading)
    var pictures: [DecodedPicture] = []
    for (index, sample) in samples.enumerated() {
        while try !decoder.send(sample.data, timestamp: Int64(index)) {
            while let picture = try decoder.receive() { pictures.append(picture) }
        }
        while let picture = try decoder.receive() { pictures.append(picture) }
    }
    try decoder.sendEndOfStream()
    while let picture = try decoder.receive() { pictures.append(picture) }
    return pictures
}

@Suite struct DecoderTests {
    @Test(.requires(.ffmpeg), arguments: ["cisco-bframe-cabac.264", "jcodec-test_b_8x8.264", "jcodec-i8x8-high.264"])
    func framesMatchFFmpeg(_ fixture: String) throws {
        let stream = try Checkout.fixture(fixture)
        let pictures = try decodeAll(stream)
        let path = try Checkout.temporaryFile(stream)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let expected = try ffmpegFrameHashes(path, format: "h264")
        #expect(try frameHashes(pictures.map(\.pixelBuffer)) == expected)
    }

    @Test(.requires(.ffmpeg, .x264)) func frameThreadsGiveTheSameFrames() throws {
        let stream = try x264Stream(frames: 30, size: "320x240", arguments: ["--bframes", "3"])
        let single = try decodeAll(stream)
        let threaded = try decodeAll(stream, threading: .init(count: 4))
        #expect(single.count == 30)
        #expect(try frameHashes(single.map(\.pixelBuffer)) == frameHashes(threaded.map(\.pixelBuffer)))
        // Timestamps come back with their pictures, in presentation order.
        #expect(Set(single.compactMap(\.timestamp)) == Set(0..<30))
    }

    @Test(.requires(.ffmpeg, .x264)) func highBitDepthAndChromaFormats() throws {
        for (pixelFormat, profile) in [("yuv420p10le", "high10"), ("yuv422p", "high422"), ("yuv444p10le", "high444")] {
            let stream = try x264Stream(frames: 5, size: "64x48", sourcePixelFormat: pixelFormat, arguments: ["--profile", profile, "--output-csp", pixelFormat.hasPrefix("yuv444") ? "i444" : pixelFormat.hasPrefix("yuv422") ? "i422" : "i420", "--output-depth", pixelFormat.contains("10") ? "10" : "8"])
            let pictures = try decodeAll(stream)
            #expect(pictures.first?.pixelBuffer.format.name == pixelFormat)
            let path = try Checkout.temporaryFile(stream)
            defer { try? FileManager.default.removeItem(atPath: path) }
            do { let expected = try ffmpegFrameHashes(path, format: "h264")
                #expect(try frameHashes(pictures.map(\.pixelBuffer)) == expected, "\(pixelFormat)")
            }
        }
    }

    @Test(.requires(.ffmpeg)) func conversionMatchesFFmpegScaling() throws {
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        let pictures = try decodeAll(stream)
        var converter = try PixelConverter(format: .rgb24)
        let rgb = try pictures.map { try converter.convert($0.pixelBuffer) }
        #expect(rgb.allSatisfy { $0.format == .rgb24 && $0.width == pictures[0].pixelBuffer.width })
        let path = try Checkout.temporaryFile(stream)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let expected = try ffmpegFrameHashes(path, format: "h264", extra: ["-pix_fmt", "rgb24"])
        #expect(try frameHashes(rgb) == expected)
    }

    @Test(.requires(.ffmpeg)) func pngFilesAreReadByFFmpeg() throws {
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        let picture = try #require(try decodeAll(stream).first)
        var encoder = try PNGEncoder()
        let png = try encoder.encode(picture.pixelBuffer)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        let path = try Checkout.temporaryFile(png, suffix: ".png")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let decoded = try ffmpegFrameHashes(path, extra: ["-pix_fmt", "rgb24"])
        var converter = try PixelConverter(format: .rgb24)
        #expect(try decoded == frameHashes([try converter.convert(picture.pixelBuffer)]))
    }

    @Test func garbageIsAnErrorOrNothingNeverACrash() throws {
        var decoder = try H264Decoder(formatDescription: nil, threading: .single)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let bytes = [0, 0, 1] + (0..<500).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? decoder.send(BlockBuffer(bytes), timestamp: 0)
            while let _ = try? decoder.receive() {}
        }
        try decoder.sendEndOfStream()
        while let _ = try? decoder.receive() {}
    }
}

