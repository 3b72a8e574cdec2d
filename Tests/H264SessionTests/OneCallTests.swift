import Foundation
import H264Bitstream
import H264Codec
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import MediaProbe
import TestSupport
import SampleFlow
import Testing

/// What each subcommand does, as one library call: the tool's work with no tool, checked
/// against ffmpeg and ffprobe.
@Suite("What the CLI does, in one library call", .requires(.ffmpeg, .ffprobe))
struct OneCallTests {
    static let stream = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    static func work() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-onecall-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    /// StreamProbe counts the frames ffprobe counts, lists every NAL unit and sample when
    /// asked, and its JSON keeps the keys it cannot know as null.
    @Test func streamProbeSummarizesAsFFprobeCounts() throws {
        let frames = try run("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames,width,height", "-of", "csv=p=0", Self.stream])
            .stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        var listed: [NALUnitRecord] = []
        let result = try StreamProbe.probe(path: Self.stream, options: .init(listsNALUnits: true), onNALUnit: { listed.append($0) })
        let summary = result.summary
        #expect("\(summary.width.value ?? 0),\(summary.height.value ?? 0),\(summary.frameCount)" == frames)
        #expect(summary.frameRate.value == "30000/1001" && summary.errors == 0)
        #expect(listed.count == summary.nalUnitCount && summary.nalUnits == listed)
        var samples: [SampleRecord] = []
        let timed = try StreamProbe.probe(path: Self.stream, options: .init(listsSamples: true, frameRate: FrameRate(25, 1)), onSample: { samples.append($0) })
        #expect(samples.count == summary.frameCount && timed.summary.sampleFrameRate == "25/1")
        // Printed as they come, kept nowhere: the callbacks get every record, the summary none.
        var streamed = 0
        let unkept = try StreamProbe.probe(path: Self.stream, options: .init(listsNALUnits: true, keepsRecords: false), onNALUnit: { _ in streamed += 1 })
        #expect(streamed == summary.nalUnitCount && unkept.summary.nalUnits == nil)
        // What a probe cannot do together is refused, not ignored.
        #expect(throws: SampleFlowError.self) { try StreamProbe.probe(path: Self.stream, options: .init(listsNALUnits: true, listsSamples: true)) }
        #expect(throws: SampleFlowError.self) { try StreamProbe.probe(path: Self.stream, options: .init(frameRate: FrameRate(25, 1))) }
        #expect(timed.warnings.contains { if case .frameRateOverridden = $0 { true } else { false } })
        // No picture at all: the keys of the first picture's SPS are null, not missing.
        let empty = StreamSummary(parser: H264StreamParser(), bytes: 0)
        let json = String(decoding: try JSONEncoder().encode(empty), as: UTF8.self)
        #expect(json.contains("\"frameRate\":null") && json.contains("\"profile\":null"))
        // Bytes with no start code: an error that says so.
        let garbage = try Checkout.temporaryFile(Array(repeating: 0xAB, count: 4096))
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        #expect { try StreamProbe.probe(path: garbage) } throws: { ($0 as? SampleFlowError)?.bitstreamError?.code == .noPicture }
    }

    /// StreamMuxer writes the stream into a MOV with a drop-frame timecode track; MovieSummary
    /// and TimecodeReport read back what ffprobe reads; StreamDemuxer gives back a stream that
    /// decodes to the same frames. A failed mux leaves nothing.
    @Test func muxProbeAndDemuxRoundTrip() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let movie = work + "/out.mov"
        var options = StreamMuxer.Options(movie: .init(fileType: .mov, layout: .faststart))
        options.timecode = .init(start: try Timecode(parsing: "01:30:15;07"), reel: "A001")
        var progress: [StreamMuxer.Progress] = []
        let muxed = try StreamMuxer(options: options).run(path: Self.stream, to: movie) { progress.append($0) }
        #expect(muxed.movie?.sampleCount == 90 && muxed.frameRate == FrameRate(30000, 1001) && muxed.damagedNALUnits == 0)
        #expect(progress.last?.samples == 90 && progress.last?.bytesRead == progress.last?.totalBytes)
        let reader = try MovieReader(path: movie)
        let summary = MovieSummary(reader)
        #expect(summary.format == "mov" && summary.tracks.first?.codecString?.hasPrefix("avc1.") == true && summary.tracks.first?.sampleCount == 90)
        let report = try TimecodeReport(reader, includesFrames: true)
        let probed = try run("ffprobe", ["-v", "error", "-show_entries", "stream_tags=timecode", "-of", "csv=p=0", movie]).stdoutText
        #expect(report.start == "01:30:15;07" && probed.contains("01:30:15;07") && report.reel == "A001" && report.dropFrame)
        #expect(report.frames?.count == 90 && report.frames?.last?.timecode == "01:30:18;06")
        let demuxed = work + "/back.264"
        let summaryBack = try StreamDemuxer().run(path: movie, to: demuxed)
        #expect(summaryBack.samples == 90 && summaryBack.notCarried.count == 1, "the timecode track is said to be left behind: \(summaryBack.notCarried)")
        #expect(try ffmpegFrameHashes(demuxed, format: "h264") == ffmpegFrameHashes(Self.stream, format: "h264"))
        // A stream whose slices come before any parameter set: an error, and no file.
        let source = try [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.stream)))
        let stripped = try Checkout.temporaryFile(AnnexB.nalUnits(in: source).filter { ![7, 8].contains(source[$0.payload.lowerBound] & 0x1F) }
            .flatMap { [0, 0, 0, 1] + source[$0.payload] })
        defer { try? FileManager.default.removeItem(atPath: stripped) }
        #expect { try StreamMuxer().run(path: stripped, to: work + "/none.mp4") } throws: { ($0 as? SampleFlowError)?.bitstreamError != nil }
        #expect(!FileManager.default.fileExists(atPath: work + "/none.mp4"))
        // A stream cut inside its last NAL unit: muxed, the damage told as it is found.
        let cut = try Checkout.temporaryFile(Array(source[..<(AnnexB.nalUnits(in: source).last!.startCodeOffset + 6)]))
        defer { try? FileManager.default.removeItem(atPath: cut) }
        var told: [StreamDiagnostic] = []
        let damaged = try StreamMuxer().run(path: cut, to: work + "/cut.mp4", onDiagnostic: { told.append($0) })
        #expect(damaged.damagedNALUnits == 1 && !told.isEmpty && told.count == damaged.diagnostics.count, "\(told)")
        // A movie without a timecode track has no timecode report: an error naming the file.
        _ = try StreamMuxer().run(path: Self.stream, to: work + "/plain.mp4")
        #expect { try TimecodeReport(MovieReader(path: work + "/plain.mp4")) } throws: { "\($0)".contains("plain.mp4") && "\($0)".contains("no timecode track") }
    }

    /// FrameExporter writes ffmpeg's framemd5 of the stream; a PNG name without a frame
    /// number is refused before anything is decoded; at the first damage it stops when asked.
    @Test(.requires(.x264)) func frameExporterWritesWhatFFmpegDecodes() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        var damage: [FrameExporter.Damage] = []
        let summary = try FrameExporter().run(path: Self.stream, to: work + "/out.framemd5") { damage.append($0) }
        #expect(summary.frames == 90 && damage.isEmpty && summary.concealedFrames == 0)
        let ours = framemd5Hashes(String(decoding: try Data(contentsOf: URL(fileURLWithPath: work + "/out.framemd5")), as: UTF8.self))
        #expect(ours == (try ffmpegFrameHashes(Self.stream, format: "h264")))
        #expect { try FrameExporter().run(path: Self.stream, to: work + "/frame.png") } throws: { if case .invalidOption = $0 as? SessionError { true } else { false } }
        let one = try FrameExporter(options: .init(frameLimit: 1)).run(path: Self.stream, to: work + "/frame.png")
        #expect(one.frames == 1 && FileManager.default.fileExists(atPath: work + "/frame.png"))
        // A stream with a slice's bytes overwritten: concealed and told, or an error when asked to stop.
        var bytes = try x264Stream(frames: 30, size: "320x240", arguments: ["--keyint", "30"])
        let slice = try #require(AnnexB.nalUnits(in: bytes).filter { bytes[$0.payload.lowerBound] & 0x1F == 1 }.dropFirst(5).first)
        for index in (slice.payload.lowerBound + 20)..<min(slice.payload.upperBound, slice.payload.lowerBound + 200) { bytes[index] = 0x5A }
        let damaged = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: damaged) }
        var told: [FrameExporter.Damage] = []
        let lenient = try FrameExporter(options: .init(reader: .init(threading: .init(count: 1)))).run(path: damaged, to: "/dev/null") { told.append($0) }
        #expect(lenient.concealedFrames + lenient.rejectedSamples > 0 && !told.isEmpty, "\(lenient)")
        #expect { try FrameExporter(options: .init(reader: .init(threading: .init(count: 1)), format: .raw, stopsAtDamage: true)).run(path: damaged, to: "/dev/null") }
            throws: { if case .damaged = $0 as? SessionError { true } else { false } }
    }

    /// libavcodec's log is one for the process: two exports at once, one of a damaged stream
    /// (its decoder with frame threads) and one of a clean stream, each hear only their own
    /// decoder's messages.
    @Test(.requires(.x264)) func concurrentExportsHearOnlyTheirOwnDamage() throws {
        var bytes = try x264Stream(frames: 30, size: "320x240", arguments: ["--keyint", "30"])
        for slice in AnnexB.nalUnits(in: bytes).filter({ bytes[$0.payload.lowerBound] & 0x1F == 1 }).dropFirst(3) {
            for index in (slice.payload.lowerBound + 20)..<min(slice.payload.upperBound, slice.payload.lowerBound + 200) { bytes[index] = 0x5A }
        }
        let damaged = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: damaged) }
        final class Told: @unchecked Sendable {  // the lock guards both
            let lock = NSLock()
            var damaged: [FrameExporter.Damage] = [], clean: [FrameExporter.Damage] = []
        }
        let told = Told()
        for _ in 0..<4 {
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                if side == 0 {
                    _ = try? FrameExporter(options: .init(reader: .init(threading: .init(count: 2)))).run(path: damaged, to: "/dev/null") { damage in
                        told.lock.withLock { told.damaged.append(damage) }
                    }
                } else {
                    for _ in 0..<3 {
                        _ = try? FrameExporter().run(path: Self.stream, to: "/dev/null") { damage in told.lock.withLock { told.clean.append(damage) } }
                    }
                }
            }
        }
        let (damage, cleanDamage) = told.lock.withLock { (told.damaged, told.clean) }
        #expect(!damage.isEmpty, "the damaged stream's decoder told nothing")
        #expect(cleanDamage.isEmpty, "the clean stream was told another decoder's damage: \(cleanDamage.prefix(3))")
    }

    /// A split's index written beside its segments reads back the same and names their paths.
    @Test func segmentIndexRoundTrips() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1)).split(path: Self.stream, into: work)
        try index.write(into: work)
        let read = try SegmentIndex(contentsOf: work + "/" + SegmentIndex.fileName)
        #expect(read == index && read.segments.count >= 2)
        #expect(read.segmentPaths(besideIndexAt: work + "/index.json") == index.segments.map { work + "/" + $0.file })
        #expect(read.segmentPaths(besideIndexAt: "/index.json").first == "/" + index.segments[0].file, "the root's segments are in /")
        #expect(read.segmentPaths(besideIndexAt: "index.json").first == index.segments[0].file)
        #expect(throws: SampleFlowError.self) { try SegmentIndex(contentsOf: Self.stream) }
    }

    /// Timecodes and frame numbers, both ways (TN2310's 29.97 drop-frame examples).
    @Test func timecodeConversions() throws {
        let format = try TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: true)
        #expect(try format.conversion(of: "01:30:15;07").frameNumber == 162_295)
        #expect(try format.conversion(of: "1800").timecode.description == "00:01:00;02")
        #expect(throws: TimecodeError.self) { try format.conversion(of: "ninety") }
        #expect(throws: TimecodeError.self) { try format.conversion(of: "00:01:00;00") }  // drop-frame skips it
    }

    /// The benchmark's H264Kit and x264 CLI streams are the same bytes at the same settings.
    @Test(.requires(.x264)) func encoderBenchmarkBesideX264() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/source.y4m"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "20", "-pix_fmt", "yuv420p", source])
        let x264 = try #require(EncoderBenchmark.executable(named: "x264"))
        let report = try EncoderBenchmark(options: .init(presets: ["ultrafast"], threads: 1, runs: 1, x264: x264)).run(path: source)
        let result = try #require(report.results.first)
        #expect(result.frames == 20 && result.identicalToX264 == true && result.psnr > 30 && result.psnr == result.x264?.psnr, "\(result)")
        #expect(throws: SessionError.self) { try EncoderBenchmark(options: .init(presets: ["warp"])).run(path: source) }
    }
}

