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
        let byDuration = try h264kit(["transcode", source, work + "/every.mp4", "--preset", "ultrafast", "--threads", "1", "--chunk-duration", "1"])
        #expect(byDuration.status == 0 && byDuration.stderr.contains("4 chunks"), "\(byDuration.stderr)")
        #expect(try Self.times(work + "/every.mp4") == Self.times(source))
    }

    /// Ctrl-C stops a transcode, in one piece or in chunks: exit 130 saying so, no output, no
    /// partial file, no chunk left in TMPDIR, no chunk process left running.
    @Test(arguments: [false, true]) func anInterruptedTranscodeLeavesNothing(chunks: Bool) throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/source.mp4", temporary = work + "/tmp"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-frames:v", "500", "-c:v", "libx264",
                               "-preset", "ultrafast", "-g", "50", "-y", source])
        let transcode = try ChildProcess(try h264kitURL(), ["transcode", source, work + "/out.mp4", "--preset", "veryslow", "--threads", "1"]
                                             + (chunks ? ["--chunks", "2"] : []), environment: ["TMPDIR": temporary])
        // (A blocking wait: the whole suite keeps the cooperative pool busy, and an async sleep
        // resumed only after the transcode had ended.)
        transcode.waitUntilHandling(SIGINT)
        _ = transcode.wait(seconds: 1.5)
        #expect(transcode.wait(seconds: 0) == nil, "still transcoding when interrupted")
        kill(transcode.pid, SIGINT)
        let status = transcode.wait(seconds: 20)
        #expect(status == 130, "ended by the interrupt with 130 (as a shell reports Ctrl-C), not killed: \(String(describing: status))")
        #expect(transcode.stderrText.contains("interrupted") && transcode.stderrText.contains("cancelled"), "\(transcode.stderrText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: work).sorted() == ["source.mp4", "tmp"], "no output, no partial file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty, "no chunk left behind")
        // No process left whose command line names a chunk of this run.
        let running = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { $0.allSatisfy(\.isNumber) }.filter { pid in
            let commandLine = (try? readFile("/proc/\(pid)/cmdline")).map { String(decoding: $0, as: UTF8.self) } ?? ""
            return commandLine.contains(temporary + "/h264kit-chunks")
        }
        #expect(running.isEmpty, "chunk processes left: \(running)")
    }

    /// --report writes the transcode's summary as JSON (what a chunk's process hands its parent).
    @Test func theReportSaysWhatTheTranscodeDid() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/source.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "50", "-c:v", "libx264",
                               "-g", "25", "-y", source])
        for extra in [[], ["--chunks", "2"]] {
            let result = try h264kit(["transcode", source, work + "/out.mp4", "--preset", "ultrafast", "--report", work + "/report.json"] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: work + "/report.json"))) as? [String: Any])
            #expect(report["encodedFrames"] as? Int == 50 && report["decodedFrames"] as? Int == 50 && report["concealedFrames"] as? Int == 0, "\(report)")
            #expect(report["width"] as? Int == 160 && report["height"] as? Int == 120)
            #expect((report["bytes"] as? Int ?? 0) > 0)
        }
    }

    /// Carrying the timecode and metadata over from an Annex-B stream (a Ray run of a .264
    /// source does): nothing to carry, said as a warning, and the join is made.
    @Test func concatCarryingOverFromAStreamWarns() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let stream = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
        let split = try h264kit(["split", stream, work + "/segs", "--segment-duration", "1"])
        #expect(split.status == 0, "\(split.stderr)")
        let joined = try h264kit(["concat", work + "/segs/index.json", work + "/joined.mp4", "--carry-over-from", stream])
        #expect(joined.status == 0 && joined.stderr.contains("not a movie"), "\(joined.stderr)")
        #expect(try ffmpegFrameHashes(work + "/joined.mp4") == ffmpegFrameHashes(stream, format: "h264"))
        let missing = try h264kit(["concat", work + "/segs/index.json", work + "/joined2.mp4", "--carry-over-from", work + "/missing.mov"])
        #expect(missing.status != 0 && missing.stderr.contains("missing.mov"))
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
        #expect(badChunks.status != 0 && badChunks.stderr.contains("chunk ") && badChunks.stderr.contains("nonsense"), "\(badChunks.stderr)")
        #expect(!FileManager.default.fileExists(atPath: work + "/out.mp4"))
        let noDuration = try h264kit(["split", work + "/bad.264", work + "/segs"])
        #expect(noDuration.status != 0)
    }
}
