import ArgumentParser
import FoundationEssentials
import H264Bitstream
import H264Codec
import H264Container
import H264Session
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

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

    @Option(help: ArgumentHelp("Frame rate for an Annex-B stream without VUI timing (30000/1001, 25).", valueName: "rate"))
    var fps: String?

    @Option(help: "The MP4/MOV track ID to decode (default: the first H.264 video track).")
    var track: UInt32?

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
        if let every, (FrameRate(parsing: every).map { $0.numerator == 0 } ?? true) { throw ValidationError("--every \(every): expected a positive number of seconds") }
        if let fps, FrameRate(parsing: fps) == nil { throw ValidationError("--fps \(fps): expected a rate such as 25 or 30000/1001") }
        if threads < 0 { throw ValidationError("--threads \(threads): expected 0 (automatic) or more") }
        if kind == .png && output != "-" && !output.contains("%") && frames != 1 {
            throw ValidationError("\(output): PNG output writes a file per frame; use a pattern such as frames-%05d.png, or --frames 1")
        }
        if kind == .png && output == "-" && frames != 1 { throw ValidationError("PNG to standard output needs --frames 1") }
        if noAutoscale && kind == .y4m { throw ValidationError("--no-autoscale: a Y4M stream has one picture size") }
    }

    mutating func run() throws {
        let inputName = input == "-" ? "stdin" : input
        let sink = try FrameSink(command: self)
        var session: DecompressionSession?
        let configuration = DecompressionSession.Configuration(
            pixelFormat: pixelFormat.flatMap(PixelFormat.init(name:)), threading: .init(count: threads))

        func decode(_ sample: SampleBuffer) throws {
            if sink.stream == nil { sink.stream = sample.formatDescription }
            if session == nil {
                session = try DecompressionSession(formatDescription: sample.formatDescription, configuration: configuration, outputHandler: sink.take)
            } else if !session!.canAccept(sample.formatDescription) {
                // Another NAL length size: finish this session, go on in a new one.
                session!.finish()
                try sink.check()
                session = try DecompressionSession(formatDescription: sample.formatDescription, configuration: configuration, outputHandler: sink.take)
            }
            try session!.decode(sample)
            try sink.check()
        }

        do {
            if input != "-", let prefix = try? filePrefix(input), prefix.withUnsafeBytes({ MovieReader.looksLikeMovie($0) }) {
                let reader: MovieReader
                do { reader = try MovieReader(path: input) } catch { throw ToolError("\(error)") }
                for warning in reader.warnings { printError("\(input): warning: \(warning)") }
                let index = try trackIndex(reader)
                sink.discardsBeforeZero = true
                sink.frameRate = reader.tracks[index].samples.first.map { FrameRate(UInt64(reader.tracks[index].timescale), UInt64(max($0.duration, 1))) }
                // The reader's closure throws only its own errors: carry ours out beside it.
                var stop: (any Error)?
                do {
                    try reader.forEachSampleBuffer(track: index) { (sample) throws(ContainerError) in
                        do { try decode(sample) } catch {
                            stop = error
                            throw ContainerError(.invalidInput, "stopped")
                        }
                    }
                } catch {
                    throw stop ?? ToolError("\(error)")
                }
            } else {
                var builder = SampleBufferBuilder(frameRate: .stream(fallback: fps.flatMap(FrameRate.init(parsing:)) ?? Inspect.assumedFrameRate))
                _ = try feedAnnexB(input, name: inputName, into: &builder) { _, builder in
                    while let sample = builder.nextSample() {
                        if sink.frameRate == nil { sink.frameRate = builder.frameRate }
                        try decode(sample)
                    }
                }
                try builder.finish()
                while let sample = builder.nextSample() {
                    if sink.frameRate == nil { sink.frameRate = builder.frameRate }
                    try decode(sample)
                }
                if builder.parser.nalUnitCount == 0 { throw ToolError("\(inputName): no H.264 start code found; not an Annex-B H.264 stream") }
                // What the stream parser found wrong (damaged headers, units cut off), as mux reports it.
                for diagnostic in builder.parser.diagnostics { printError("\(inputName): \(diagnostic)") }
                if strict && builder.parser.errorCount > 0 {
                    throw ToolError("\(inputName): \(builder.parser.errorCount) NAL unit(s) are damaged; stopping (--strict)")
                }
                if session == nil { throw ToolError("\(inputName): no decodable picture (no slice with its SPS and PPS)") }
            }
            session?.finish()
            try sink.check()
        } catch is FrameSink.Enough {
            session?.invalidate()
        } catch let error as BitstreamError {
            session?.invalidate()
            throw ToolError("\(inputName): \(error)")
        } catch let error as DecompressionError {
            session?.invalidate()
            throw ToolError("\(inputName): \(error)")
        } catch {
            session?.invalidate()
            throw error
        }
        try sink.close()
        sink.summarize(inputName: inputName)
    }

    private func trackIndex(_ reader: MovieReader) throws -> Int {
        if let track {
            guard let found = reader.tracks.firstIndex(where: { $0.id == track }) else { throw ToolError("\(input): no track \(track)") }
            guard reader.tracks[found].isH264 else { throw ToolError("\(input): track \(track) is not H.264 video") }
            return found
        }
        guard let found = reader.firstVideoTrackIndex else { throw ToolError("\(input): no H.264 video track") }
        return found
    }
}

