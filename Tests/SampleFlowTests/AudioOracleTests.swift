import Foundation
import ISOBMFF
import MPEGTS
import MediaCore
import SampleFlow
import TestSupport
import Testing

/// Sound beside the picture, against FFmpeg: what `mux`, `demux`, `split` + `concat` write
/// with AAC (48 kHz stereo; 44.1 kHz mono starting half a second after the video; two
/// languages), AC-3 and Opus, each compared with what `ffmpeg -map 0 -c copy` writes from the
/// same input: the audio packets' bytes, the PCM FFmpeg decodes (so the priming and the edit
/// lists are FFmpeg's), the A/V start offset within a millisecond, the video's frames.
@Suite("Audio against FFmpeg", .requires(.ffmpeg, .ffprobe))
struct AudioOracleTests {
    /// A scratch directory with the inputs FFmpeg makes, made once.
    static let inputs: String = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-audio-oracle-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func make(_ name: String, _ arguments: [String]) {
            _ = try? run("ffmpeg", ["-v", "error", "-y"] + arguments + [directory + "/" + name])
        }
        let video = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25"]
        let x264 = ["-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-g", "25"]
        make("av48.mp4", video + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3", "-ac", "2"] + x264 + ["-c:a", "aac"])
        make("av44m.mp4", video + ["-itsoffset", "0.5", "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100", "-t", "3", "-ac", "1"] + x264 + ["-c:a", "aac"])
        make("langs.mp4", video + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=44100",
                                   "-t", "3", "-map", "0", "-map", "1", "-map", "2", "-ac", "2"] + x264
             + ["-c:a", "aac", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra"])
        make("ac3.mp4", video + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3", "-ac", "2"] + x264 + ["-c:a", "ac3"])
        make("opus.mp4", video + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3", "-ac", "2"] + x264 + ["-c:a", "libopus"])
        for name in ["av48", "av44m", "ac3"] { make(name + ".ts", ["-i", directory + "/\(name).mp4", "-map", "0", "-c", "copy"]) }
        make("v.264", ["-i", directory + "/av48.mp4", "-map", "0:v", "-c", "copy", "-f", "h264"])
        make("a.aac", ["-i", directory + "/av48.ts", "-map", "0:a", "-c", "copy", "-f", "adts"])
        return directory
    }()

    static func path(_ name: String) -> String { inputs + "/" + name }

    // MARK: What FFmpeg says of a file

    /// The md5 of each packet of `stream` (`a:0`), as ffprobe reads them.
    static func packets(_ path: String, _ stream: String = "a:0") throws -> [String] {
        try run("ffprobe", ["-v", "error", "-select_streams", stream, "-show_packets", "-show_data_hash", "md5", "-show_entries", "packet=data_hash",
                            "-of", "csv=p=0", path]).stdoutText.split(separator: "\n").map(String.init)
    }

    /// The 16-bit PCM FFmpeg decodes from `stream`.
    static func pcm(_ path: String, _ stream: String = "a:0") throws -> Data {
        try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:" + stream, "-f", "s16le", "-"]).stdout
    }

    /// ffprobe's start time of each stream, by kind ("video", "audio") in order.
    static func startTimes(_ path: String) throws -> [(kind: String, start: Double, language: String?)] {
        let json = try run("ffprobe", ["-v", "error", "-show_streams", "-of", "json", path]).stdout
        let streams = (try JSONSerialization.jsonObject(with: json) as? [String: Any])?["streams"] as? [[String: Any]] ?? []
        return streams.compactMap { stream in
            guard let kind = stream["codec_type"] as? String, let start = (stream["start_time"] as? String).flatMap(Double.init) else { return nil }
            return (kind, start, (stream["tags"] as? [String: Any])?["language"] as? String)
        }
    }

    /// The audio's start after the video's, seconds.
    static func offset(_ path: String) throws -> Double {
        let starts = try startTimes(path)
        guard let video = starts.first(where: { $0.kind == "video" }), let audio = starts.first(where: { $0.kind == "audio" }) else {
            throw TestFailure("\(path): no video and audio start (\(starts))")
        }
        return audio.start - video.start
    }

    /// `ffmpeg -i input -map 0 -c copy output`.
    static func ffmpegCopy(_ input: String, _ output: String, extra: [String] = []) throws {
        _ = try run("ffmpeg", ["-v", "error", "-y", "-i", input, "-map", "0", "-c", "copy"] + extra + [output])
        guard FileManager.default.fileExists(atPath: output) else { throw TestFailure("ffmpeg wrote no \(output)") }
    }

    /// Our mux of `inputs` to `output` (a movie or transport stream by its name).
    @discardableResult
    static func mux(_ inputs: [String], _ output: String, tracks: MediaSource.TrackSelection = .all) throws -> StreamMuxer.Summary {
        var options = StreamMuxer.Options(movie: MovieWriter.Options(fileType: MovieFileType(path: output)))
        if output.hasSuffix(".ts") { options.output = .transportStream(.init()) }
        options.tracks = tracks
        return try StreamMuxer(options: options).run(paths: inputs, to: output)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var input: String
        var container: String
        var testDescription: String { "\(input) -> \(container)" }
    }

    static let cases: [Case] = ["av48.ts", "av44m.ts", "av48.mp4", "av44m.mp4"].flatMap { input in ["mp4", "mov", "ts"].map { Case(input: input, container: $0) } }

    /// The acceptance of #41: the audio packets, the decoded PCM and the A/V offset equal
    /// `ffmpeg -map 0 -c copy`'s to the same container, the video's frames unchanged.
    @Test(arguments: cases)
    func muxCarriesTheSoundAsFFmpegCopies(_ item: Case) throws {
        let input = Self.path(item.input)
        let name = item.input.replacingOccurrences(of: ".", with: "-")
        let ours = Self.path("\(name).ours.\(item.container)")
        let theirs = Self.path("\(name).ffmpeg.\(item.container)")
        let summary = try Self.mux([input], ours)
        try Self.ffmpegCopy(input, theirs)
        #expect(summary.tracksLeftOut.isEmpty, "\(summary.tracksLeftOut)")
        #expect(summary.tracks.map(\.mediaType) == [.video, .audio])
        let packets = try Self.packets(ours)
        #expect(packets.count > 100)
        #expect(packets == (try Self.packets(theirs)), "audio packets")
        #expect(try Self.pcm(ours) == Self.pcm(theirs), "decoded PCM")
        let offset = try Self.offset(ours), expected = try Self.offset(theirs)
        #expect(abs(offset - expected) <= 0.001, "A/V offset \(offset) s, ffmpeg's \(expected) s")
        #expect(try ffmpegFrameHashes(ours) == ffmpegFrameHashes(input), "video frames")
    }

    /// Annex-B + ADTS -> MP4: the packets of `ffmpeg -i v.264 -i a.aac -c copy`.
    @Test func anAnnexBStreamAndAnADTSStreamGoInOneMovie() throws {
        let ours = Self.path("es.ours.mp4"), theirs = Self.path("es.ffmpeg.mp4")
        let summary = try Self.mux([Self.path("v.264"), Self.path("a.aac")], ours)
        _ = try run("ffmpeg", ["-v", "error", "-y", "-i", Self.path("v.264"), "-i", Self.path("a.aac"), "-c", "copy", theirs])
        #expect(summary.tracks.map(\.id.rawValue) == [1, 2])
        #expect(try Self.packets(ours) == Self.packets(theirs))
        #expect(try Self.pcm(ours) == Self.pcm(theirs))
        #expect(try ffmpegFrameHashes(ours) == ffmpegFrameHashes(Self.path("v.264")))
    }

    /// `demux` to ADTS: FFmpeg's bytes, from a movie (the priming kept: ADTS has no edit list)
    /// and from a transport stream; FFmpeg decodes it to the transport stream's sound.
    @Test(arguments: ["av48.mp4", "av48.ts", "av44m.mp4", "langs.mp4"])
    func demuxWritesTheADTSFFmpegWrites(_ input: String) throws {
        let ours = Self.path("\(input).ours.aac"), theirs = Self.path("\(input).ffmpeg.aac")
        let summary = try StreamDemuxer().run(path: Self.path(input), to: ours)
        _ = try run("ffmpeg", ["-v", "error", "-y", "-i", Self.path(input), "-map", "0:a:0", "-c", "copy", "-f", "adts", theirs])
        #expect(summary.samples > 100)
        #expect(try Data(contentsOf: URL(fileURLWithPath: ours)) == Data(contentsOf: URL(fileURLWithPath: theirs)))
        if input == "av48.ts" { #expect(try Self.pcm(ours) == Self.pcm(Self.path(input))) }
    }

    /// Split then concat: the source's audio packets and sound (the priming trimmed once),
    /// the video's frames; each segment's sound starts within a frame of its picture.
    @Test(arguments: ["av48.mp4", "av48.ts", "av44m.mp4", "langs.mp4"])
    func splitAndConcatKeepTheSound(_ input: String) throws {
        let source = Self.path(input)
        let directory = Self.path("split-\(input)")
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let index = try MovieSplitter(segmentDuration: MediaTime(value: 1, timescale: 1)).split(path: source, into: directory)
        #expect(index.segments.count == 3)
        let joined = directory + "/joined.mp4"
        _ = try MovieConcatenator().concatenate(index.segmentPaths(besideIndexAt: directory + "/index.json"), into: joined)
        // A transport stream's packets carry ADTS headers: compare with FFmpeg's movie of it.
        let reference = input.hasSuffix(".ts") ? Self.path("\(input).reference.mp4") : source
        if input.hasSuffix(".ts") { try Self.ffmpegCopy(source, reference) }
        for stream in input == "langs.mp4" ? ["a:0", "a:1"] : ["a:0"] {
            #expect(try Self.packets(joined, stream) == Self.packets(reference, stream), "\(stream) packets")
            #expect(try Self.pcm(joined, stream) == Self.pcm(reference, stream), "\(stream) PCM")
        }
        #expect(try ffmpegFrameHashes(joined) == ffmpegFrameHashes(source))
        for segment in index.segmentPaths(besideIndexAt: directory + "/index.json").dropFirst() {
            let offset = try Self.offset(segment)
            #expect(offset >= 0 && offset < 1024.0 / 44_100, "\(segment): its sound starts \(offset) s after its picture")
        }
    }

    /// Two languages: both carried, both named, into a movie and a transport stream.
    @Test(arguments: ["mp4", "ts"])
    func twoLanguagesAreBothCarried(_ container: String) throws {
        let ours = Self.path("langs.ours.\(container)")
        let summary = try Self.mux([Self.path("langs.mp4")], ours)
        #expect(summary.tracks.compactMap(\.language) == ["eng", "fra"])
        let audio = try Self.startTimes(ours).filter { $0.kind == "audio" }
        #expect(audio.map(\.language) == ["eng", "fra"])
        for stream in ["a:0", "a:1"] { #expect(try Self.pcm(ours, stream).count > 0) }
    }

    /// Codecs H264Kit does not read go from a movie to a movie as they were: the packets and
    /// the sample entry byte for byte (ffprobe's packets; the stsd FFmpeg copies).
    @Test(arguments: ["ac3.mp4", "opus.mp4"])
    func anotherCodecIsCarriedByteForByte(_ input: String) throws {
        let ours = Self.path("\(input).ours.mp4"), theirs = Self.path("\(input).ffmpeg.mp4")
        let summary = try Self.mux([Self.path(input)], ours)
        try Self.ffmpegCopy(Self.path(input), theirs)
        #expect(summary.tracksLeftOut.isEmpty)
        #expect(try Self.packets(ours) == Self.packets(Self.path(input)))
        #expect(try Self.pcm(ours) == Self.pcm(theirs))
        let entry = { (path: String) throws -> [UInt8]? in
            let reader = try MovieReader(path: path)
            return reader.tracks.first { $0.mediaType == .audio }?.sampleEntries.first
        }
        #expect(try entry(ours) == entry(Self.path(input)))
    }

    /// AC-3 from a transport stream has no sample entry to write: left out, said by name.
    @Test func aTransportStreamsAC3IsLeftOutOfAMovieWithAWarning() throws {
        let summary = try Self.mux([Self.path("ac3.ts")], Self.path("ac3.ts.ours.mp4"))
        #expect(summary.tracks.map(\.mediaType) == [.video])
        #expect(summary.tracksLeftOut.count == 1)
        #expect(summary.tracksLeftOut.first?.description.contains("AC-3") == true, "\(summary.tracksLeftOut)")
    }

    /// A lost packet inside the audio: the frames it touched are counted and said, the video is
    /// untouched, the rest of the sound is carried.
    @Test func aLostAudioPacketIsCountedAndSaid() throws {
        let clean = try Data(contentsOf: URL(fileURLWithPath: Self.path("av48.ts")))
        var packets = stride(from: 0, to: clean.count, by: 188).map { clean[$0..<min($0 + 188, clean.count)] }
        let audio = packets.indices.filter { index in
            let packet = packets[index]
            let pid = (Int(packet[packet.startIndex + 1]) & 0x1F) << 8 | Int(packet[packet.startIndex + 2])
            return pid == 0x101 && packet[packet.startIndex + 1] & 0x40 == 0  // a packet continuing a PES packet
        }
        #expect(audio.count > 10)
        packets.remove(at: audio[audio.count / 2])
        let damaged = Self.path("av48-lost.ts")
        try Data(packets.joined()).write(to: URL(fileURLWithPath: damaged))
        let output = Self.path("av48-lost.mp4")
        let summary = try Self.mux([damaged], output)
        #expect(summary.inputWarnings.contains { $0.contains("PID 257") && $0.contains("damaged") }, "\(summary.inputWarnings)")
        #expect(try ffmpegFrameHashes(output) == ffmpegFrameHashes(Self.path("av48.ts")), "the video is untouched")
        // (ffprobe lists a transport stream's audio packets as it parses them: count the movie's.)
        let kept = try Self.packets(output).count, all = try Self.packets(Self.path("av48.mp4")).count
        #expect(kept >= all - 3 && kept <= all, "\(kept) of \(all) frames")
    }

    /// av48.ts with the PTS of audio PES packets moved by `ticks` (90 kHz): the middle one, or
    /// (`fromTheMiddleOn`) every one from the middle on; written beside it as `name`.
    static func movingAudioStamps(by ticks: Int64, fromTheMiddleOn: Bool = false, _ name: String) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path("av48.ts"))))
        let starts = stride(from: 0, to: bytes.count - 187, by: 188).filter { offset in
            let pid = (Int(bytes[offset + 1]) & 0x1F) << 8 | Int(bytes[offset + 2])
            return pid == 0x101 && bytes[offset + 1] & 0x40 != 0  // a packet starting a PES packet
        }
        guard starts.count > 10 else { throw TestFailure("only \(starts.count) audio PES packets") }
        for packet in fromTheMiddleOn ? Array(starts[(starts.count / 2)...]) : [starts[starts.count / 2]] {
            let pes = packet + (bytes[packet + 3] & 0x20 != 0 ? 5 + Int(bytes[packet + 4]) : 4)
            guard bytes[pes..<(pes + 3)] == [0, 0, 1], bytes[pes + 7] >> 6 == 2 else { throw TestFailure("no PES header with a PTS alone at \(pes)") }
            let at = pes + 9
            let pts = Int64(bytes[at] & 0x0E) << 29 | Int64(bytes[at + 1]) << 22 | Int64(bytes[at + 2] & 0xFE) << 14
                | Int64(bytes[at + 3]) << 7 | Int64(bytes[at + 4]) >> 1
            let moved = UInt64(pts + ticks)
            bytes[at] = bytes[at] & 0xF1 | UInt8(truncatingIfNeeded: moved >> 29) & 0x0E
            bytes[at + 1] = UInt8(truncatingIfNeeded: moved >> 22)
            bytes[at + 2] = UInt8(truncatingIfNeeded: moved >> 14) & 0xFE | 1
            bytes[at + 3] = UInt8(truncatingIfNeeded: moved >> 7)
            bytes[at + 4] = UInt8(truncatingIfNeeded: moved << 1) & 0xFE | 1
        }
        let output = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: output))
        return output
    }

    /// The decode times of a movie's first audio track, in its timescale.
    static func audioDecodeTimes(_ path: String) throws -> [Int] {
        try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=dts", "-of", "csv=p=0", path])
            .stdoutText.split(whereSeparator: \.isNewline).compactMap { Int($0) }
    }

    /// An audio PES packet stamped 33 ms back, before the previous frame's start (a splice, an
    /// encoder's slip): the mux goes through (a movie writer refuses a frame that goes back),
    /// every frame is carried, one after another, and the overlap is said.
    @Test func anAudioFrameStampedBackIsPlacedAfterTheOneBefore() throws {
        let stamped = try Self.movingAudioStamps(by: -3000, "av48-back.ts")
        let output = Self.path("av48-back.mp4")
        let summary = try Self.mux([stamped], output)
        #expect(summary.inputWarnings.contains { $0.contains("PID 257") && $0.contains("1 time(s) a frame was stamped at or before the previous frame's start")
                && $0.contains("34 ms") }, "\(summary.inputWarnings)")
        let reference = Self.path("av48-back.ffmpeg.mp4")
        try Self.ffmpegCopy(Self.path("av48.ts"), reference)
        #expect(try Self.packets(output) == Self.packets(reference), "every frame, its bytes")
        let times = try Self.audioDecodeTimes(output)
        #expect(times.count > 100 && zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 1024 }, "one frame after another")
        #expect(try ffmpegFrameHashes(output) == ffmpegFrameHashes(Self.path("av48.ts")), "the video is untouched")
    }

    /// A stamp 10 ms back (less than a frame) is kept, as FFmpeg keeps it: the frame before is
    /// shortened to meet it, the next packet's stamp holds again; no overlap is said.
    @Test func anAudioStampJitteringBackLessThanAFrameIsKept() throws {
        let stamped = try Self.movingAudioStamps(by: -900, "av48-jitter.ts")
        let output = Self.path("av48-jitter.mp4")
        let summary = try Self.mux([stamped], output)
        #expect(!summary.inputWarnings.contains { $0.contains("was stamped") }, "\(summary.inputWarnings)")
        let times = try Self.audioDecodeTimes(output)
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps.filter { $0 != 1024 }.sorted() == [1024 - 480, 1024 + 480], "\(steps.filter { $0 != 1024 })")
    }

    /// The audio's time base jumps 20 s on (past the 10 s discontinuity threshold) from the
    /// middle on: a new time base, the frames go on one after another, no overlap is said.
    @Test func anAudioTimeBaseJumpGoesOnFromTheFrameBefore() throws {
        let jumped = try Self.movingAudioStamps(by: 20 * 90_000, fromTheMiddleOn: true, "av48-jump.ts")
        let output = Self.path("av48-jump.mp4")
        let summary = try Self.mux([jumped], output)
        #expect(!summary.inputWarnings.contains { $0.contains("was stamped") }, "\(summary.inputWarnings)")
        let times = try Self.audioDecodeTimes(output)
        #expect(times.count > 100 && zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 1024 }, "one frame after another")
        let reference = Self.path("av48-jump.ffmpeg.mp4")
        try Self.ffmpegCopy(Self.path("av48.ts"), reference)
        #expect(try Self.packets(output) == Self.packets(reference), "every frame, its bytes")
    }

    /// Garbage inside an ADTS file: skipped and said, every frame around it kept.
    @Test func garbageInAnADTSStreamIsSkippedAndSaid() throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.path("a.aac"))))
        let frames = try ADTSReader(path: Self.path("a.aac")).readAllCount()
        // Between two frames, a little way in: walk the headers' lengths.
        var offset = 0
        for _ in 0..<10 { offset += Int(bytes[offset + 3] & 3) << 11 | Int(bytes[offset + 4]) << 3 | Int(bytes[offset + 5]) >> 5 }
        bytes.insert(contentsOf: [0x00, 0x11, 0x22, 0xFF, 0x00, 0x33, 0x44, 0x55], at: offset)
        let reader = ADTSReader(bytes: bytes, name: "garbage.aac")
        var count = 0
        while try reader.next() != nil { count += 1 }
        #expect(count == frames)
        #expect(reader.warnings.contains { $0.contains("skipped") }, "\(reader.warnings)")
    }
}

extension ADTSReader {
    /// Reads every frame; returns how many.
    func readAllCount() throws -> Int {
        var count = 0
        while try next() != nil { count += 1 }
        return count
    }
}
