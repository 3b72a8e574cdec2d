import ArgumentParser
import H264Kit

struct Demux: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Extract the H.264 track of an MP4/MOV file or MPEG-TS as an Annex-B stream, or its AAC track as ADTS (.aac).",
        discussion: """
            Length prefixes become start codes and the sample description's SPS/PPS go before every IDR picture \
            that lacks them (what FFmpeg's h264_mp4toannexb does), so the stream plays from any IDR. An output \
            named .aac (or .adts) gets the first AAC track (--track for another), each frame behind a 7-byte ADTS \
            header as ffmpeg writes it; every frame is written, the encoder's priming too (ADTS has no edit list). \
            A file is written under a temporary name and renamed when complete.
            """
    )

    @Argument(help: "The MP4/MOV file or transport stream (- for a transport stream on standard input).")
    var input: String

    @Argument(help: "The Annex-B output, an .aac file for the audio, or - for standard output (Annex-B; --audio for ADTS).")
    var output: String

    @Flag(help: "Write the AAC track as ADTS whatever the output's name.")
    var audio = false

    @OptionGroup var limits: LimitOptions
    @Option(help: "The track ID to extract, as inspect lists it (default: the first H.264 video track, or for .aac the first AAC track).")
    var track: UInt32?

    func work() throws {
        let summary: StreamDemuxer.Summary
        do {
            summary = try StreamDemuxer(options: .init(trackID: track, editList: .shift, movieLimits: limits.movie), stream: audio ? .audio : nil).run(path: input, to: output)
        } catch {
            throw ToolError(error)
        }
        for warning in summary.warnings { printError("\(input): warning: \(warning)") }
        // An elementary stream has no place for container metadata or a timecode track: say
        // what is left behind, and how to carry it to a new file.
        if !summary.notCarried.isEmpty { printError("\(input): note: an elementary stream does not carry \(summary.notCarried.joined(separator: " or "))") }
    }
}
