import ArgumentParser
import H264Kit

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an H.264 stream or MP4/MOV file to raw video, Y4M, PNG images or frame hashes.",
        discussion: """
            Frames come out in presentation order, in the stream's own pixel format unless --pix-fmt says \
            otherwise. Raw output has ffmpeg's rawvideo layout (16-bit little-endian samples above 8 bits); \
            .y4m pipes into ffplay or mpv; PNG names need a frame number pattern (frames-%05d.png) unless one \
            frame is asked for; .framemd5 writes ffmpeg's -f framemd5 lines. As ffmpeg does, pictures after a \
            size change are scaled to the first size (--no-autoscale keeps them, for raw and framemd5 output). \
            Damaged pictures are concealed as ffmpeg conceals them and reported on standard error; --strict \
            stops at the first one instead.
            """
    )

    @Argument(help: "The input: an Annex-B stream, an MP4/MOV file, or - for an Annex-B stream on standard input.")
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp("OUT.yuv, OUT.y4m, frames-%05d.png, OUT.framemd5, or - (standard output).", valueName: "path"))
    var output: String

    @Option(help: ArgumentHelp("Output format when the name does not say: raw, y4m, png or framemd5.", valueName: "format"))
    var format: String?

    @Option(name: .customLong("pix-fmt"), help: ArgumentHelp("Convert to this pixel format (yuv420p, nv12, rgb24, bgra, yuv444p10le, ...).", valueName: "format"))
    var pixelFormat: String?

    @Option(help: ArgumentHelp("Stop after this many frames.", valueName: "count"))
    var frames: Int?

    @Option(help: ArgumentHelp("Keep one frame every this many seconds (thumbnails).", valueName: "seconds"))
    var every: String?

    @Option(help: "Decoder threads (0: one per core).")
    var threads = 0

    @Flag(help: "Stop with an error at the first damaged frame.")
    var strict = false

    @Flag(name: .customLong("no-autoscale"), help: "Keep each picture's own size after a size change (raw and framemd5 output).")
    var noAutoscale = false

    @Option(help: ArgumentHelp("Frame rate for an Annex-B stream (30000/1001, 25); overrides its VUI timing.", valueName: "rate"))
    var fps: String?

    @Option(help: "The MP4/MOV track ID to decode (default: the first H.264 video track).")
    var track: UInt32?

    @OptionGroup var limits: LimitOptions

    enum Kind: String { case raw, y4m, png, framemd5 }

    var kind: Kind {
        if let format, let kind = Kind(rawValue: format) { return kind }
        let lower = output.lowercased()
        if lower.hasSuffix(".y4m") { return .y4m }
        if lower.hasSuffix(".png") { return .png }
        if lower.hasSuffix(".framemd5") || lower.hasSuffix(".md5") { return .framemd5 }
        return .raw
    }

    func validate() throws {
        if let format, Kind(rawValue: format) == nil { throw ValidationError("--format \(format): expected raw, y4m, png or framemd5") }
        if let pixelFormat, PixelFormat(name: pixelFormat) == nil {
            throw ValidationError("--pix-fmt \(pixelFormat): not a format this tool writes (yuv420p, yuv422p, yuv444p, gray, nv12, rgb24, bgra, with 10le/12le/... for more bits)")
        }
        if let frames, frames <= 0 { throw ValidationError("--frames \(frames): expected a positive count") }
        _ = try parseRate(every, "--every")
        _ = try parseRate(fps, "--fps")
        if threads < 0 { throw ValidationError("--threads \(threads): expected 0 (automatic) or more") }
        if kind == .png && output != "-" && !output.contains("%") && frames != 1 {
            throw ValidationError("\(output): PNG output writes a file per frame; use a pattern such as frames-%05d.png, or --frames 1")
        }
        if kind == .png && output == "-" && frames != 1 { throw ValidationError("PNG to standard output needs --frames 1") }
        if noAutoscale && kind == .y4m { throw ValidationError("--no-autoscale: a Y4M stream has one picture size") }
    }

    mutating func run() throws {
        let name = input == "-" ? "stdin" : input
        var options = FrameReader.Options(threading: .init(count: threads), pixelFormat: pixelFormat.flatMap(PixelFormat.init(name:)),
                                          size: noAutoscale ? .native : .first, limits: limits.pictures)
        options.interval = try parseRate(every, "--every").map { MediaTime(value: Int64($0.numerator), timescale: Int32(clamping: $0.denominator)) }
        let reader: FrameReader
        var sourceOptions = MediaSource.Options.decoding
        sourceOptions.annexB.frameRate = try parseRate(fps, "--fps")
        sourceOptions.trackID = track
        sourceOptions.movieLimits = limits.movie
        do { reader = try FrameReader(path: input, options: options, sourceOptions: sourceOptions) } catch {
            throw ToolError("\(name): \(error)")
        }
        if let movie = reader.source.movie { for warning in movie.warnings { printError("\(name): warning: \(warning)") } }
        var writer: (any PictureWriter)?
        var report = DamageReport(name: name, strict: strict)
        var written = 0
        do {
            while written < (frames ?? .max), let frame = try reader.next() {
                try report.note(frame, written: written)
                guard let picture = frame.pixelBuffer else { continue }
                if writer == nil { writer = try makeWriter(reader.source) }
                try writer!.write(picture, at: frame.presentationTime, fieldOrder: frame.isInterlaced ? (frame.topFieldFirst ? .topFieldFirst : .bottomFieldFirst) : .progressive)
                written += 1
            }
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("\(name): \(error)")
        }
        if case .annexB(let stream) = reader.source.kind {
            // What the stream parser found wrong (damaged headers, units cut off), as mux reports it.
            printWarnings(of: stream, name: name)
            for diagnostic in stream.parser.diagnostics { printError("\(name): \(diagnostic)") }
            if strict && stream.parser.errorCount > 0 { throw ToolError("\(name): \(stream.parser.errorCount) NAL unit(s) are damaged; stopping (--strict)") }
        }
        do { try writer?.finish() } catch { throw ToolError(error) }
        report.summarize(written: written)
    }

    private func makeWriter(_ source: MediaSource) throws -> any PictureWriter {
        let rate = source.frameRate ?? FrameRate(25, 1)
        switch kind {
        case .raw: return try RawVideoWriter(path: output)
        case .y4m: return try Y4MWriter(path: output, frameRate: rate, stream: source.formatDescription)
        case .framemd5: return try FrameMD5Writer(path: output, frameRate: rate)
        case .png: return try PNGSequenceWriter(pattern: output)
        }
    }
}

