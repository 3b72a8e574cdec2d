import ArgumentParser
import H264Kit
import SystemIO

struct Demux: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Extract the H.264 track of an MP4 or MOV file as an Annex-B elementary stream.",
        discussion: """
            Length prefixes become start codes and the sample description's SPS/PPS go before every IDR picture \
            that lacks them (what FFmpeg's h264_mp4toannexb does), so the stream plays from any IDR. A file is \
            written under a temporary name and renamed when complete.
            """
    )

    @Argument(help: "The MP4/MOV file.")
    var input: String

    @Argument(help: "The Annex-B output, or - for standard output.")
    var output: String

    @OptionGroup var limits: LimitOptions
    @Option(help: "The track ID to extract (default: the first H.264 video track).")
    var track: UInt32?

    mutating func run() throws {
        let source: MediaSource
        do { source = try MediaSource(path: input, options: .init(trackID: track, editList: .shift, movieLimits: limits.movie)) } catch { throw ToolError(error) }
        guard let reader = source.movie else { throw ToolError("\(input): not an MP4/MOV file") }
        for warning in reader.warnings { printError("\(input): warning: \(warning)") }
        // An elementary stream has no place for container metadata or a timecode track: say
        // what is left behind, and how to carry it to a new file.
        var left: [String] = []
        if let index = reader.timecodeTrackIndex(), let start = try? reader.timecodeTrack(index).startTimecode() {
            left.append("the timecode track (start \(start); mux --timecode \"\(start)\" restores it)")
        }
        if !reader.metadata.isEmpty { left.append("\(reader.metadata.count) metadata item(s) (inspect lists them; mux --meta writes them)") }
        if !left.isEmpty { printError("\(input): note: an Annex-B stream does not carry \(left.joined(separator: " or "))") }
        do {
            let file = try OutputFile(path: output)
            var writer = AnnexBWriter()
            var buffer: [UInt8] = []
            buffer.reserveCapacity(2 << 20)
            while let sample = try source.next() {
                do { try writer.append(sample, to: &buffer) } catch { throw ToolError("\(input): sample at \(sample.decodeTime): \(error)") }
                if buffer.count >= 1 << 20 {
                    try file.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try file.write(buffer)
            try file.commit()
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError(error)
        }
    }
}