/// The first bytes of a file (to tell a movie from an Annex-B stream).
func filePrefix(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ToolError("\(path): cannot open: \(errnoText())") }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 16)
    let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, 16) }
    return Array(bytes.prefix(max(n, 0)))
}

/// Where decoded frames go: selection (--frames, --every, edit-list discards), the size and
/// format fixed by the first frame, damage reports, and the writer of the chosen format.
/// The session's handler runs on the decoding thread; errors wait in `failure` for `check()`.
final class FrameSink: @unchecked Sendable {  // used from the thread that drives the session
    /// Thrown when --frames is reached.
    struct Enough: Error {}

    let kind: Decode.Kind
    let path: String
    let inputName: String
    let strict: Bool
    let limit: Int?
    let every: MediaTime?
    let autoscale: Bool
    var discardsBeforeZero = false
    var frameRate: FrameRate?
    /// The first sample's description: the Y4M header's aspect ratio, chroma siting and range.
    var stream: VideoFormatDescription?

    private var file: OutputFile?
    private var failure: (any Error)?
    private var written = 0
    private var damaged = 0
    private var dropped = 0
    private var rejected = 0
    private var nextKept: MediaTime?
    private var first: (format: PixelFormat, width: Int, height: Int)?
    private var scaler: PixelConverter?
    private var png: PNGEncoder?
    private var md5: MD5
    private var framemd5Lines: [UInt8] = []
    private static let maximumReports = 1000

    init(command: Decode) throws {
        kind = command.kind
        path = command.output
        inputName = command.input == "-" ? "stdin" : command.input
        strict = command.strict
        limit = command.frames
        every = command.every.flatMap(FrameRate.init(parsing:)).map { MediaTime(value: Int64($0.numerator), timescale: Int32(clamping: $0.denominator)) }
        autoscale = !command.noAutoscale
        md5 = try MD5()
        if kind != .png { file = try OutputFile(path: command.output) }
        if kind == .png { png = try PNGEncoder() }
    }

    /// The session's output handler.
    func take(_ frame: DecodedFrame) {
        guard failure == nil else { return }
        do { try handle(frame) } catch { failure = error }
    }

    /// Rethrows what went wrong in the handler.
    func check() throws {
        if let failure { throw failure }
    }