/// What the decoder said about damage, on standard error: a line per damaged frame (the first
/// thousand), and the counts at the end; with --strict the first one stops the run.
struct DamageReport {
    let name: String
    let strict: Bool
    private var damaged = 0, dropped = 0, rejected = 0
    static let maximumLines = 1000

    init(name: String, strict: Bool) {
        self.name = name
        self.strict = strict
    }

    mutating func note(_ frame: DecodedFrame, written: Int) throws {
        if frame.flags.contains(.notDisplayed) && !frame.isDropped { return }
        guard frame.pixelBuffer != nil else {
            if frame.error != nil || !frame.messages.isEmpty {
                rejected += 1
                let why = frame.error.map { "\($0)" } ?? frame.messages.joined(separator: "; ")
                line("sample \(frame.sampleIndex): damaged, no picture (\(why))")
                if strict { throw ToolError("\(name): sample \(frame.sampleIndex): damaged (\(why)); stopping (--strict)") }
            } else {
                dropped += 1
            }
            return
        }
        guard frame.flags.contains(.concealed) else { return }
        damaged += 1
        let seconds = frame.presentationTime.isNumeric ? " at \(frame.presentationTime.seconds) s" : ""
        let messages = frame.messages.isEmpty ? "" : ": " + frame.messages.joined(separator: "; ")
        let flags = frame.errorFlags.isEmpty ? "" : " (\(frame.errorFlags))"
        line("frame \(written) (sample \(frame.sampleIndex)\(seconds)): damaged, concealed\(flags)\(messages)")
        if strict { throw ToolError("\(name): frame \(written) (sample \(frame.sampleIndex)): damaged; stopping (--strict)") }
    }

    private func line(_ text: String) {
        if damaged + rejected <= Self.maximumLines { printError("\(name): \(text)") }
    }

    func summarize(written: Int) {
        if damaged + rejected > Self.maximumLines { printError("\(name): \(damaged + rejected - Self.maximumLines) more damaged frames not listed") }
        var parts = ["\(written) frames"]
        if damaged > 0 { parts.append("\(damaged) damaged and concealed") }
        if rejected > 0 { parts.append("\(rejected) samples rejected by the decoder") }
        if dropped > 0 { parts.append("\(dropped) samples with no picture (before the first sync sample, or cut off)") }
        printError("\(name): " + parts.joined(separator: ", "))
    }
}
