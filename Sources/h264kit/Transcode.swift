import ArgumentParser
import H264Kit
import MediaProbe
import SystemIO

struct Transcode: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode an H.264 stream, MPEG-TS, MP4 or MOV and encode it again with x264, copying the sound.",
        discussion: """
            Presentation times carry over exactly (variable frame rates too; the output starts where the input \
            starts), with the colour description, sample aspect ratio, and from a movie its timecode track, metadata \
            and rotation. Damaged frames are concealed or skipped as decode does, and counted. --chunks N cuts the \
            input at clean sync samples, transcodes the chunks in parallel (one decoder thread each) and joins them: \
            the same frames and times as one piece. The sound is copied frame for frame (every audio track the \
            output can carry: AAC into any, another codec into a movie from a movie; --no-audio leaves it out). Ctrl-C (SIGINT) or SIGTERM stops it, leaving no output.
            """
    )

    @Argument(help: "The input: an Annex-B stream, a transport stream, MP4 or MOV.")
    var input: String

    @Argument(help: "The output: .mp4, .mov, .ts/.m2ts (MPEG-TS), or .264/.h264 (Annex-B).")
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

    @Option(help: ArgumentHelp("Cut into chunks of about this long instead (at the first clean sync sample after each multiple).", valueName: "seconds"))
    var chunkDuration: Double?

    @Flag(help: "Leave the sound out (by default every audio track the output can carry is copied, frame for frame).")
    var noAudio = false

    @Option(help: "Decoder threads (0: automatic; chunks use 1).")
    var decoderThreads: Int?

    @Option(help: ArgumentHelp("Write what the transcode did as JSON (frames decoded, concealed, skipped, encoded; bytes; size; first and last presentation times; warnings).",
                               valueName: "file.json"))
    var report: String?

    func validate() throws {
        if let size, size.split(separator: "x").compactMap({ Int($0) }).filter({ $0 > 0 }).count != 2 { throw ValidationError("--size \(size): expected WxH") }
        if let rate = try parseRate(fps, "--fps"), rate.numerator == 0 { throw ValidationError("--fps: a positive rate") }
        if let duration, duration <= 0 { throw ValidationError("--duration \(duration): a positive time") }
        if let chunks, chunks < 1 { throw ValidationError("--chunks \(chunks): at least 1") }
        if let chunkDuration, !(chunkDuration > 0) { throw ValidationError("--chunk-duration \(chunkDuration): a positive time") }
        if chunks != nil && chunkDuration != nil { throw ValidationError("give --chunks or --chunk-duration, not both") }
        let chunked = chunks != nil || chunkDuration != nil
        if chunked, case .annexB = SampleOutput(path: output) { throw ValidationError("--chunks and --chunk-duration join the chunks into a movie: give an .mp4 or .mov output") }
        if chunked, start != nil || duration != nil { throw ValidationError("--chunks and --chunk-duration transcode the whole input; leave out --start and --duration") }
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
        if noAudio { options.audio = .none }
        return options
    }

    mutating func run() async throws {
        let options = try options()
        let clock = HostClock(), begin = clock.currentTime
        let (input, output, passes, chunkArguments) = (self.input, self.output, encoder.passes, self.chunkArguments)
        let chunking: ChunkedTranscoder? = if let chunks { ChunkedTranscoder(options: options, chunks: chunks) }
            else if let chunkDuration { ChunkedTranscoder(options: options, chunkDuration: MediaTime(seconds: chunkDuration, preferredTimescale: 90_000)) }
            else { nil }
        // The work runs in a task that SIGINT/SIGTERM cancel: the transcoders check between
        // frames (a chunk's process is terminated), and nothing is left at the output; the
        // tool exits 130.
        let (summary, summaryChunks) = try await runInterruptibly { () throws -> (summary: Transcoder.Summary, chunks: Int?) in
            let progress = Progress()
            defer { progress.clear() }
            if var chunked = chunking {
                let work: TemporaryDirectory
                do { work = try TemporaryDirectory(prefix: "h264kit-chunks") } catch { throw ToolError("\(output): \(error)") }
                chunked.execution = .processes(command: Self.chunkCommand(options: chunkArguments))
                let summary: ChunkedTranscoder.Summary
                do {
                    summary = try chunked.run(path: input, into: output, movieOptions: MovieWriter.Options(fileType: MovieFileType(path: output)),
                                              workDirectory: work.path) { state in
                        let seconds = (clock.currentTime - begin).seconds
                        switch state.phase {
                        case .measuring: progress.update(line: "measuring")
                        case .splitting(let chunks): progress.update(line: "splitting: \(chunks) chunks")
                        case .joining: progress.update(line: "joining \(state.chunks) chunks")
                        case .transcoding:
                            let eta = state.finishedChunks > 0 ? ", ETA \(Int(seconds / Double(state.finishedChunks) * Double(state.chunks - state.finishedChunks))) s" : ""
                            progress.update(line: "\(state.finishedChunks) of \(state.chunks) chunks\(eta)")
                        }
                    }
                } catch {
                    throw ToolError("\(input): \(error)")
                }
                for (number, chunk) in summary.chunks.enumerated() {
                    for warning in chunk.warnings { printError("\(input): chunk \(number): \(warning)") }
                }
                for warning in summary.join.warnings { printError("\(input): warning: \(warning)") }
                return (summary.total, summary.chunks.count)
            }
            do {
                return (try Transcoder(options: options).run(path: input, into: SampleOutput(path: output)) { state in
                    let seconds = (clock.currentTime - begin).seconds
                    let rate = seconds > 0 ? Double(state.frames) / seconds : 0
                    var line = "\(passes > 1 ? "pass \(state.pass)/\(passes), " : "")\(state.frames) frames, \(Int(rate)) fps"
                    if let fraction = state.fraction, fraction > 0.01 { line = "\(Int(fraction * 100))%, " + line + ", ETA \(Int(seconds / fraction - seconds)) s" }
                    progress.update(line: line)
                }, nil)
            } catch {
                throw ToolError("\(input): \(error)")
            }
        }
        if chunking == nil { for warning in summary.warnings { printError("\(input): warning: \(warning)") } }
        if summary.concealedFrames + summary.droppedFrames > 0 {
            printError("\(input): \(summary.concealedFrames) damaged frames concealed, \(summary.droppedFrames) samples gave no picture and were skipped")
        }
        if let report {
            try writeFile(report, try jsonBytes(summary))
        }
        printError("\(output): \(summary.encodedFrames) frames \(summary.width)x\(summary.height)\(summaryChunks.map { ", \($0) chunks" } ?? ""), \(decimalText((clock.currentTime - begin).seconds, 2)) s")
    }

    /// What each chunk's process is given: these options, but the chunking, the start and
    /// duration (refused with chunks) and the decoder threads (each chunk decodes on one thread).
    var chunkArguments: [String] {
        encoder.arguments + limits.arguments + (size.map { ["--size", $0] } ?? []) + (fps.map { ["--fps", $0] } ?? []) + ["--decoder-threads", "1"]
            + (noAudio ? ["--no-audio"] : [])
    }

    /// Each chunk runs this program again: `h264kit transcode CHUNK OUTPUT --report REPORT OPTIONS…`.
    static func chunkCommand(options: [String]) -> @Sendable (String, String, String) -> [String] {
        let executable = ChildProcess.currentExecutable
        return { input, output, report in [executable, "transcode", input, output, "--report", report] + options }
    }
}
