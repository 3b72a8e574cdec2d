import ArgumentParser
import H264Kit
import SystemIO

struct Mux: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put H.264 video and AAC audio (Annex-B, ADTS, MPEG-TS, or a movie's tracks) into an MP4, MOV or MPEG-TS file.",
        discussion: """
            The input is told apart by content: an Annex-B elementary stream, an ADTS (AAC) stream, an MPEG-2 \
            transport stream (188, 192 or 204-byte packets), or an MP4/MOV file. Several inputs go into one file \
            (mux video.264 sound.aac out.mp4), their tracks numbered in order. Every track is carried: H.264 and AAC \
            into any output, another codec (AC-3, Opus) where the pair of containers allows it as it was (a movie's \
            into a movie, a transport stream's into a transport stream); a track that cannot go is left out with a \
            warning. --track and --no-audio choose. AAC is copied frame by frame: from a movie its priming stays \
            trimmed by the edit list; a transport stream's or ADTS stream's is not (as ffmpeg -c copy). Each access unit becomes one sample with 4-byte NAL lengths; \
            SPS and PPS move into the avc1 sample entry (a new entry at each change; --avc3 keeps them in band). An \
            Annex-B stream is timed by its VUI timing; --fps overrides it (with a warning when they differ, as \
            ffmpeg -r does) or times a stream that has none. A transport stream is timed by its PES timestamps, \
            unwrapped past the 33-bit wrap; the pictures of damaged PES packets (lost packets) are kept for a decoder to \
            conceal and listed (--drop-damaged leaves them out). B-frames get \
            composition offsets and an edit list so the first frame shows at 0. Damaged NAL units are copied as they \
            are, with a warning and exit 0 (as ffmpeg -c copy does): a decoder conceals them. An output named .ts \
            (or .m2ts/.mts: 192-byte packets) is a transport stream: PAT and PMT every 100 ms and before every \
            keyframe, a PCR every 20 ms, one PES packet per picture with an access unit delimiter and the SPS/PPS \
            before every IDR. The file is written under a temporary name and renamed when complete; a failed run \
            leaves nothing behind.
            """
    )

    @Argument(help: ArgumentHelp("""
        The inputs (an Annex-B or ADTS stream, a transport stream or a movie, or - for standard input), then the \
        output: .mp4, .mov, .ts or .m2ts (or - for a transport stream, or a fragmented MP4, on standard output).
        """, valueName: "input... output"))
    var paths: [String] = []

    @Option(name: .customLong("track"), help: ArgumentHelp("Carry only this track (repeatable): its ID as inspect lists it (a transport stream's PID, a movie's track_ID).", valueName: "id"))
    var tracks: [UInt32] = []

    @Flag(help: "Leave the audio out.")
    var noAudio = false

    /// The inputs: every path but the last.
    private var inputs: [String] { Array(paths.dropLast()) }
    /// The output: the last path.
    private var output: String { paths.last ?? "" }

    @Option(help: ArgumentHelp("For a transport stream input: the program to read (its number), not the first with H.264.", valueName: "number"))
    var program: UInt16?

    @OptionGroup var damage: DamageOptions

    @Option(help: ArgumentHelp("Frame rate, as an exact fraction (30000/1001, 25): overrides the stream's VUI timing.", valueName: "rate"))
    var fps: String?

    @Flag(help: "Put the index (moov) before the media, for progressive download.")
    var faststart = false

    @Option(help: ArgumentHelp("Write a fragmented MP4 with fragments of about this many seconds (crash-safe, streamable).", valueName: "seconds"))
    var fragmentDuration: String?

    @Flag(help: "Signed composition offsets (ctts version 1) instead of an edit-list shift.")
    var negativeCts = false

    @Flag(help: "avc3 sample entries: parameter sets stay in the samples.")
    var avc3 = false

    @Option(help: "Container format, when the output name does not say: mp4, mov, ts or m2ts.")
    var format: String?

    @Option(help: ArgumentHelp("Add a timecode track starting at this timecode: HH:MM:SS:FF, or HH:MM:SS;FF for drop-frame (29.97, 59.94).", valueName: "timecode"))
    var timecode: String?

    @Option(help: "Timecode sample format: tmcd (32-bit, the default) or tc64 (64-bit).")
    var timecodeFormat: String = "tmcd"

    @Option(help: ArgumentHelp("The source reel (tape) name recorded with the timecode.", valueName: "name"))
    var reel: String?

    @Option(name: .customLong("meta"), help: ArgumentHelp("""
        Metadata item KEY=VALUE (repeatable). KEY: a reverse-DNS key (MOV only), a four-character udta key, or \
        title, comment, date, artist, encoder. VALUE: text, @FILE for raw data, or int:/uint:/float:/double:/hex: typed.
        """, valueName: "key=value"))
    var metadata: [String] = []

    func validate() throws {
        guard paths.count >= 2 else { throw ValidationError("expected an input and an output") }
        if inputs.filter({ $0 == "-" }).count > 1 { throw ValidationError("standard input (-) can be read once") }
        if !tracks.isEmpty && noAudio { throw ValidationError("--track chooses the tracks already; leave out --no-audio") }
        _ = try parseRate(fps, "--fps")
        if let fragmentDuration {
            guard let seconds = FrameRate(parsing: fragmentDuration), seconds.numerator > 0, seconds.numerator <= UInt64(Int64.max), seconds.denominator <= UInt64(Int32.max) else {
                throw ValidationError("--fragment-duration \(fragmentDuration): expected a positive number of seconds")
            }
            if faststart { throw ValidationError("--faststart does not apply to a fragmented file (its moov is first already)") }
            if timecode != nil { throw ValidationError("--timecode: a timecode track is not written in fragmented files yet; leave out --fragment-duration") }
        }
        if let format, MovieFileType(rawValue: format) == nil && !["ts", "m2ts"].contains(format) { throw ValidationError("--format \(format): expected mp4, mov, ts or m2ts") }
        if let layout = transportStreamLayout {
            for (given, name) in [(faststart, "--faststart"), (fragmentDuration != nil, "--fragment-duration"), (negativeCts, "--negative-cts"),
                                  (timecode != nil, "--timecode"), (!metadata.isEmpty, "--meta")] where given {
                throw ValidationError("\(name) is for a movie; \(output) is a transport stream (\(layout))")
            }
        } else if output == "-" && fragmentDuration == nil {
            throw ValidationError("writing a movie to standard output needs --fragment-duration (a plain MP4 has to seek); --format ts writes a transport stream")
        }
        if let timecode {
            do { _ = try Timecode(parsing: timecode) } catch { throw ValidationError("--timecode \(error)") }
        }
        guard ["tmcd", "tc64"].contains(timecodeFormat) else { throw ValidationError("--timecode-format \(timecodeFormat): expected tmcd or tc64") }
        if timecode == nil && reel != nil { throw ValidationError("--reel names the source of a --timecode; give --timecode too") }
        for item in metadata where !item.contains("=") { throw ValidationError("--meta \(item): expected KEY=VALUE") }
    }

    /// The --meta items, read (files for @PATH) and checked against the container.
    private func metadataItems(fileType: MovieFileType) throws -> [MetadataItem] {
        var items: [MetadataItem] = []
        for text in metadata {
            do { items.append(try MetadataItem(parsing: text)) } catch { throw ToolError("--meta \(text): \(error)") }
        }
        do { try MetadataItem.validate(items, for: fileType, path: output) } catch { throw ToolError("--meta: \(error)") }
        return items
    }

    /// The transport stream layout the output name or --format asks for, if any.
    private var transportStreamLayout: TransportPacketLayout? {
        switch format {
        case "ts": return .plain
        case "m2ts": return .timestamped
        case .some: return nil
        case nil:
            if case .transportStream(_, let options) = SampleOutput(path: output) { return options.muxer.layout }
            return nil
        }
    }

    func work() throws {
        let name = inputs.map { $0 == "-" ? "stdin" : $0 }.joined(separator: " + ")
        var options = StreamMuxer.Options(reader: .init(builder: .init(keepsParameterSetsInBand: avc3, codec: avc3 ? "avc3" : "avc1"), frameRate: try parseRate(fps, "--fps")))
        if let program { options.transportStream.selection = .program(program) }
        if !tracks.isEmpty { options.tracks = .ids(tracks.map(TrackID.init(rawValue:))) } else if noAudio { options.tracks = .allExcept([.audio]) }
        options.transportStream.keepsDamagedPESPackets = !damage.dropDamaged
        if let layout = transportStreamLayout { options.output = .transportStream(.init(muxer: .init(layout: layout), flushesEverySample: output == "-")) }
        options.movie = MovieWriter.Options(fileType: format.flatMap(MovieFileType.init(rawValue:)) ?? MovieFileType(path: output),
                                            negativeCompositionOffsets: negativeCts, parameterSets: avc3 ? .inBand : .sampleEntries)
        if faststart { options.movie.layout = .faststart }
        if let fragmentDuration, let seconds = FrameRate(parsing: fragmentDuration) {
            options.movie.layout = .fragmented(fragmentDuration: MediaTime(value: Int64(seconds.numerator), timescale: Int32(seconds.denominator)))
        }
        if transportStreamLayout == nil { options.movie.metadata = try metadataItems(fileType: options.movie.fileType) }
        if let timecode, let start = try? Timecode(parsing: timecode) {
            options.timecode = .init(start: start, sampleFormat: timecodeFormat == "tc64" ? .timeCode64 : .timeCode32, reel: reel)
        }
        let progress = Progress()
        let summary: StreamMuxer.Summary
        do {
            summary = try StreamMuxer(options: options).run(paths: inputs, to: output, progress: { state in
                progress.update(done: state.bytesRead, total: state.totalBytes, unit: "MB", note: "\(state.samples) frames")
            }, onDiagnostic: { progress.clear(); printError("\(name): \($0)") })
        } catch .bitstream(let error, _) {
            progress.clear()
            throw ToolError("\(name): \(error)\(error.code == .missingParameterSet || error.code == .noPicture ? "; nothing written" : "")")
        } catch {
            progress.clear()
            throw ToolError(error)
        }
        progress.clear()
        printWarnings(summary.warnings, name: name)
        for warning in summary.inputWarnings { printError("\(name): warning: \(warning)") }
        for track in summary.tracksLeftOut where track.reason != StreamMuxer.LeftOutTrack.notChosen {
            printError("\(name): warning: \(track)")
        }
        if summary.diagnostics.count < summary.problemCount {
            printError("\(name): \(summary.problemCount - summary.diagnostics.count) more problems not shown")
        }
        if output != "-", let movie = summary.movie {
            let rate = movie.tracks.contains { $0.mediaType == .video } ? " at \(summary.frameRate) fps" : ""
            printError("\(output): \(movie.sampleCount) samples, \(movie.duration.seconds) s\(rate), \(movie.fileSize) bytes"
                + (movie.fragmentCount > 0 ? ", \(movie.fragmentCount) fragments" : "")
                + (movie.sampleDescriptionCount > 1 ? ", \(movie.sampleDescriptionCount) sample descriptions" : ""))
            if movie.tracks.count > 1 {
                for track in movie.tracks {
                    printError("  track \(track.trackID): \(track.mediaType) \(track.codec), \(track.sampleCount) samples, \(track.duration.seconds) s"
                        + (track.startOffset > .zero ? ", starting at \(track.startOffset.seconds) s" : ""))
                }
            }
        }
        if output != "-", let stream = summary.transportStream {
            printError("\(output): \(stream.sampleCount) samples, \(stream.duration.seconds) s, \(stream.fileSize) bytes in \(stream.packetCount) packets")
            if summary.tracks.count > 1 {
                for track in summary.tracks { printError("  \(track)") }
            }
        }
        if summary.damagedNALUnits > 0 {
            printError("\(name): warning: \(summary.damagedNALUnits) NAL unit(s) are damaged; they are in the file as they were in the stream (a decoder conceals them)")
        }
    }
}