    private func handle(_ frame: DecodedFrame) throws {
        guard let picture = frame.pixelBuffer else {
            if frame.error != nil || !frame.messages.isEmpty {
                rejected += 1
                let why = frame.error.map { "\($0)" } ?? frame.messages.joined(separator: "; ")
                report("sample \(frame.sampleIndex): damaged, no picture (\(why))")
                if strict { throw ToolError("sample \(frame.sampleIndex): damaged (\(why)); stopping (--strict)") }
            } else {
                dropped += 1
            }
            return
        }
        if frame.flags.contains(.concealed) {
            damaged += 1
            let seconds = frame.presentationTime.isNumeric ? " at \(frame.presentationTime.seconds) s" : ""
            let messages = frame.messages.isEmpty ? "" : ": " + frame.messages.joined(separator: "; ")
            report("frame \(written) (sample \(frame.sampleIndex)\(seconds)): damaged, concealed\(describe(frame.errorFlags))\(messages)")
            if strict { throw ToolError("frame \(written) (sample \(frame.sampleIndex)): damaged; stopping (--strict)") }
        }
        // Pictures an edit list cuts off are decoded for their references, not shown (as ffmpeg).
        if discardsBeforeZero && frame.presentationTime.isNumeric && frame.presentationTime < .zero { return }
        if let every, frame.presentationTime.isNumeric {
            if let next = nextKept, frame.presentationTime < next { return }
            var next = nextKept ?? frame.presentationTime
            while next <= frame.presentationTime { next = next + every }
            nextKept = next
        }
        var output = picture
        if let first {
            if (output.format != first.format || output.width != first.width || output.height != first.height) && autoscale {
                if scaler == nil { scaler = try PixelConverter(format: first.format, size: (first.width, first.height)) }
                output = try scaler!.convert(output)
            }
        } else {
            first = (output.format, output.width, output.height)
            try writeHeader(output, interlacing: frame.isInterlaced ? (frame.topFieldFirst ? "It" : "Ib") : "Ip")
        }
        try write(output, frame: frame)
        written += 1
        if let limit, written >= limit { throw Enough() }
    }

    private func describe(_ flags: DecodeErrorFlags) -> String {
        var parts: [String] = []
        if flags.contains(.invalidBitstream) { parts.append("invalid bitstream") }
        if flags.contains(.missingReference) { parts.append("missing reference") }
        if flags.contains(.concealmentActive) { parts.append("concealment active") }
        if flags.contains(.decodeSlices) { parts.append("slices failed") }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }

    private func report(_ text: String) {
        let count = damaged + rejected
        if count <= Self.maximumReports { printError("\(inputName): \(text)") }
    }

    private func writeHeader(_ picture: PixelBuffer, interlacing: String) throws {
        switch kind {
        case .y4m:
            try file!.write(Array(y4mHeader(picture, interlacing: interlacing).utf8))
        case .framemd5:
            let rate = frameRate ?? FrameRate(25, 1)
            let header = """
                #format: frame checksums
                #version: 2
                #hash: MD5
                #tb 0: \(rate.denominator)/\(rate.numerator)
                #media_type 0: video
                #codec_id 0: rawvideo
                #dimensions 0: \(picture.width)x\(picture.height)
                #sar 0: 0/1
                #stream#, dts,        pts, duration,     size, hash

                """
            try file!.write(Array(header.utf8))
        case .raw, .png:
            break
        }
    }

