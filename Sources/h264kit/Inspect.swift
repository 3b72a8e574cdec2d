import ArgumentParser
import H264Kit
import SystemIO

struct Inspect: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise an H.264 Annex-B or ADTS (AAC) stream, an MPEG-2 transport stream, or the tracks of an MP4/MOV file.",
        discussion: """
            Reads a raw H.264 stream (.264/.h264/.jsv/...) or standard input ("-") and prints its profile, \
            level, size, pixel format, frame rate and counts. A transport stream (told by content) is summarised \
            with its programs, PIDs and stream types, its PCR interval, its continuity errors and the summary of \
            its H.264 stream, and each audio stream (codec, rate, channels, frames, duration, language). A movie lists \
            every track, audio with its priming. Problems are reported with their byte offset; the exit code is non-zero when any NAL \
            unit could not be parsed.
            """
    )

    @Argument(help: "The stream to read, or - for standard input.")
    var file: String

    @OptionGroup var limits: LimitOptions
    @Flag(help: "Print one JSON object instead of the summary.")
    var json = false

    @Flag(help: "List every NAL unit: offset, size, type, nal_ref_idc, and for slices the slice type, frame_num and POC.")
    var nals = false

    @Flag(help: "List every access unit as a sample: PTS, DTS, duration (fractions and seconds), size and sync flag (a movie: its first video track's samples).")
    var samples = false

    @Option(help: ArgumentHelp("Frame rate for --samples (overrides the stream's VUI timing, with a warning), as an exact fraction (30000/1001, 25).", valueName: "rate"))
    var fps: String?

    @Option(help: ArgumentHelp("For a transport stream: the program whose H.264 stream to read (default: the first with one).", valueName: "number"))
    var program: UInt16?

    func validate() throws {
        if nals && samples { throw ValidationError("--nals and --samples cannot be combined") }
        _ = try parseRate(fps, "--fps")
        if fps != nil && !samples { throw ValidationError("--fps applies to --samples") }
        if fps != nil && file != "-" && (MovieReader.looksLikeMovie(path: file) || TransportStreamReader.looksLikeTransportStream(path: file)) {
            throw ValidationError("--fps times an Annex-B stream; a movie or a transport stream has its own times")
        }
    }

    func work() throws {
        let detected: (format: InputFormat, prefix: [UInt8])
        do { detected = try InputFormat.detect(path: file) } catch { throw ToolError(error) }
        if program != nil && detected.format != .transportStream { throw ToolError("\(file): --program picks a transport stream's program; this is not a transport stream") }
        if detected.format == .transportStream {
            try inspectTransportStream(prefix: detected.prefix)
            return
        }
        if detected.format == .adts {
            try inspectADTS(prefix: detected.prefix)
            return
        }
        if detected.format == .movie {
            if nals { throw ToolError("\(file): --nals lists an Annex-B stream's NAL units; for a movie's, `h264kit demux \(file) OUT.264` first") }
            let reader: MovieReader
            do { reader = try MovieReader(path: file, limits: limits.movie) } catch { throw ToolError(error) }
            if samples {
                // The first video track's samples in decoding order, with the edit list's times.
                guard let track = reader.firstVideoTrackIndex else { throw ToolError("\(file): no H.264 video track") }
                let list: MovieSampleBuffers
                do { list = try reader.sampleBuffers(track: track, editList: .trim) } catch { throw ToolError(error) }
                let records = list.enumerated().map { SampleRecord(index: $0.offset, sample: $0.element) }
                if json { try printJSON(["samples": records]) } else { print(([SampleRecord.header] + records.map(\.line)).joined(separator: "\n")) }
                return
            }
            let summary = MovieSummary(reader)
            if json { try printJSON(summary) } else { print(summary.text(name: file)) }
            for warning in reader.warnings { printError("\(file): warning: \(warning)") }
            return
        }
        let name = file == "-" ? "stdin" : file
        // Listed as they are read (a header before the first), unless the whole goes out as
        // JSON at the end.
        let options = StreamProbe.Options(listsNALUnits: nals, listsSamples: samples, frameRate: try parseRate(fps, "--fps"), keepsRecords: json)
        var listed = false
        // A listing stops when its reader goes (`| head`): the probe is cancelled, and the
        // closed output is the error.
        let output = StandardOutput()
        func list(_ header: String, _ line: String) {
            if !json, !output.line(listed ? line : header + "\n" + line) { withUnsafeCurrentTask { $0?.cancel() } }
            listed = true
        }
        let result: StreamProbe.Result
        do {
            result = try StreamProbe.probe(path: file, prefix: detected.prefix, options: options, onNALUnit: { list(NALUnitRecord.header, $0.line) },
                                           onSample: { list(SampleRecord.header, $0.line) })
        } catch {
            throw ToolError("\(name): \(error)")
        }
        if !output.flush(), let failure = output.failure { throw ToolError("\(failure)") }
        printWarnings(result.warnings, name: name)
        let parser = result.parser
        if json { try printJSON(result.summary) } else if !samples { print(result.summary.text(name: name)) }
        for diagnostic in parser.diagnostics { printError("\(name): \(diagnostic)") }
        if parser.diagnostics.count < parser.errorCount + parser.warningCount {
            printError("\(name): \(parser.errorCount + parser.warningCount - parser.diagnostics.count) more problems not shown")
        }
        if parser.errorCount > 0 {
            printError("\(name): \(parser.errorCount) NAL unit(s) could not be parsed; the summary covers the rest")
            throw ExitCode(1)
        }
        if parser.pictureCount == 0 {
            printError("\(name): no decodable picture (no slice with its SPS and PPS)")
            throw ExitCode(1)
        }
    }

    /// An ADTS stream: its configuration and frames (or its frames listed).
    private func inspectADTS(prefix: [UInt8]) throws {
        let name = file == "-" ? "stdin" : file
        if nals { throw ToolError("\(name): --nals lists an H.264 stream's NAL units; this is an ADTS (AAC) stream") }
        let output = StandardOutput()
        var listed = false
        let summary: ADTSStreamSummary
        do {
            summary = try ADTSStreamSummary.probe(path: file, prefix: prefix, listsSamples: samples, keepsRecords: json) { record in
                guard !json else { return }
                if !output.line(listed ? record.line : SampleRecord.header + "\n" + record.line) { withUnsafeCurrentTask { $0?.cancel() } }
                listed = true
            }
        } catch {
            throw ToolError(error)
        }
        if !output.flush(), let failure = output.failure { throw ToolError("\(failure)") }
        if json { try printJSON(summary) } else if !samples { print(summary.text(name: name)) }
        for warning in summary.warnings { printError("\(name): warning: \(warning)") }
        if summary.frames == 0 {
            printError("\(name): no AAC frame")
            throw ExitCode(1)
        }
    }

    /// A transport stream: its programs and PIDs, its clock, its damage, its video's summary
    /// (or its samples).
    private func inspectTransportStream(prefix: [UInt8]) throws {
        let name = file == "-" ? "stdin" : file
        if nals { throw ToolError("\(name): --nals lists an Annex-B stream's NAL units; for a transport stream's, `h264kit demux \(file) OUT.264` first") }
        let output = StandardOutput()
        var listed = false
        let result: TransportStreamProbe.Result
        do {
            result = try TransportStreamProbe.probe(path: file, prefix: prefix, program: program, listsSamples: samples, keepsRecords: json) { record in
                guard !json else { return }
                if !output.line(listed ? record.line : SampleRecord.header + "\n" + record.line) { withUnsafeCurrentTask { $0?.cancel() } }
                listed = true
            }
        } catch {
            throw ToolError(error)
        }
        if !output.flush(), let failure = output.failure { throw ToolError("\(failure)") }
        let summary = result.summary
        if json { try printJSON(summary) } else if !samples { print(summary.text(name: name)) }
        for warning in summary.warnings { printError("\(name): warning: \(warning)") }
        if summary.samples == 0 {
            printError("\(name): no decodable picture in the H.264 stream")
            throw ExitCode(1)
        }
    }
}
