import ArgumentParser
import H264Kit

struct Decode: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an H.264 stream, MPEG-TS or MP4/MOV file to raw video, Y4M, PNG images or frame hashes.",
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

    @Argument(help: "The input: an Annex-B stream, a transport stream, an MP4/MOV file, or - for a stream on standard input.")
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

    var kind: FrameExporter.Format { format.flatMap(FrameExporter.Format.init(rawValue:)) ?? FrameExporter.Format(path: output) }

    func validate() throws {
        if let format, FrameExporter.Format(rawValue: format) == nil { throw ValidationError("--format \(format): expected raw, y4m, png or framemd5") }
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

    func work() throws {
        let name = input == "-" ? "stdin" : input
        var options = FrameExporter.Options(format: kind, frameLimit: frames, stopsAtDamage: strict)
        options.reader = FrameReader.Options(threading: .init(count: threads), pixelFormat: pixelFormat.flatMap(PixelFormat.init(name:)),
                                             size: noAutoscale ? .native : .first, limits: limits.pictures)
        options.reader.interval = try parseRate(every, "--every").map { MediaTime(value: Int64($0.numerator), timescale: Int32(clamping: $0.denominator)) }
        options.source.annexB.frameRate = try parseRate(fps, "--fps")
        options.source.trackID = track
        options.source.movieLimits = limits.movie
        // A line a damaged frame (the first thousand), the counts at the end.
        var listed = 0
        let summary: FrameExporter.Summary
        do {
            summary = try FrameExporter(options: options).run(path: input, to: output, onDamage: { damage in
                listed += 1
                if listed <= 1000 { printError("\(name): \(damage)") }
            }, onDiagnostic: { printError("\(name): \($0)") })
        } catch .damaged(let reason) {
            throw ToolError("\(name): \(reason); stopping (--strict)")
        } catch {
            throw ToolError("\(name): \(error)")
        }
        for warning in summary.movieWarnings { printError("\(name): warning: \(warning)") }
        printWarnings(summary.streamWarnings, name: name)
        if listed > 1000 { printError("\(name): \(listed - 1000) more damaged frames not listed") }
        var parts = ["\(summary.frames) frames"]
        if summary.concealedFrames > 0 { parts.append("\(summary.concealedFrames) damaged and concealed") }
        if summary.rejectedSamples > 0 { parts.append("\(summary.rejectedSamples) samples rejected by the decoder") }
        if summary.samplesWithoutPicture > 0 { parts.append("\(summary.samplesWithoutPicture) samples with no picture (before the first sync sample, or cut off)") }
        printError("\(name): " + parts.joined(separator: ", "))
    }
}
