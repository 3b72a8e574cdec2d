import Foundation
import H264Codec
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import TestSupport
import SampleFlow
import Testing

/// Transcode, split and concat through the library, with ffmpeg/ffprobe as the oracle.
@Suite("Transcoder, MovieSplitter, MovieConcatenator, ChunkedTranscoder", .requires(.ffmpeg, .ffprobe))
struct TranscodeTests {
    /// A scratch directory, removed by the caller.
    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-transcode-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// An MP4 made by ffmpeg/x264 with B-frames; `openGOP` makes non-IDR I pictures with
    /// leading B-frames that refer back across them.
    static func source(_ directory: String, frames: Int = 150, openGOP: Bool = false, container: String = "mp4") throws -> String {
        let path = directory + "/source.\(container)"
        var x264 = "keyint=30:min-keyint=30:scenecut=0:bframes=3"
        if openGOP { x264 += ":open-gop=1" }
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30000/1001", "-frames:v", "\(frames)",
                               "-c:v", "libx264", "-preset", "veryfast", "-x264-params", x264, "-pix_fmt", "yuv420p", "-y", path])
        return path
    }

    /// Each frame's presentation time as ffprobe reads it, in its stream's time base.
    static func presentationTimes(_ path: String) throws -> [String] {
        try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path])
            .stdoutText.split(separator: "\n").map { String($0.split(separator: ",")[0]) }.filter { !$0.isEmpty }
    }

    /// Packets in file order: pts, dts, flags.
    static func packets(_ path: String) throws -> String {
        try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,dts_time,flags", "-of", "csv=p=0", path]).stdoutText
    }

    @Test(arguments: [false, true])
    func concatOfSplitGivesBackTheFramesAndTimes(openGOP: Bool) throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, openGOP: openGOP)
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1)).split(path: source, into: work)
        #expect(index.segments.count >= 3)
        #expect(index.segments.map(\.file) == index.segments.map(\.file).sorted())
        #expect(index.segments.reduce(0) { $0 + $1.frameCount } == 150)
        // Every segment stands alone: ffmpeg decodes all its frames, and it keeps its times.
        for segment in index.segments {
            let path = work + "/" + segment.file
            #expect(try ffmpegFrameHashes(path).count == segment.frameCount, "\(segment.file) decodes whole on its own")
            let times = try Self.presentationTimes(path).compactMap(Double.init)
            #expect(abs((times.min() ?? -1) - segment.firstPresentationTime) < 1e-4, "\(segment.file) keeps its start time")
        }
        let joined = work + "/joined.mp4"
        let summary = try MovieConcatenator().concatenate(index.segments.map { work + "/" + $0.file }, into: joined)
        #expect(summary.shifts.allSatisfy { $0 == .zero })
        #expect(try ffmpegFrameHashes(joined) == ffmpegFrameHashes(source))
        #expect(try Self.presentationTimes(joined) == Self.presentationTimes(source))
        #expect(try Self.packets(joined) == Self.packets(source))
    }

    @Test func filesThatEachStartAtZeroAreJoinedOneAfterTheOther() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 60)
        let joined = work + "/twice.mp4"
        let summary = try MovieConcatenator().concatenate([source, source], into: joined)
        #expect(summary.shifts[1] > .zero)
        let times = try Self.presentationTimes(joined).compactMap(Double.init)
        #expect(times.count == 120)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 > $0 }, "times go on across the join")
    }

    @Test(.requires(.x264)) func transcodeKeepsEveryPresentationTime() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 90)
        let output = work + "/out.mp4"
        let summary = try Transcoder(options: .init(preset: "ultrafast", rateControl: .constantQuality(30))).run(path: source, into: .movie(path: output, options: .init()))
        #expect(summary.encodedFrames == 90 && summary.decodedFrames == 90)
        #expect(try Self.presentationTimes(output) == Self.presentationTimes(source))
        // A segment's transcode keeps the segment's place in time.
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1)).split(path: source, into: work)
        let second = work + "/" + index.segments[1].file
        let encodedSecond = work + "/second.mp4"
        _ = try Transcoder(options: .init(preset: "ultrafast")).run(path: second, into: .movie(path: encodedSecond, options: .init()))
        #expect(try Self.presentationTimes(encodedSecond) == Self.presentationTimes(second))
    }

    @Test(.requires(.x264)) func twoPassesAimAtTheBitRate() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 90)
        let output = work + "/out.mp4"
        var options = Transcoder.Options(preset: "ultrafast", rateControl: .averageBitRate(200))
        options.passes = 2
        let summary = try Transcoder(options: options).run(path: source, into: .movie(path: output, options: .init()))
        #expect(summary.encodedFrames == 90 && summary.width == 320 && summary.height == 240)
        let seconds = 90.0 * 1001 / 30000
        let kbps = Double(summary.bytes * 8) / seconds / 1000
        #expect(abs(kbps - 200) < 30, "two passes hit the rate: \(kbps) kbit/s")
        #expect(try Self.presentationTimes(output) == Self.presentationTimes(source))
    }

    @Test(.requires(.x264), arguments: [false, true]) func chunkedTranscodeHasTheOnePieceFramesAndTimes(openGOP: Bool) throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, openGOP: openGOP)
        var options = Transcoder.Options(preset: "ultrafast", rateControl: .constantQuality(26))
        options.encoder.threads = 1
        let whole = work + "/whole.mp4", chunked = work + "/chunked.mp4"
        _ = try Transcoder(options: options).run(path: source, into: .movie(path: whole, options: .init()))
        let pieces = work + "/pieces"
        try FileManager.default.createDirectory(atPath: pieces, withIntermediateDirectories: false)
        var reports: [ChunkedTranscoder.Progress] = []
        let summary = try ChunkedTranscoder(options: options, chunks: 2).run(path: source, into: chunked, workDirectory: pieces) { reports.append($0) }
        #expect(summary.chunks.count == 2)
        #expect(reports.last?.finishedChunks == 2 && reports.last?.chunks == 2, "progress reaches every chunk: \(reports)")
        #expect(try Self.presentationTimes(chunked) == Self.presentationTimes(whole))
        #expect(try ffmpegFrameHashes(chunked).count == 150)
    }

    /// The sound is copied, frame for frame, whole and in chunks, into a movie and a transport
    /// stream: the source's audio packets (a transport stream's after their ADTS headers: the
    /// same as ffmpeg's copy of the source to a transport stream) and decoded PCM; --no-audio
    /// (``Transcoder/Options/audio``) leaves it out.
    @Test(.requires(.x264)) func theSoundIsCopied() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/av.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                               "-t", "4", "-ac", "2", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-y", source])
        func audioPackets(_ path: String) throws -> [String] {
            try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_packets", "-show_data_hash", "md5", "-show_entries", "packet=data_hash",
                                "-of", "csv=p=0", path]).stdoutText.split(separator: "\n").map(String.init)
        }
        func pcm(_ path: String) throws -> Data { try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-f", "s16le", "-"]).stdout }
        var options = Transcoder.Options(preset: "ultrafast", rateControl: .constantQuality(30))
        options.encoder.threads = 1
        let whole = work + "/whole.mp4", chunked = work + "/chunked.mp4", stream = work + "/whole.ts", reference = work + "/reference.ts"
        let summary = try Transcoder(options: options).run(path: source, into: .movie(path: whole, options: .init()))
        #expect(summary.audioSamples > 150)
        _ = try ChunkedTranscoder(options: options, chunks: 2).run(path: source, into: chunked, workDirectory: work)
        _ = try Transcoder(options: options).run(path: source, into: SampleOutput(path: stream))
        _ = try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:a", "-c", "copy", "-y", reference])
        let expected = try audioPackets(source)
        #expect(try audioPackets(whole) == expected)
        #expect(try audioPackets(chunked) == expected)
        #expect(try audioPackets(stream) == audioPackets(reference))
        #expect(try pcm(whole) == pcm(source))
        #expect(try pcm(chunked) == pcm(source))
        options.audio = .none
        let silent = work + "/silent.mp4"
        #expect(try Transcoder(options: options).run(path: source, into: .movie(path: silent, options: .init())).audioSamples == 0)
        #expect(try audioPackets(silent).isEmpty)
    }

    @Test(.requires(.x264)) func startSeeksToTheSyncSampleBeforeItAndKeepsTimes() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        let movie = try MediaSource(path: source)
        #expect(movie.seek(toPresentationTime: MediaTime(seconds: 2.5, preferredTimescale: 90_000)))
        let first = try #require(try movie.next())
        #expect(first.isSync && first.presentationTime.seconds <= 2.5 && first.presentationTime.seconds > 2.5 - 31.0 * 1001 / 30000)
        var options = Transcoder.Options(preset: "ultrafast")
        options.start = MediaTime(seconds: 2.5, preferredTimescale: 90_000)
        options.duration = MediaTime(seconds: 1, preferredTimescale: 90_000)
        let output = work + "/part.mp4"
        let summary = try Transcoder(options: options).run(path: source, into: .movie(path: output, options: .init()))
        #expect(summary.decodedFrames == 30)  // 2.5 s to 3.5 s at 29.97 fps
        let expected = try Self.presentationTimes(source).filter { (2.5..<3.5).contains(Double($0)!) }
        #expect(try Self.presentationTimes(output) == expected)
    }

    @Test func chunksRunInChildProcessesAndAFailedOneFailsTheRun() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        // A "transcode" that copies each chunk: the pieces and the join are the process path's.
        var copying = ChunkedTranscoder(options: .init(), chunks: 2)
        copying.execution = .processes { input, output, _ in ["/bin/cp", input, output] }
        try FileManager.default.createDirectory(atPath: work + "/a", withIntermediateDirectories: false)
        let summary = try copying.run(path: source, into: work + "/copied.mp4", workDirectory: work + "/a")
        #expect(summary.chunks.map(\.encodedFrames).reduce(0, +) == 150 && summary.chunks.count == 2)
        #expect(try Self.presentationTimes(work + "/copied.mp4") == Self.presentationTimes(source))
        var failing = copying
        failing.execution = .processes { _, _, _ in ["/bin/sh", "-c", "echo 'no encoder here' >&2; exit 3"] }
        try FileManager.default.createDirectory(atPath: work + "/b", withIntermediateDirectories: false)
        #expect {
            try failing.run(path: source, into: work + "/failed.mp4", workDirectory: work + "/b")
        } throws: { error in
            guard case .chunkFailed(_, let reason) = error as? SessionError else { return false }
            return reason.contains("exited with 3") && reason.contains("no encoder here")
        }
        #expect(!FileManager.default.fileExists(atPath: work + "/failed.mp4"))
    }

    @Test func everySegmentKeepsTheTimecodeOfItsFirstFrameAndTheMetadata() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        // 25 fps, GOPs of 25 frames, timecode 10:00:00:00 (non-drop: frame n is 10:00:00:00 + n).
        let source = work + "/source.mov"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "100", "-c:v", "libx264",
                               "-g", "25", "-bf", "2", "-timecode", "10:00:00:00", "-metadata", "title=Seg", "-y", source])
        try FileManager.default.createDirectory(atPath: work + "/segs", withIntermediateDirectories: false)
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1), fileType: .mov).split(path: source, into: work + "/segs")
        #expect(index.segments.count == 4)
        var firstFrame = 0
        for segment in index.segments {
            let tags = try run("ffprobe", ["-v", "error", "-show_entries", "stream_tags=timecode:format_tags=title", "-of", "csv=p=0", work + "/segs/" + segment.file]).stdoutText
            let expected = String(format: "10:00:%02d:%02d", firstFrame / 25, firstFrame % 25)
            #expect(tags.contains(expected) && tags.contains("Seg"), "\(segment.file): ffprobe reads \(tags), expected \(expected)")
            firstFrame += segment.frameCount
        }
        // Joined again: the first segment's timecode is the source's.
        _ = try MovieConcatenator(options: .init(fileType: .mov, keepsStartTime: true)).concatenate(index.segments.map { work + "/segs/" + $0.file }, into: work + "/joined.mov")
        let joined = try run("ffprobe", ["-v", "error", "-show_entries", "stream_tags=timecode", "-of", "csv=p=0", work + "/joined.mov"]).stdoutText
        #expect(joined.contains("10:00:00:00"))
    }

    @Test(.requires(.x264)) func timecodeAndMetadataCarryOver() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 60)
        // The same samples in a MOV with a drop-frame timecode and a title.
        let movie = try MovieReader(path: source)
        let samples = try movie.sampleBuffers(track: movie.firstVideoTrackIndex!)
        let tagged = work + "/tagged.mov"
        let format = try TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: true)
        let writer = try MovieWriter(path: tagged, options: .init(fileType: .mov, timecode: try .init(format: format, start: try Timecode(parsing: "01:30:15;07")),
                                                                 metadata: [try MetadataItem(parsing: "title=Hello")]))
        for sample in samples { try writer.append(sample) }
        _ = try writer.finish()
        let output = work + "/out.mov"
        _ = try Transcoder(options: .init(preset: "ultrafast")).run(path: tagged, into: .movie(path: output, options: .init(fileType: .mov)))
        let tags = try run("ffprobe", ["-v", "error", "-show_entries", "stream_tags=timecode:format_tags=title", "-of", "csv=p=0", output]).stdoutText
        #expect(tags.contains("01:30:15;07") && tags.contains("Hello"), "ffprobe reads: \(tags)")
    }

    @Test(.requires(.x264)) func damagedInputIsTranscodedAndCounted() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 60, container: "h264")
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        // Damage the middle of the stream (slice data, not its start codes).
        for offset in stride(from: bytes.count / 2, to: bytes.count / 2 + 400, by: 7) where bytes[offset] > 1 { bytes[offset] ^= 0x55 }
        let damaged = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: damaged) }
        let output = work + "/out.mp4"
        let summary = try Transcoder(options: .init(preset: "ultrafast")).run(path: damaged, into: .movie(path: output, options: .init()))
        #expect(summary.encodedFrames > 0)
        #expect(summary.encodedFrames == summary.decodedFrames)
        #expect(summary.concealedFrames + summary.droppedFrames > 0, "the damage is counted: \(summary)")
        #expect(try ffmpegFrameHashes(output).count == summary.encodedFrames, "the output stays valid")
    }

    @Test func badOptionsAreErrors() throws {
        let work = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work, frames: 10)
        func isInvalidOption(_ error: any Error, _ words: String) -> Bool {
            if case .invalidOption(let reason) = error as? SessionError { return reason.contains(words) }
            if case .invalidOption(let reason) = error as? SampleFlowError { return reason.contains(words) }
            return false
        }
        // Each refused for the option itself, on an input that would otherwise do.
        #expect { try MovieSplitter(segmentDuration: .zero).split(path: source, into: work) } throws: { isInvalidOption($0, "segment duration") }
        var options = Transcoder.Options(preset: "ultrafast")
        options.passes = 3
        #expect { try Transcoder(options: options).run(path: source, into: .movie(path: work + "/x.mp4", options: .init())) } throws: { isInvalidOption($0, "3 passes") }
        options.passes = 1
        options.duration = MediaTime(value: -1, timescale: 1)
        #expect { try Transcoder(options: options).run(path: source, into: .movie(path: work + "/x.mp4", options: .init())) } throws: { isInvalidOption($0, "duration") }
        #expect { try ChunkedTranscoder(options: .init(), chunks: 0).run(path: source, into: work + "/x.mp4", workDirectory: work) } throws: { isInvalidOption($0, "0 chunks") }
        #expect { try MovieConcatenator().concatenate([], into: work + "/x.mp4") } throws: { isInvalidOption($0, "no movies") }
        #expect(!FileManager.default.fileExists(atPath: work + "/x.mp4"))
    }
}
