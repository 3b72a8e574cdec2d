import Foundation
import ISOBMFF
import MPEGTS
import MediaCore
import SampleFlow
import SystemPackage
import TestSupport
import Testing

/// Transport streams against the real tools. In: streams FFmpeg wrote (B-pyramids, open GOP,
/// AAC beside the video, a PTS wrapping past 2^33, M2TS, two programs) muxed to MP4 decode to
/// FFmpeg's frames of the TS at ffprobe's times. Out: what the muxer writes from an MP4 and an
/// Annex-B stream with B-frames plays in FFmpeg without a warning, keeps every frame and time,
/// and GStreamer's tsdemux gets every frame; TS → MP4 → TS → MP4 is exact.
@Suite("MPEG-TS against FFmpeg and GStreamer", .requires(.ffmpeg, .ffprobe))
struct TransportStreamOracleTests {
    static let annexB = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    /// A scratch directory with the inputs FFmpeg makes, made once.
    static let inputs: String = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-ts-oracle-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let video = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "3", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast"]
        func make(_ name: String, _ arguments: [String]) {
            _ = try? run("ffmpeg", ["-v", "error", "-y"] + arguments + [directory + "/" + name])
        }
        make("pyramid.mp4", video + ["-x264-params", "bframes=3:b-pyramid=normal:keyint=30"])
        make("opengop.mp4", video + ["-x264-params", "bframes=2:open-gop=1:keyint=20"])
        make("av.mp4", ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3",
                        "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", "-shortest"])
        for name in ["pyramid", "opengop", "av"] { make(name + ".ts", ["-i", directory + "/\(name).mp4", "-c", "copy"]) }
        make("wrap.ts", ["-i", directory + "/pyramid.mp4", "-c", "copy", "-output_ts_offset", "95441"])
        make("pyramid.m2ts", ["-i", directory + "/pyramid.mp4", "-c", "copy", "-f", "mpegts", "-mpegts_m2ts_mode", "1"])
        make("programs.ts", ["-i", directory + "/av.mp4", "-i", directory + "/opengop.mp4", "-map", "0:a", "-map", "1:v", "-map", "0:v", "-c", "copy",
                             "-program", "program_num=1:st=0", "-program", "program_num=2:st=1", "-program", "program_num=3:st=2"])
        return directory
    }()

    struct Input: Sendable, CustomTestStringConvertible {
        var name: String
        var program: UInt16?
        var testDescription: String { name + (program.map { " program \($0)" } ?? "") }
    }

    static let tsInputs: [Input] = [
        Input(name: "pyramid.ts"), Input(name: "opengop.ts"), Input(name: "av.ts"), Input(name: "wrap.ts"), Input(name: "pyramid.m2ts"),
        Input(name: "programs.ts"), Input(name: "programs.ts", program: 3),
    ]

    /// ffprobe's packet presentation times of the first video stream (of `program`), sorted,
    /// in 90 kHz ticks from the first.
    static func probedTimes(_ path: String, program: UInt16? = nil) throws -> [Int64] {
        let select = program.map { ["-select_streams", "p:\($0):v:0"] } ?? ["-select_streams", "v:0"]
        let text = try run("ffprobe", ["-v", "error"] + select + ["-show_entries", "packet=pts_time", "-of", "csv=p=0", path]).stdoutText
        let times = text.split(separator: "\n").compactMap { Double($0.split(separator: ",").first ?? "") }.sorted()
        return times.map { Int64((($0 - times[0]) * 90_000).rounded()) }
    }

    @Test(arguments: tsInputs)
    func aTransportStreamMuxesToFFmpegsFramesAndTimes(_ input: Input) throws {
        let path = Self.inputs + "/" + input.name
        let output = Self.inputs + "/\(input.testDescription.replacingOccurrences(of: " ", with: "-")).out.mp4"
        var options = StreamMuxer.Options()
        if let program = input.program { options.transportStream.selection = .program(program) }
        let summary = try StreamMuxer(options: options).run(path: path, to: output)
        #expect(summary.inputWarnings.isEmpty, "\(summary.inputWarnings)")
        let expected: [String]
        if let program = input.program {
            expected = framemd5Hashes(try run("ffmpeg", ["-v", "error", "-threads", "1", "-i", path, "-map", "0:p:\(program):v:0", "-f", "framemd5", "-"]).stdoutText)
        } else {
            expected = try ffmpegFrameHashes(path)
        }
        let got = try ffmpegFrameHashes(output)
        #expect(got.count == expected.count && got == expected, "\(input): \(got.count) frames, ffmpeg decodes \(expected.count) from the TS")
        let times = try Self.probedTimes(output)
        #expect(times == (try Self.probedTimes(path, program: input.program)), "\(input): presentation times")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
    }

    /// A lossy capture (1 packet in 37 lost, 1% flipped bytes, cut mid-packet): the reader and
    /// the mux keep every picture by default, as `ffmpeg -c copy` does (the same frames decode),
    /// list the damaged ones, and leave them out only when asked.
    @Test func aLossyTransportStreamKeepsItsPicturesUnlessAsked() throws {
        let path = Self.inputs + "/lossy.ts"
        try LossyTransportStream.make(at: path)
        let expected = try LossyTransportStream.ffmpegCopyFrames(path)
        #expect(expected.count >= 85, "ffmpeg keeps \(expected.count)")
        let reader = try TransportStreamReader(path: path)
        let samples = try reader.readAll()
        #expect(samples.count == expected.count, "the reader keeps \(samples.count), ffmpeg \(expected.count)")
        #expect(reader.statistics.damagedSamples > 0 && reader.damagedPictures.count == reader.statistics.damagedSamples)
        let output = Self.inputs + "/lossy.mp4"
        let summary = try StreamMuxer().run(path: path, to: output)
        #expect(summary.movie?.sampleCount == expected.count)
        #expect(summary.inputWarnings.contains { $0.contains("damaged picture(s) kept") }, "said: \(summary.inputWarnings)")
        #expect(try ffmpegFrameHashes(output) == expected, "the same frames as ffmpeg's copy")
        var dropping = StreamMuxer.Options()
        dropping.transportStream.keepsDamagedPESPackets = false
        #expect(throws: SampleFlowError.self, "every PES packet of this capture is damaged: nothing is left to mux") {
            try StreamMuxer(options: dropping).run(path: path, to: Self.inputs + "/lossy-dropped.mp4")
        }
    }

    @Test func aTransportStreamThroughAPipeReadsTheSame() throws {
        let path = Self.inputs + "/wrap.ts"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let direct = try TransportStreamReader(path: path).readAll()
        // A pipe, written by another thread a little at a time: read in chunks, never seeking.
        let (readEnd, writeEnd) = try FileDescriptor.pipe()
        let writer = Thread {
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let end = min(raw.count, offset + 1000)
                    offset += (try? writeEnd.write(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))) ?? raw.count
                }
            }
            try? writeEnd.close()
        }
        writer.start()
        defer { try? readEnd.close() }
        let reader = TransportStreamReader(fileDescriptor: readEnd, name: "pipe")
        let piped = try reader.readAll()
        #expect(reader.totalBytes == nil && reader.bytesRead == bytes.count)
        #expect(piped.map(\.data) == direct.map(\.data) && piped.map(\.presentationTime) == direct.map(\.presentationTime))
    }

    /// What `ffmpeg -v warning` prints reading `path` to the end.
    static func warnings(_ path: String) throws -> String {
        try run("ffmpeg", ["-v", "warning", "-i", path, "-f", "null", "-"]).stderrText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(arguments: ["pyramid.mp4", "annexB"])
    func aWrittenTransportStreamPlaysCleanly(_ source: String) throws {
        let input = source == "annexB" ? Self.annexB : Self.inputs + "/" + source
        let output = Self.inputs + "/\(source).written.ts"
        let summary = try StreamMuxer(options: .init(output: .transportStream(.init()))).run(path: input, to: output)
        #expect(summary.transportStream != nil && summary.output.samples > 0)
        #expect(try Self.warnings(output) == "", "ffmpeg warns reading \(output)")
        #expect(try ffmpegFrameHashes(output) == ffmpegFrameHashes(input), "the frames")
        let sourceTimes = source == "annexB" ? try MediaSource(path: input).readAll().map { $0.presentationTime.converted(toTimescale: 90_000).value }.sorted()
            : try Self.probedTimes(input)
        #expect(try Self.probedTimes(output) == sourceTimes.map { $0 - sourceTimes[0] }, "the packets' times")
        // The TS's own accounting, read back: PCR at most 40 ms apart, no continuity error.
        let reader = try TransportStreamReader(path: output)
        _ = try reader.readAll()
        #expect(reader.statistics.largestClockReferenceInterval.map { $0.seconds <= 0.040 } == true)
        #expect(reader.statistics.demuxer.continuityErrors == 0 && reader.warnings.isEmpty)
    }

    @Test(.requires(.gstLaunch))
    func gstreamerGetsEveryFrame() throws {
        let output = Self.inputs + "/gst.ts"
        _ = try StreamMuxer(options: .init(output: .transportStream(.init()))).run(path: Self.annexB, to: output)
        let result = try run("gst-launch-1.0", ["-q", "filesrc", "location=\(output)", "!", "tsdemux", "!", "h264parse", "!", "avdec_h264", "!",
                                                "videoconvert", "!", "video/x-raw,format=I420", "!", "filesink", "location=\(output).yuv"])
        #expect(result.status == 0, "\(result.stderrText)")
        let decoded = try Data(contentsOf: URL(fileURLWithPath: output + ".yuv"))
        #expect(decoded.count == 90 * 320 * 240 * 3 / 2, "GStreamer decoded \(decoded.count / (320 * 240 * 3 / 2)) of 90 frames")
        let reference = try run("ffmpeg", ["-v", "error", "-i", Self.annexB, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
        #expect(decoded == reference, "GStreamer's frames are the source's")
    }

    @Test func aRoundTripThroughTransportStreamsIsExact() throws {
        let first = Self.inputs + "/round1.mp4"
        let ts = Self.inputs + "/round.ts"
        let second = Self.inputs + "/round2.mp4"
        _ = try StreamMuxer().run(path: Self.inputs + "/pyramid.ts", to: first)
        _ = try StreamMuxer(options: .init(output: .transportStream(.init()))).run(path: first, to: ts)
        _ = try StreamMuxer().run(path: ts, to: second)
        let a = try MediaSource(path: first, options: .init(editList: .shift)).readAll()
        let b = try MediaSource(path: second, options: .init(editList: .shift)).readAll()
        #expect(a.count == b.count && a.map(\.data) == b.map(\.data), "the samples' bytes")
        #expect(a.map(\.presentationTime) == b.map(\.presentationTime) && a.map(\.decodeTime) == b.map(\.decodeTime), "the samples' times")
        #expect(a.map(\.isSync) == b.map(\.isSync))
    }
    /// Bytes the file system holds for `path` (its blocks), not its size.
    static func allocatedBytes(_ path: String) -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { return -1 }
        return Int(info.st_blocks) * 512
    }

    @Test("a remux reserves its output's disk from the input's size and frees what it did not use: every output (progressive and faststart MP4, TS) holds no more blocks than its size needs, and its bytes are those of a write that reserved nothing")
    func reservedSpaceIsFreed() throws {
        let input = Self.inputs + "/pyramid.ts"
        for layout in [MovieWriter.Layout.progressive, .faststart] {
            var reserved = MovieWriter.Options(layout: layout)
            reserved.expectedSize = 64 << 20  // far more than the movie needs
            var unreserved = MovieWriter.Options(layout: layout)
            unreserved.expectedSize = nil
            let outputs = [Self.inputs + "/reserved-\(layout).mp4", Self.inputs + "/unreserved-\(layout).mp4"]
            for (options, output) in zip([reserved, unreserved], outputs) {
                let writer = try MovieWriter(path: output, options: options)
                let reader = try MediaSource(path: input)
                while let sample = try reader.next() { try writer.append(sample) }
                _ = try writer.finish()
            }
            let size = try #require(try FileManager.default.attributesOfItem(atPath: outputs[0])[.size] as? Int)
            #expect(Self.allocatedBytes(outputs[0]) <= (size + 4095) / 4096 * 4096 + 4096, "\(layout): \(Self.allocatedBytes(outputs[0])) bytes held for \(size)")
            #expect(FileManager.default.contents(atPath: outputs[0]) == FileManager.default.contents(atPath: outputs[1]))
        }
        // StreamMuxer reserves from the input's size on its own (a TS a tenth more).
        let movie = Self.inputs + "/reserved-muxed.mp4", stream = Self.inputs + "/reserved-muxed.ts"
        _ = try StreamMuxer().run(path: input, to: movie)
        _ = try StreamMuxer(options: .init(output: .transportStream(.init()))).run(path: movie, to: stream)
        for output in [movie, stream] {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: output)[.size] as? Int)
            #expect(Self.allocatedBytes(output) <= (size + 4095) / 4096 * 4096 + 4096, "\(output): \(Self.allocatedBytes(output)) bytes held for \(size)")
        }
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(stream))
    }
}
