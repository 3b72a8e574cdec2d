import ArgumentParser
import H264Kit

struct Demux: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Extract the H.264 track of an MP4 or MOV file, or the H.264 stream of an MPEG-TS, as an Annex-B elementary stream.",
        discussion: """
            Length prefixes become start codes and the sample description's SPS/PPS go before every IDR picture \
            that lacks them (what FFmpeg's h264_mp4toannexb does), so the stream plays from any IDR. A file is \
            written under a temporary name and renamed when complete.
            """
    )

    @Argument(help: "The MP4/MOV file or transport stream (- for a transport stream on standard input).")
    var input: String

    @Argument(help: "The Annex-B output, or - for standard output.")
    var output: String

    @OptionGroup var limits: LimitOptions
    @Option(help: "The track ID to extract (default: the first H.264 video track).")
    var track: UInt32?

    func work() throws {
        let summary: StreamDemuxer.Summary
        do {
            summary = try StreamDemuxer(options: .init(trackID: track, editList: .shift, movieLimits: limits.movie)).run(path: input, to: output)
        } catch {
            throw ToolError(error)
        }
        for warning in summary.warnings { printError("\(input): warning: \(warning)") }
        // An elementary stream has no place for container metadata or a timecode track: say
        // what is left behind, and how to carry it to a new file.
        if !summary.notCarried.isEmpty { printError("\(input): note: an Annex-B stream does not carry \(summary.notCarried.joined(separator: " or "))") }
    }
}
