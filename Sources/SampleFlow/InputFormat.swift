import ISOBMFF
import MPEGTS
import SystemIO
import SystemPackage

/// What an input holds, told by its first bytes, never by its name: an MP4/MOV file, an MPEG-2
/// transport stream (188, 192 or 204-byte packets), an ADTS stream (AAC frames after ADTS
/// headers, the second where the first says) or, failing all, an Annex-B stream.
public enum InputFormat: Sendable, Hashable {
    /// An Annex-B H.264 elementary stream (or anything else: its reader says what is wrong).
    case annexB
    /// An MP4 or MOV file.
    case movie
    /// An MPEG-2 transport stream.
    case transportStream
    /// An ADTS stream of AAC (a `.aac` file).
    case adts

    /// Bytes read from standard input to tell what it holds: five packets of the largest layout.
    public static let standardInputPrefixSize = TransportPacketLayout.syncRun * TransportPacketLayout.withParity.stride

    /// What `path` holds. A file is only peeked at (`prefix` is empty); standard input (`"-"`)
    /// cannot be read twice, so the bytes read to tell are returned for its reader to take
    /// first (`AnnexBReader.init(fileDescriptor:name:prefix:options:)`,
    /// `TransportStreamReader.init(fileDescriptor:name:prefix:options:)`). Standard input is
    /// never a movie (a movie has to seek).
    public static func detect(path: String) throws(SampleFlowError) -> (format: InputFormat, prefix: [UInt8]) {
        guard path == "-" else {
            if TransportStreamReader.looksLikeTransportStream(path: path) { return (.transportStream, []) }
            if MovieReader.looksLikeMovie(path: path) { return (.movie, []) }
            if let prefix = try? filePrefix(path, count: 4096), ADTSReader.looksLikeADTS(prefix: prefix) { return (.adts, []) }
            return (.annexB, [])
        }
        let input = ChunkedInput(descriptor: .standardInput, name: "stdin")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: standardInputPrefixSize, alignment: 1)
        defer { buffer.deallocate() }
        let count: Int
        do { count = try input.readFully(into: buffer) } catch { throw .file(error) }
        let prefix = Array(buffer[..<count])
        if TransportStreamReader.looksLikeTransportStream(prefix: prefix) { return (.transportStream, prefix) }
        return (ADTSReader.looksLikeADTS(prefix: prefix) ? .adts : .annexB, prefix)
    }
}
