public import H264Codec
public import MediaCore

/// One output of a decompression session: a picture, or the news that a sample gave none.
/// Every sample decoded produces exactly one, in presentation order as the decoder gives them
/// (`VTDecompressionOutputCallback`'s arguments as a value).
public struct DecodedFrame: Sendable {
    /// What became of the sample: dropped, concealed or not displayed (`VTDecodeInfoFlags`).
    public struct Flags: OptionSet, Hashable, Sendable {
        /// The flags' bits.
        public let rawValue: Int
        /// Flags with the given bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// The sample produced no picture (before the first sync sample, or undecodable).
        public static let dropped = Flags(rawValue: 1)
        /// Part of the picture is concealment: the decoder met damaged or missing data.
        public static let concealed = Flags(rawValue: 2)
        /// The sample was decoded (later samples need it) but its picture is not shown: it is
        /// outside the movie's edit list (`SampleAttachments/doNotDisplay`).
        public static let notDisplayed = Flags(rawValue: 4)
    }

    /// The picture; nil when ``flags`` contains ``Flags/dropped`` or ``Flags/notDisplayed``.
    public var pixelBuffer: PixelBuffer?
    /// The sample's presentation time (`VTDecompressionOutputCallback`'s presentationTimeStamp).
    public var presentationTime: MediaTime
    /// The sample's duration (`VTDecompressionOutputCallback`'s presentationDuration).
    public var duration: MediaTime
    /// What became of the sample (`VTDecompressionOutputCallback`'s infoFlags).
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
    /// Whether the top field is shown first, for an interlaced picture.
    public var topFieldFirst = false

    /// Whether the sample produced no picture.
    public var isDropped: Bool { flags.contains(.dropped) }

    /// A frame with the given fields.
    public init(pixelBuffer: PixelBuffer?, presentationTime: MediaTime, duration: MediaTime, flags: Flags, errorFlags: DecodeErrorFlags = [],
                error: CodecError? = nil, messages: [String] = [], sampleIndex: Int, isInterlaced: Bool = false, topFieldFirst: Bool = false) {
        self.pixelBuffer = pixelBuffer
        self.presentationTime = presentationTime
        self.duration = duration
        self.flags = flags
        self.errorFlags = errorFlags
        self.error = error
        self.messages = messages
        self.sampleIndex = sampleIndex
        self.isInterlaced = isInterlaced
        self.topFieldFirst = topFieldFirst
    }
}
