import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import MediaCore
import TestSupport
import Testing

/// Free bytes in the temporary directory's file system.
private func freeTemporarySpace() -> UInt64 {
    var info = statvfs()
    guard statvfs(FileManager.default.temporaryDirectory.path, &info) == 0 else { return 0 }
    return UInt64(info.f_bavail) * UInt64(info.f_frsize)
}

/// Files past 4 GiB, for real: `co64` chunk offsets and a 64-bit `mdat` size. Each picture of a
/// small stream carries a 62 MB filler NAL unit (which decoders skip), one buffer shared by
/// every sample, so the test writes 4.3 GB without holding it. The two layouts run one after the
/// other: at most one movie and, for a faststart file system without `fallocate`'s insert, its
/// copy exist at once (8.6 GB; 10 GB asked, for a margin).
@Suite("Files over 4 GiB", .serialized, .enabled(if: freeTemporarySpace() > 10 << 30, "needs 10 GB free in the temporary directory"))
struct LargeFileTests {
    static let fillerSize = 62 << 20

    static func filler() -> BlockBuffer {
        var bytes = [UInt8](repeating: 0xFF, count: fillerSize + 4)
        let length = fillerSize
        for i in 0..<4 { bytes[i] = UInt8(truncatingIfNeeded: length >> (24 - 8 * i)) }
        bytes[4] = 0x0C  // filler data
        bytes[bytes.count - 1] = 0x80  // rbsp trailing bits
        return BlockBuffer(bytes)
    }

    @Test(.serialized, .requires(.ffmpeg, .x264), arguments: [false, true])
    func chunkOffsetsGoTo64Bits(faststart: Bool) throws {
        let stream = try x264Stream(frames: 70, size: "64x64", arguments: ["--bframes", "2", "--keyint", "10"])
        let (samples, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .fixed(FrameRate(25, 1)))
        let filler = Self.filler()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-large-\(UUID().uuidString).mp4").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MovieWriter(path: path, options: .init(layout: faststart ? .faststart : .progressive))
        var padded: [SampleBuffer] = []
        for sample in samples {
            var big = sample
            big.data = BlockBuffer(chaining: [sample.data, filler])
            padded.append(big)
            try writer.append(big)
        }
        let summary = try writer.finish()
        #expect(summary.fileSize > UInt64(UInt32.max))

        let reader = try MovieReader(path: path)
        #expect(reader.warnings.isEmpty)
        let moov = try #require(reader.topLevelBoxes.first { $0.type == "moov" })
        let index = reader.data[moov.start..<moov.end].bytes
        #expect(offset(of: "co64", in: index) != nil && offset(of: "stco", in: index) == nil)
        let mdat = try #require(reader.topLevelBoxes.first { $0.type == "mdat" })
        #expect(mdat.payload.lowerBound - mdat.start == 16, "a 64-bit mdat size")
        #expect(mdat.end == (faststart ? reader.fileSize : moov.start))
        let read = try reader.sampleBuffers(track: 0)
        #expect(read.count == padded.count)
        // The last samples sit past 4 GiB: their bytes must be where the offsets say.
        for index in [0, read.count / 2, read.count - 1] {
            #expect(read[index].data == padded[index].data)
        }
        let raw = try Checkout.temporaryFile(stream)
        defer { try? FileManager.default.removeItem(atPath: raw) }
        do { let expected = try ffmpegFrameHashes(raw, format: "h264")
            #expect(try ffmpegFrameHashes(path) == expected)
        }
    }
}
