public import H264Codec
public import MediaCore

/// One output of a decompression session: a picture, or the news that a sample gave none.
/// Every sample decoded produces exactly one, in presentation order as the decoder gives them
/// (`VTDecompressionOutputCallback`'s arguments as a value).
public struct DecodedFrame: Sendable {
    public struct Flags: OptionSet, Hashable, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The sample produced no picture (before the first sync sample, or undecodable).
        public static let dropped = Flags(rawValue: 1)
        /// Part of the picture is concealment: the decoder met damaged or missing data.
        public static let concealed = Flags(rawValue: 2)
    }

    /// The picture; nil when ``flags`` contains ``Flags/dropped``.
    public var pixelBuffer: PixelBuffer?
    public var presentationTime: MediaTime
    public var duration: MediaTime
    public var flags: Flags
    /// What libavcodec reported about the picture's errors.
    public var errorFlags: DecodeErrorFlags
    /// Why the sample could not be decoded, when the decoder rejected it.
    public var error: CodecError?
    /// What libavcodec reported while decoding the sample (errors it concealed). Exact with
    /// one decoder thread; with frame threads a message can land on a neighbouring sample.
    public var messages: [String] = []
    /// The sample's position among those decoded (0-based, decode order).
    public var sampleIndex: Int
    /// Two fields; `topFieldFirst` says which is shown first.
    public var isInterlaced = false
    public var topFieldFirst = false

    public var isDropped: Bool { flags.contains(.dropped) }
}

/// Why a decompression session cannot go on.
public struct DecompressionError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The sample's format description is one this session cannot take (see
        /// ``DecompressionSession/canAccept(_:)``); finish and make a new session.
        case formatNotAccepted
        /// The decoder could not be set up or failed as a whole.
        case decoderFailed
        /// The session was invalidated, or finished, or its frame consumer went away.
        case invalidated
        /// The waiting task was cancelled.
        case cancelled
    }

    public var code: Code
    public var reason: String
    public var underlying: CodecError?

    public init(_ code: Code, _ reason: String, underlying: CodecError? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String { underlying.map { "\(reason): \($0)" } ?? reason }
}
