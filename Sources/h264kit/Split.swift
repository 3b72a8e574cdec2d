import ArgumentParser
import FoundationEssentials
import H264Kit

struct Split: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cut a stream or movie at sync samples into standalone MP4s, without re-encoding.",
        discussion: """
            Segments are cut at the first clean sync sample (one no later frame is shown before) after each \
            multiple of --segment-duration; each keeps its presentation times (an empty edit before its first frame) \
            and is named so that lexical order is time order (seg-00000.mp4, ...). DIR/index.json lists them: file, \
            first and last presentation time, frame count. concat joins them back to the same samples and times.
            """
    )

    @Argument(help: "The input: an Annex-B stream, a transport stream, MP4 or MOV.")
    var input: String

    @Argument(help: "The directory for the segments (made if missing).")
    var directory: String

    @Option(help: ArgumentHelp("The target segment length.", valueName: "seconds"))
    var segmentDuration: Double?

    @Option(help: "Cut into this many chunks as transcode --chunks does (the span divided by N).")
    var chunks: Int?

    @Flag(help: "Write MOV segments instead of MP4.")
    var mov = false

    @OptionGroup var limits: LimitOptions
    @OptionGroup var damage: DamageOptions

    func validate() throws {
        if (segmentDuration == nil) == (chunks == nil) { throw ValidationError("give --segment-duration or --chunks") }
        if let segmentDuration, segmentDuration <= 0 { throw ValidationError("--segment-duration \(segmentDuration): a positive time") }
        if let chunks, chunks < 1 { throw ValidationError("--chunks \(chunks): at least 1") }
    }

    func work() throws {
        let existed = FileManager.default.fileExists(atPath: directory)
        do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch { throw ToolError("\(directory): \(error)") }
        // A run that wrote no segment (a failure, an interruption before the first) leaves no
        // directory it made.
        var wrote = false
        defer {
            if !wrote, !existed, (try? FileManager.default.contentsOfDirectory(atPath: directory))?.isEmpty == true {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        var sourceOptions = damage.applied(to: .decoding)
        sourceOptions.movieLimits = limits.movie
        let index: SegmentIndex
        do {
            let duration = try chunks.map { (count) throws(SessionError) in try ChunkedTranscoder.chunkDuration(path: input, chunks: count, options: sourceOptions) }
                ?? MediaTime(seconds: segmentDuration!, preferredTimescale: 90_000)
            index = try MovieSplitter(segmentDuration: duration, fileType: mov ? .mov : .mp4).split(path: input, into: directory, sourceOptions: sourceOptions)
        } catch {
            throw ToolError("\(input): \(error)")
        }
        wrote = true
        for warning in index.warnings { printError("\(input): warning: \(warning)") }
        do { try index.write(into: directory) } catch { throw ToolError(error) }
        printError("\(directory): \(index.segments.count) segments, \(index.segments.reduce(0) { $0 + $1.frameCount }) frames; index.json lists them")
    }
}
