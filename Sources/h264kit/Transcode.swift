import ArgumentParser
import H264Kit
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

struct Transcode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an H.264 stream, MP4 or MOV and encode it again with x264.",
        discussion: """
            Presentation times carry over exactly (variable frame rates too; the output starts where the input \
            starts), with the colour description, sample aspect ratio, and from a movie its timecode track, metadata \
            and rotation. Damaged frames are concealed or skipped as decode does, and counted. --chunks N cuts the \
            input at clean sync samples, transcodes the chunks in parallel (one decoder thread each) and joins them: \
            the same frames and times as one piece.
            """
    )

    @Argument(help: "The input: an Annex-B stream, MP4 or MOV.")
    var input: String

    @Argument(help: "The output: .mp4, .mov, or .264/.h264 (Annex-B).")
    var output: String

    @OptionGroup var encoder: Encode.EncoderOptions
    @OptionGroup var limits: LimitOptions

    @Option(help: ArgumentHelp("Scale to this size.", valueName: "WxH"))
    var size: String?

    @Option(help: ArgumentHelp("Keep at most this many frames a second (frames are dropped, never repeated).", valueName: "rate"))
    var fps: String?

    @Option(help: ArgumentHelp("Start at this presentation time: a movie is decoded from the sync sample before it; times are kept, not shifted.", valueName: "seconds"))
    var start: Double?

    @Option(help: ArgumentHelp("Stop after this long.", valueName: "seconds"))
    var duration: Double?

    @Option(help: "Cut into this many chunks and transcode them in parallel (movie output).")
    var chunks: Int?

    @Option(help: "Decoder threads (0: automatic; chunks use 1).")
    var decoderThreads: Int?

    func validate() throws {
        if let size, size.split(separator: "x").compactMap({ Int($0) }).filter({ $0 > 0 }).count != 2 { throw ValidationError("--size \(size): expected WxH") }
        if let rate = try parseRate(fps, "--fps"), rate.numerator == 0 { throw ValidationError("--fps: a positive rate") }
        if let duration, duration <= 0 { throw ValidationError("--duration \(duration): a positive time") }
        if let chunks, chunks < 1 { throw ValidationError("--chunks \(chunks): at least 1") }
        if chunks != nil, case .annexB = EncodedOutput(path: output) { throw ValidationError("--chunks writes a movie: give an .mp4 or .mov output") }
        if chunks != nil, start != nil || duration != nil { throw ValidationError("--chunks transcodes the whole input; leave out --start and --duration") }
    }

    func options() throws -> Transcoder.Options {
        // The size and rate are replaced by the input's.
        var options = Transcoder.Options(encoder: encoder.settings(width: 16, height: 16, format: .yuv420p, frameRate: FrameRate(25, 1)), passes: encoder.passes)
        options.limits = limits.pictures
        if let decoderThreads { options.decoderThreading = .init(count: decoderThreads) }
        options.source.movieLimits = limits.movie
        if let parts = size?.split(separator: "x").compactMap({ Int($0) }) { options.size = (parts[0], parts[1]) }
        if let rate = try parseRate(fps, "--fps") { options.interval = rate.frameDuration }
        options.start = start.map { MediaTime(seconds: $0, preferredTimescale: 90_000) }
        options.duration = duration.map { MediaTime(seconds: $0, preferredTimescale: 90_000) }
        return options
    }

    mutating func run() throws {
        let options = try options()
        let progress = Progress()
        let clock = HostClock(), begin = clock.currentTime
        if let chunks {
            let work: TemporaryDirectory
            do { work = try TemporaryDirectory(prefix: "h264kit-chunks") } catch { throw ToolError("\(output): \(error)") }
            var chunked = ChunkedTranscoder(options: options, chunks: chunks)
            chunked.execution = .processes(command: Self.chunkCommand(options: Self.chunkOptions(CommandLine.arguments)))
            let summary: ChunkedTranscoder.Summary
            do {
                summary = try chunked.run(path: input, into: output, movieOptions: MovieWriter.Options(fileType: MovieFileType(path: output)), workDirectory: work.path)
            } catch {
                throw ToolError("\(input): \(error)")
            }
            for warning in summary.chunks.flatMap(\.warnings) { printError(warning) }
            for warning in summary.join.warnings { printError("\(input): warning: \(warning)") }
            let frames = summary.chunks.reduce(0) { $0 + $1.encodedFrames }
            printError("\(output): \(frames) frames in \(summary.segments.segments.count) chunks, \(fixed((clock.currentTime - begin).seconds, 2)) s")
            return
        }
        let summary: Transcoder.Summary
        do {
            summary = try Transcoder(options: options).run(path: input, into: EncodedOutput(path: output)) { state in
                let seconds = (clock.currentTime - begin).seconds
                let rate = seconds > 0 ? Double(state.frames) / seconds : 0
                var line = "\(encoder.passes > 1 ? "pass \(state.pass)/\(encoder.passes), " : "")\(state.frames) frames, \(Int(rate)) fps"
                if let fraction = state.fraction, fraction > 0.01 { line = "\(Int(fraction * 100))%, " + line + ", ETA \(Int(seconds / fraction - seconds)) s" }
                progress.update(line: line)
            }
        } catch {
            progress.clear()
            throw ToolError("\(input): \(error)")
        }
        progress.clear()
        for warning in summary.warnings { printError("\(input): warning: \(warning)") }
        if summary.concealedFrames + summary.droppedFrames > 0 {
            printError("\(input): \(summary.concealedFrames) damaged frames concealed, \(summary.droppedFrames) samples gave no picture and were skipped")
        }
        printError("\(output): \(summary.encodedFrames) frames \(summary.width)x\(summary.height), \(fixed((clock.currentTime - begin).seconds, 2)) s")
    }

    /// The options of this command line to hand on to each chunk's process: every `--name value`
    /// except the chunking and the decoder threads (each chunk decodes on one thread).
    static func chunkOptions(_ arguments: [String]) -> [String] {
        var tokens = arguments.drop { $0 != "transcode" }.dropFirst()[...]
        var options: [String] = []
        while let token = tokens.popFirst() {
            guard token.hasPrefix("--") else { continue }  // the input or output
            let name = token.split(separator: "=", maxSplits: 1)[0]
            let value = token.contains("=") ? nil : tokens.popFirst()
            guard name != "--chunks", name != "--decoder-threads" else { continue }
            options += [token] + (value.map { [$0] } ?? [])
        }
        return options + ["--decoder-threads", "1"]
    }

    /// Each chunk runs this program again: `h264kit transcode CHUNK OUTPUT OPTIONS…`.
    static func chunkCommand(options: [String]) -> @Sendable (String, String) -> [String] {
        var path = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        let executable = length > 0 ? String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        return { input, output in [executable, "transcode", input, output] + options }
    }
}
