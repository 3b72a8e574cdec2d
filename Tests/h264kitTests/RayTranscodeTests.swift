import Foundation
import TestSupport
import Testing

/// `scripts/ray/transcode.py` on a one-node Ray cluster inside its own network namespace
/// (`scripts/ray/in-namespace.sh`: only loopback exists there).
@Suite("Chunked transcode on Ray", .requires(.ffmpeg, .ffprobe, .python3, .ray, .unshare))
struct RayTranscodeTests {
    @Test func rayTasksGiveTheBytesOfChunksAndRetryAFailedChunk() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-ray-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: work) }
        // A drop-frame MOV with a timecode track and a title, 4 s in GOPs of 1 s.
        let source = work + "/source.mov"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30000/1001", "-frames:v", "120", "-c:v", "libx264",
                               "-preset", "veryfast", "-g", "30", "-timecode", "01:30:15;07", "-metadata", "title=Ray", "-y", source])
        let options = ["--preset", "veryfast", "--crf", "26", "--threads", "1"]
        let local = try h264kit(["transcode", source, work + "/chunks.mov", "--chunks", "3"] + options)
        #expect(local.status == 0, "\(local.stderr)")

        let root = Checkout.root.path
        let ray = try runProcess(URL(fileURLWithPath: root + "/scripts/ray/in-namespace.sh"),
                                 ["python3", root + "/scripts/ray/transcode.py", source, work + "/ray.mov", "--chunks", "3", "--h264kit", try h264kitURL().path,
                                  "--work", work + "/ray", "--report", work + "/report.json", "--inject-failures", "--"] + options)
        #expect(ray.status == 0, "\(ray.stderrText)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: work + "/report.json"))) as? [String: Any]
        #expect(report?["chunks"] as? Int == 3, "\(ray.stdoutText)")
        // Every chunk failed once (the injected failure) and was retried.
        let attempted = try FileManager.default.contentsOfDirectory(atPath: work + "/ray").filter { $0.hasSuffix(".attempted") }
        #expect(attempted.count == 3)
        let chunked = try Data(contentsOf: URL(fileURLWithPath: work + "/chunks.mov"))
        let onRay = try Data(contentsOf: URL(fileURLWithPath: work + "/ray.mov"))
        #expect(chunked == onRay, "the Ray result is byte-identical to transcode --chunks 3")
        let tags = try run("ffprobe", ["-v", "error", "-show_entries", "stream_tags=timecode:format_tags=title", "-of", "csv=p=0", work + "/ray.mov"]).stdoutText
        #expect(tags.contains("01:30:15;07") && tags.contains("Ray"), "ffprobe reads: \(tags)")
        let frames = try run("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", work + "/ray.mov"])
        #expect(frames.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "120")
    }
}
