import ArgumentParser
import H264Kit

struct Concat: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join movies (or the segments of a split's index.json) into one movie, without re-encoding.",
        discussion: """
            Samples are copied in order with their times: a segment that starts where the previous one ended keeps \
            its times, one that starts earlier is moved to follow it (as ffmpeg's concat demuxer does). Differing \
            parameter sets get a new sample description. The first input's timecode, metadata and rotation carry over.
            """
    )

    @Argument(help: "The movies in order, or one index.json written by split; the last argument is the output.")
    var files: [String]

    @Option(help: ArgumentHelp("Carry the timecode, metadata and rotation over from this movie instead of the first input.", valueName: "movie"))
    var carryOverFrom: String?

    func validate() throws {
        if files.count < 2 { throw ValidationError("give the inputs and the output") }
    }

    func work() throws {
        var inputs = Array(files.dropLast())
        let output = files.last!
        if inputs.count == 1, inputs[0].hasSuffix(".json") {
            do { inputs = try SegmentIndex(contentsOf: inputs[0]).segmentPaths(besideIndexAt: inputs[0]) } catch { throw ToolError(error) }
        }
        let options = MovieWriter.Options(fileType: MovieFileType(path: output), keepsStartTime: true)
        let summary: MovieConcatenator.Summary
        do {
            summary = try MovieConcatenator(options: options, movieData: carryOverFrom.map { .movie(path: $0) } ?? .firstInput).concatenate(inputs, into: output)
        } catch {
            throw ToolError("\(error)")
        }
        for warning in summary.warnings { printError("warning: not carried over: \(warning)") }
        let moved = summary.shifts.filter { $0 != .zero }.count
        printError("\(output): \(summary.movie.sampleCount) samples from \(inputs.count) files\(moved > 0 ? ", \(moved) moved to follow the previous one" : "")")
    }
}