/// A media source let go after 5 samples of a 50 MB stream (and of its decoding form): clean.
@Suite("Media source stopped early")
struct MediaSourceEarlyStopTests {
    @Test func fiveSamplesThenLetGo() throws {
        for options in [MediaSource.Options(), .decoding] {
            let source = try MediaSource(path: LargeStream.annexB, options: options)
            for _ in 0..<5 { #expect(try source.next() != nil) }
        }
    }
}

/// One timing rule for a stream without VUI timing, in the library and the tool: timed at
/// `FrameRate.assumedWithoutTiming` (25 fps) with a warning naming the way to set the rate,
/// unless a rate is given, which then times it everywhere. (The builder used to throw
/// `missingTiming` where the reader, the decoders and the transcoder assumed 25 fps.)
@Suite("Timing of a stream without VUI timing")
struct TimingRuleTests {
    static let fixture = "cisco-bframe-cabac.264"

    @Test func everyReaderAssumesTheSameRateAndSaysSo() throws {
        let bytes = try Checkout.fixture(Self.fixture)
        #expect(H264StreamParser.parse(annexB: bytes).firstPictureSPS?.frameRate == nil, "the fixture has no VUI timing")
        let built = try SampleBufferBuilder.samples(fromAnnexB: bytes)
        #expect(built.builder.frameRate == .assumedWithoutTiming && built.builder.frameRateIsAssumed)
        #expect(built.samples[1].duration == MediaTime(value: 1, timescale: 25))

        let reader = SampleBufferReader(bytes: bytes)
        while try reader.next() != nil {}
        #expect(reader.frameRate == .assumedWithoutTiming && reader.warnings.contains(.assumedFrameRate(.assumedWithoutTiming)))

        let path = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        for options in [MediaSource.Options(), .decoding] {
            let source = try MediaSource(path: path, options: options)
            while try source.next() != nil {}
            #expect(source.frameRate == .assumedWithoutTiming && source.warnings.contains { $0.contains("assuming 25") }, "\(source.warnings)")
        }

        // A rate given times it everywhere, with no warning.
        let given = FrameRate(30000, 1001)
        let fixed = try SampleBufferBuilder.samples(fromAnnexB: bytes, frameRate: .fixed(given))
        #expect(fixed.builder.frameRate == given && !fixed.builder.frameRateIsAssumed)
        var options = MediaSource.Options.decoding
        options.annexB.frameRate = given
        let source = try MediaSource(path: path, options: options)
        while try source.next() != nil {}
        #expect(source.frameRate == given && source.warnings.allSatisfy { !$0.contains("assuming") })

        // Refusing to guess stays possible, and is an option.
        #expect { _ = try SampleBufferBuilder.samples(fromAnnexB: bytes, frameRate: .stream(fallback: nil)) } throws: {
            ($0 as? BitstreamError)?.code == .missingTiming
        }
    }
}
