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

/// An output file written under a temporary name and renamed into place by ``commit()``;
/// removed if never committed. "-" is standard output.
final class OutputFile {
    let path: String
    private let temporary: String?
    private let fd: Int32
    private var committed = false

    init(path: String) throws(ToolError) {
        self.path = path
        if path == "-" {
            fd = 1
            temporary = nil
            return
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory).\(name).\(getpid()).partial"
        fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ToolError("\(path): cannot create: \(errnoText())") }
        self.temporary = temporary
    }

    func write(_ bytes: [UInt8]) throws(ToolError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ToolError("\(path): write failed: \(errnoText())")
            }
            offset += n
        }
    }

    func commit() throws(ToolError) {
        guard let temporary else { return }
        guard close(fd) == 0 else { throw ToolError("\(path): write failed: \(errnoText())") }
        committed = true
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ToolError("\(path): cannot rename into place: \(errnoText())")
        }
    }

    deinit {
        if !committed, let temporary {
            close(fd)
            unlink(temporary)
        }
    }
}
