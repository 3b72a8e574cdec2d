import ArgumentParser
import H264Bitstream
import H264Container
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

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

    @Option(help: "The track ID to extract (default: the first H.264 video track).")
    var track: UInt32?

    mutating func run() throws {
        let reader = try MovieReader(path: input)
        for warning in reader.warnings { printError("\(input): warning: \(warning)") }
        // An elementary stream has no place for container metadata or a timecode track: say
        // what is left behind, and how to carry it to a new file.
        var left: [String] = []
        if reader.timecodeTrackIndex() != nil,
           let index = reader.timecodeTrackIndex(), let start = try? reader.timecodeTrack(index).startTimecode() {
            left.append("the timecode track (start \(start); mux --timecode \"\(start)\" restores it)")
        }
        if !reader.metadata.isEmpty { left.append("\(reader.metadata.count) metadata item(s) (inspect lists them; mux --meta writes them)") }
        if !left.isEmpty { printError("\(input): note: an Annex-B stream does not carry \(left.joined(separator: " or "))") }
        let index: Int
        if let track {
            guard let found = reader.tracks.firstIndex(where: { $0.id == track }) else {
                throw ToolError("\(input): no track \(track) (tracks: \(reader.tracks.map { "\($0.id) \($0.handlerType)" }.joined(separator: ", ")))")
            }
            guard reader.tracks[found].isH264 else { throw ToolError("\(input): track \(track) is not H.264") }
            index = found
        } else {
            guard let found = reader.firstVideoTrackIndex else { throw ToolError("\(input): no H.264 video track") }
            index = found
        }
        let sink = try OutputFile(path: output)
        var writer = AnnexBWriter()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(2 << 20)
        try reader.forEachSampleBuffer(track: index) { (sample) throws(ContainerError) in
            do { try writer.append(sample, to: &buffer) } catch {
                throw ContainerError(.invalidBox, "sample at \(sample.decodeTime): \(error)", path: input)
            }
            if buffer.count >= 1 << 20 {
                do { try sink.write(buffer) } catch { throw ContainerError(.io, "\(error)", path: output) }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try sink.write(buffer)
        try sink.commit()
    }
}

