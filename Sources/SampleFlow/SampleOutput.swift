public import ISOBMFF
public import MPEGTS
public import MediaCore

/// Where samples go, named by a path: a movie, a transport stream or an Annex-B stream (and,
/// by the file name, which). Makes the ``SampleSink`` that writes it.
public enum SampleOutput: Sendable {
    /// An Annex-B stream (`"-"` for standard output), SPS/PPS before every keyframe, as the
    /// x264 CLI writes a `.264` file.
    case annexB(path: String)
    /// A movie through `MovieWriter`.
    case movie(path: String, options: MovieWriter.Options)
    /// A transport stream through `TransportStreamWriter`.
    case transportStream(path: String, options: TransportStreamWriter.Options)

    /// The output a file name implies: `.mp4`/`.m4v` and `.mov` are movies, `.ts` a transport
    /// stream and `.m2ts`/`.mts` one of 192-byte packets, anything else Annex-B.
    public init(path: String) {
        let lower = path.lowercased()
        if lower.hasSuffix(".mp4") || lower.hasSuffix(".m4v") { self = .movie(path: path, options: .init(fileType: .mp4)) }
        else if lower.hasSuffix(".mov") || lower.hasSuffix(".qt") { self = .movie(path: path, options: .init(fileType: .mov)) }
        else if lower.hasSuffix(".ts") { self = .transportStream(path: path, options: .init()) }
        else if lower.hasSuffix(".m2ts") || lower.hasSuffix(".mts") { self = .transportStream(path: path, options: .init(muxer: .init(layout: .timestamped))) }
        else { self = .annexB(path: path) }
    }

    /// The output's path.
    public var path: String {
        switch self {
        case .annexB(let path), .movie(let path, _), .transportStream(let path, _): path
        }
    }

    /// Why the output cannot carry sound of `format`, or nil when it can: an Annex-B stream
    /// carries the H.264 video alone, a transport stream AAC beside it, a movie AAC and G.711
    /// (`ulaw`, `alaw`). A receiver leaves such sound out and names it, rather than fail.
    public func refusal(of format: AudioFormatDescription) -> String? {
        switch self {
        case .annexB: return "an Annex-B stream carries the H.264 video alone"
        case .transportStream: return format.isAAC ? nil : "a transport stream carries AAC sound, not \(format.codecString) (record to .mov or .mp4)"
        case .movie: return format.isAAC || format.isG711 ? nil : "a movie written here carries AAC and G.711 sound, not \(format.codecString)"
        }
    }

    /// Opens the output: its sink, ready for the first sample. `samplesInAnnexB`: the samples
    /// come framed with start codes already (an encoder's Annex-B output), for an Annex-B output
    /// to copy as they are.
    public func makeSink(samplesInAnnexB: Bool = false) throws(SampleFlowError) -> any SampleSink {
        switch self {
        case .annexB(let path): try AnnexBSink(path: path, framing: samplesInAnnexB ? .annexB : .lengthPrefixed)
        case .movie(let path, let options): try MovieSink(path: path, options: options)
        case .transportStream(let path, let options): try TransportStreamSink(path: path, options: options)
        }
    }
}

/// The name ``SampleOutput`` had in H264Session.
@available(*, deprecated, renamed: "SampleOutput")
public typealias EncodedOutput = SampleOutput
