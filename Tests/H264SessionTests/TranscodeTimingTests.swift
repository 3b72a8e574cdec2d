import Foundation
import H264Codec
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import TestSupport
import SampleFlow
import Testing

/// Times that are not one constant rate from 0, cuts inside a group of pictures, and stopping
/// early: what users' files and hands bring to transcode, split, concat and chunks.
extension TranscodeTests {
    /// A variable-rate MP4 with B-frames (every fifth frame of 30 fps dropped: frames last 1 or
    /// 2 frame times), or a 29.97 fps one in a 1000-tick timescale (durations 33 and 34 ticks).
    static func unevenSource(_ directory: String, variableRate: Bool) throws -> String {
        let path = directory + (variableRate ? "/vfr.mp4" : "/ticks.mp4")
        let input = variableRate ? "testsrc2=size=320x240:rate=30" : "testsrc2=size=320x240:rate=30000/1001"
        let timing = variableRate ? ["-vf", "select=not(eq(mod(n\\,5)\\,2))", "-vsync", "vfr"] : ["-video_track_timescale", "1000"]
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", input, "-frames:v", "90"] + timing
                        + ["-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-pix_fmt", "yuv420p", "-y", path])
        return path
    }

    /// x264 with B-frames over uneven durations: each output sample's duration differed from
    /// its decode step, and the writer refused the file ("decode time … before the previous
    /// sample's end").
    @Test(.requires(.x264), arguments: [true, false])
    func unevenTimesWithBFramesKeepEveryPresentationTime(variableRate: Bool) throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.unevenSource(work, variableRate: variableRate)
        let sourceTimes = try Self.presentationTimes(source)
        if variableRate {
            let steps = Set(zip(sourceTimes.compactMap(Double.init), sourceTimes.compactMap(Double.init).dropFirst()).map { Int((($1 - $0) * 30).rounded()) })
            #expect(steps == [1, 2], "frames last one or two frame times: \(steps)")
        }
        let output = work + "/out.mp4"
        var options = Transcoder.Options(preset: "veryfast")
        options.encoder.bFrames = 3
        let summary = try Transcoder(options: options).run(path: source, into: .movie(path: output, options: .init()))
        #expect(summary.encodedFrames == sourceTimes.count)
        #expect(try Self.presentationTimes(output) == sourceTimes)
        #expect(try ffmpegFrameHashes(output).count == sourceTimes.count)
    }

    /// Files that each start at 0, one with B-frames (a reorder delay) and one without, joined
    /// in both orders: every frame once, in order, none shown twice or lost.
    @Test(.requires(.x264), arguments: [false, true])
    func joiningFilesOfDifferentReorderDelays(bFramesFirst: Bool) throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        func clip(_ name: String, bFrames: Int) throws -> String {
            let path = work + "/" + name
            _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "30", "-c:v", "libx264",
                                   "-x264-params", "bframes=\(bFrames)", "-pix_fmt", "yuv420p", "-y", path])
            return path
        }
        let withB = try clip("b.mp4", bFrames: 3), withoutB = try clip("p.mp4", bFrames: 0)
        let inputs = bFramesFirst ? [withB, withoutB] : [withoutB, withB]
        let joined = work + "/joined.mp4"
        _ = try MovieConcatenator().concatenate(inputs, into: joined)
        let times = try Self.presentationTimes(joined).compactMap(Double.init)
        #expect(times.count == 60)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 > 0.039 }, "each frame after the last, none twice: \(times)")
        #expect(abs(times[30] - times[29] - 0.04) < 0.001 || !bFramesFirst, "with the longer delay first, the second file follows frame after frame")
        #expect(try ffmpegFrameHashes(joined) == ffmpegFrameHashes(inputs[0]) + ffmpegFrameHashes(inputs[1]))
    }

    /// A copy cut mid-GOP (`ffmpeg -ss 1.5 -i x -c copy`): its edit list hides the pre-roll
    /// from the sync sample before the cut. Split and joined again, the pre-roll stays hidden.
    @Test func concatOfSplitOfAnEditedMovieHidesItsPreRoll() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        let cut = work + "/cut.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-ss", "1.5", "-i", source, "-c", "copy", "-y", cut])
        let expected = try ffmpegFrameHashes(cut)
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1)).split(path: cut, into: pieces)
        let joined = work + "/joined.mp4"
        _ = try MovieConcatenator().concatenate(index.segments.map { pieces + "/" + $0.file }, into: joined)
        #expect(try ffmpegFrameHashes(joined) == expected, "the frames the cut shows, and no pre-roll")
        // ffmpeg's edit starts at 1.5 s exactly, 1.5 ms before the first frame it shows, and
        // ffprobe reads that frame at 0; the joined movie's edit starts at the frame: 0.0015.
        let times = try Self.presentationTimes(joined).compactMap(Double.init), theirs = try Self.presentationTimes(cut).compactMap(Double.init)
        #expect(times.count == theirs.count && zip(times, theirs).allSatisfy { abs($0 - $1) < 0.002 }, "\(times.prefix(3)) vs \(theirs.prefix(3))")
    }

    /// --start and --duration: the timecode of the output's first frame is the input's at that
    /// frame, and reading stops at the end of the duration (not at the end of the file).
    @Test(.requires(.x264)) func aPartKeepsItsTimecodeAndStopsReadingAtItsEnd() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/source.mov"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "250", "-c:v", "libx264",
                               "-g", "25", "-timecode", "10:00:00:00", "-y", source])
        var options = Transcoder.Options(preset: "ultrafast")
        options.start = MediaTime(value: 2, timescale: 1)
        options.duration = MediaTime(value: 1, timescale: 1)
        let output = work + "/part.mov"
        var lastFraction = 0.0
        let summary = try Transcoder(options: options).run(path: source, into: .movie(path: output, options: .init(fileType: .mov))) {
            lastFraction = $0.fraction ?? 1
        }
        #expect(summary.encodedFrames == 25)
        let tags = try run("ffprobe", ["-v", "error", "-show_entries", "stream_tags=timecode", "-of", "csv=p=0", output]).stdoutText
        #expect(tags.contains("10:00:02:00"), "ffprobe reads \(tags)")
        #expect(lastFraction < 0.5, "read \(lastFraction) of a 10 s file for 2 s to 3 s")
    }

    /// --fps with chunks: the pictures kept are those on screen at each multiple of the
    /// interval, wherever a chunk starts, so chunks keep the one-piece frames.
    @Test(.requires(.x264)) func droppingToARateInChunksKeepsTheOnePieceFrames() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        var options = Transcoder.Options(preset: "ultrafast")
        options.encoder.threads = 1
        options.interval = MediaTime(value: 1, timescale: 10)
        let whole = work + "/whole.mp4", chunked = work + "/chunked.mp4"
        let summary = try Transcoder(options: options).run(path: source, into: .movie(path: whole, options: .init()))
        #expect(summary.encodedFrames == 51, "150 frames at 29.97 fps last 5.005 s: the multiples of 0.1 s from 0 to 5.0")
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        _ = try ChunkedTranscoder(options: options, chunks: 3).run(path: source, into: chunked, workDirectory: pieces)
        #expect(try Self.presentationTimes(chunked) == Self.presentationTimes(whole))
    }

    /// The first chunk that fails stops the others (their processes terminated) and is the
    /// error; cancelling the caller's task stops them all the same.
    @Test func aFailedChunkOrACancelStopsEveryChunk() async throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 90)
        var failingChunks = ChunkedTranscoder(options: .init(), chunks: 2, parallelism: 2)
        failingChunks.execution = .processes { input, _, _ in
            input.hasSuffix("chunk-00000.mp4") ? ["/bin/sh", "-c", "sleep 0.3; echo 'broken' >&2; exit 4"] : ["/bin/sleep", "60"]
        }
        let failing = failingChunks
        try FileManager.default.createDirectory(atPath: work + "/a", withIntermediateDirectories: false)
        let clock = ContinuousClock()
        let start = clock.now
        #expect {
            try failing.run(path: source, into: work + "/failed.mp4", workDirectory: work + "/a")
        } throws: { error in
            guard case .chunkFailed(0, let reason) = error as? SessionError else { return false }
            return reason.contains("exited with 4") && reason.contains("broken")
        }
        #expect(clock.now - start < .seconds(50), "the sleeping chunk (60 s) was stopped, not waited for")
        var sleepingChunks = failingChunks
        sleepingChunks.execution = .processes { _, _, _ in ["/bin/sleep", "60"] }
        let sleeping = sleepingChunks
        try FileManager.default.createDirectory(atPath: work + "/b", withIntermediateDirectories: false)
        // Timed inside the task: on a loaded machine the task may start late (then already
        // cancelled); either way it must not wait for its 60-second chunks.
        let task = Task { () -> (Result<ChunkedTranscoder.Summary, any Error>, Duration) in
            let began = clock.now
            let result = Result { try sleeping.run(path: source, into: work + "/cancelled.mp4", workDirectory: work + "/b") }
            return (result, clock.now - began)
        }
        try await Task.sleep(for: .milliseconds(500))
        task.cancel()
        let (result, elapsed) = await task.value
        #expect(elapsed < .seconds(50), "the sleeping chunks (60 s) were stopped")
        if case .failure(let error) = result, case .cancelled = error as? SessionError {} else { Issue.record("expected .cancelled, got \(result)") }
        for name in ["failed.mp4", "cancelled.mp4"] { #expect(!FileManager.default.fileExists(atPath: work + "/" + name)) }
    }
}