    /// The header FFmpeg's yuv4mpegpipe muxer writes for the stream.
    private func y4mHeader(_ picture: PixelBuffer, interlacing: String) -> String {
        let rate = frameRate ?? FrameRate(25, 1)
        let vui = stream?.sps.vuiParameters
        let depth = picture.format.bitDepth
        var colour: String
        switch picture.format.chromaFormat {
        case .yuv420?:
            if depth > 8 {
                colour = "C420p\(depth) XYSCSS=420P\(depth)"
            } else if picture.colour?.fullRange == true {
                colour = "C420jpeg XYSCSS=420JPEG"  // yuvj420p
            } else if let vui, !vui.chromaLocInfoPresentFlag || vui.chromaSampleLocTypeTopField == 0 {
                // libavcodec takes a VUI without chroma siting as "left" (MPEG-2 siting).
                colour = "C420mpeg2 XYSCSS=420MPEG2"
            } else if vui?.chromaSampleLocTypeTopField == 2 {
                colour = "C420paldv XYSCSS=420PALDV"
            } else {
                colour = "C420jpeg XYSCSS=420JPEG"
            }
        case .yuv422?: colour = depth == 8 ? "C422 XYSCSS=422" : "C422p\(depth) XYSCSS=422P\(depth)"
        case .yuv444?: colour = depth == 8 ? "C444 XYSCSS=444" : "C444p\(depth) XYSCSS=444P\(depth)"
        case .monochrome?: colour = depth == 8 ? "Cmono" : "Cmono\(depth)"
        case nil: colour = "C444"
        }
        if let vui, vui.videoSignalTypePresentFlag {
            colour += vui.videoFullRangeFlag ? " XCOLORRANGE=FULL" : " XCOLORRANGE=LIMITED"
        } else if picture.colour?.fullRange == true {
            colour += " XCOLORRANGE=FULL"
        }
        let sar = stream?.sampleAspectRatio.map { "\($0.width):\($0.height)" } ?? "0:0"
        return "YUV4MPEG2 W\(picture.width) H\(picture.height) F\(rate.numerator):\(rate.denominator) \(interlacing) A\(sar) \(colour)\n"
    }

    private func write(_ picture: PixelBuffer, frame: DecodedFrame) throws {
        switch kind {
        case .raw:
            try file!.write(picture)
        case .y4m:
            try file!.write(Array("FRAME\n".utf8))
            try file!.write(picture)
        case .framemd5:
            picture.forEachPackedRow { md5.update($0) }
            let rate = frameRate ?? FrameRate(25, 1)
            let pts = frame.presentationTime.isNumeric
                ? frame.presentationTime.converted(toTimescale: Int32(clamping: rate.numerator)).value / Int64(rate.denominator) : Int64(written)
            func column(_ value: Int64, _ width: Int) -> String { String(repeating: " ", count: max(0, width - String(value).count)) + String(value) }
            let line = "0, \(column(pts, 10)), \(column(pts, 10)), \(column(1, 8)), \(column(Int64(picture.packedSize), 8)), \(md5.finalize())\n"
            try file!.write(Array(line.utf8))
        case .png:
            let bytes = try png!.encode(picture)
            let name = path == "-" ? "-" : expandPattern(path, number: written + 1)
            let out = try OutputFile(path: name)
            try out.write(bytes)
            try out.commit()
        }
    }

    /// `frames-%05d.png` with `number` (printf's %d, %0Nd).
    private func expandPattern(_ pattern: String, number: Int) -> String {
        guard let percent = pattern.firstIndex(of: "%") else { return pattern }
        var index = pattern.index(after: percent)
        var width = 0
        while index < pattern.endIndex, let digit = pattern[index].wholeNumberValue { width = width * 10 + digit; index = pattern.index(after: index) }
        guard index < pattern.endIndex, pattern[index] == "d" else { return pattern }
        let digits = String(number)
        return String(pattern[..<percent]) + String(repeating: "0", count: max(0, width - digits.count)) + digits + String(pattern[pattern.index(after: index)...])
    }

    func close() throws {
        try file?.commit()
    }

    func summarize(inputName: String) {
        if damaged + rejected > Self.maximumReports {
            printError("\(inputName): \(damaged + rejected - Self.maximumReports) more damaged frames not listed")
        }
        var parts = ["\(written) frames"]
        if damaged > 0 { parts.append("\(damaged) damaged and concealed") }
        if rejected > 0 { parts.append("\(rejected) samples rejected by the decoder") }
        if dropped > 0 { parts.append("\(dropped) samples with no picture (before the first sync sample, or cut off)") }
        printError("\(inputName): " + parts.joined(separator: ", "))
    }
}
