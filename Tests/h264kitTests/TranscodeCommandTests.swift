import Foundation
import TestSupport
import Testing

@Suite("h264kit transcode, split, concat", .requires(.ffmpeg, .ffprobe, .x264))
struct TranscodeCommandTests {
    static func work() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func times(_ path: String) throws -> [String] {
        try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path])
            .stdoutText.split(separator: "\n").map { String($0.split(separator: ",")[0]) }.filter { !$0.isEmpty }
    }

    @Test func splitThenConcatOfTheIndexGivesBackTheStream() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = Checkout.fixtures.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
        let split = try h264kit(["split", source, work + "/segs", "--segment-duration", "1"])
        #expect(split.status == 0, "\(split.stderr)")
        let index = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: work + "/segs/index.json"))) as? [String: Any]
        let segments = index?["segments"] as? [[String: Any]] ?? []
        #expect(segments.count >= 2)
        let joined = try h264kit(["concat", work + "/segs/index.json", work + "/joined.mp4"])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(try ffmpegFrameHashes(work + "/joined.mp4") == ffmpegFrameHashes(source, format: "h264"))
    }

    @Test func transcodeWithChunksHasTheFramesAndTimesOfOnePiece() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/source.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=24000/1001", "-frames:v", "96", "-c:v", "libx264",
                               "-preset", "veryfast", "-g", "24", "-y", source])
        let one = try h264kit(["transcode", source, work + "/one.mp4", "--preset", "ultrafast", "--threads", "1"])
        #expect(one.status == 0, "\(one.stderr)")
        let chunked = try h264kit(["transcode", source, work + "/chunked.mp4", "--preset", "ultrafast", "--threads", "1", "--chunks", "2"])
        #expect(chunked.status == 0, "\(chunked.stderr)")
        #expect(try Self.times(work + "/one.mp4") == Self.times(source))
        #expect(try Self.times(work + "/chunked.mp4") == Self.times(source))
    }

    @Test func badInputAndOptionsFailWithAMessageAndNoOutput() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Data("not a video".utf8).write(to: URL(fileURLWithPath: work + "/bad.264"))
        let bad = try h264kit(["transcode", work + "/bad.264", work + "/out.mp4"])
        #expect(bad.status != 0 && bad.stderr.contains("bad.264"))
        #expect(!FileManager.default.fileExists(atPath: work + "/out.mp4"))
        let chunksToStream = try h264kit(["transcode", work + "/bad.264", work + "/out.264", "--chunks", "2"])
        #expect(chunksToStream.status != 0 && chunksToStream.stderr.contains("--chunks"))
        // An option only the chunks' own processes refuse: the run fails, naming the chunk.
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "50", "-c:v", "libx264",
                               "-g", "10", "-y", work + "/good.mp4"])
        let badChunks = try h264kit(["transcode", work + "/good.mp4", work + "/out.mp4", "--chunks", "2", "--profile", "nonsense"])
        #expect(badChunks.status != 0 && badChunks.stderr.contains("chunk 0") && badChunks.stderr.contains("nonsense"), "\(badChunks.stderr)")
        #expect(!FileManager.default.fileExists(atPath: work + "/out.mp4"))
        let noDuration = try h264kit(["split", work + "/bad.264", work + "/segs"])
        #expect(noDuration.status != 0)
    }
}
