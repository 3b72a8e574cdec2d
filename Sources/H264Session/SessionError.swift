public import H264Codec
public import MediaIO
public import MediaCore
public import SampleFlow
public import SystemIO

/// Why a session call failed: the one error type of the sessions, with typed cases. Reading an
/// input or writing an output goes through SampleFlow, whose error (with its input, sample,
/// byte and cause) comes whole in ``source(_:)``.
public enum SessionError: Error, Sendable, CustomStringConvertible {
    /// The sample's format description cannot follow the session's (see
    /// ``DecompressionSession/canAccept(_:)``): finish this session and make a new one.
    case formatNotAccepted(session: VideoFormatDescription, sample: VideoFormatDescription)
    /// A sample the session does not decode (audio, or a codec carried as it is): a
    /// decompression session decodes H.264 video.
    case notVideo(FormatDescription)
    /// No longer thrown (kept for callers that match it): a session made without an output
    /// handler is asynchronous, its outputs consumed from its `frames`.
    case outputHandlerRequired
    /// The session delivers to its output handler: it has no ``DecompressionSession/frames``.
    case outputsGoToHandler
    /// The session's outputs are consumed through one sequence, and it was taken already.
    case outputSequenceTaken
    /// A picture of another size or pixel format than the session encodes, and the session
    /// was not asked to convert (``CompressionSession/Configuration/convertsPictures``).
    case pictureMismatch(expected: PictureGeometry, got: PictureGeometry)
    /// A presentation time that is not a number, or not after the previous picture's.
    case presentationTimeOutOfOrder(MediaTime, previous: MediaTime?)
    /// Settings the checks or x264 refused.
    case invalidSettings(CodecError)
    /// An option out of its range (a picture interval that is not a positive time, a size
    /// that is not positive); the text names it.
    case invalidOption(String)
    /// A live change the running encoder cannot make (x264 would ignore it).
    case unsupportedChange(LiveChangeProblem)
    /// A call out of order (a multi-pass session's passes, encoding after `CompressionSession/finish()`).
    case outOfOrder(Call)
    /// The codec failed as a whole (the decoder could not be set up, x264 failed on a picture).
    case codecFailed(CodecError)
    /// The session was finished or invalidated (or its consumer went away): no more input.
    case invalidated
    /// A blocking `encode`/`decode` found the session's outputs waiting with nobody consuming
    /// its `frames` sequence for `waited` seconds (the consumer was to run on the same thread,
    /// after the feeding loop): consume `frames` on another task, call the `async` form, or
    /// give the session an output handler. `inFlight` outputs and inputs were waiting.
    case outputsNotConsumed(waited: Double, inFlight: Int)
    /// The waiting task was cancelled (or a chunked transcode stopped, by a cancel or another
    /// chunk's failure).
    case cancelled
    /// A chunk of a ``ChunkedTranscoder`` failed in its child process: its number (from 0) and
    /// why, in the child's own words (its exit status and last message).
    case chunkFailed(chunk: Int, reason: String)
    /// A chunk of a ``ChunkedTranscoder`` could not be run or its result read here: its number
    /// and the error (a process that could not start, a report or movie that does not read).
    case chunkError(chunk: Int, underlying: any Error)
    /// The tool a benchmark compares with (the x264 CLI) failed, or said nothing readable: why.
    case referenceFailed(String)
    /// The input is damaged where the options say to stop at damage (``FrameExporter/Options/stopsAtDamage``): what and where.
    case damaged(String)
    /// The input could not be read, or the output written: SampleFlow's error, with where it
    /// happened (the input's byte and NAL unit, the sample, the movie's box) and its cause.
    case source(SampleFlowError)
    /// A picture file could not be read or written (Y4M, raw, PNG, framemd5).
    case mediaIO(MediaIOError)
    /// A file or process the session needed could not be used (a statistics file, a chunk's
    /// process): the operation, the file and `errno`.
    case system(SystemError)

    /// A call made when the session was not ready for it.
    public enum Call: Sendable, Hashable {
        /// Encoding outside a pass, beginning a pass during one or after the last, a live change when not encoding.
        case encodeBeforeBeginPass, encodeAfterEndPass, beginPassDuringPass, beginPassAfterLastPass, changeWhenNotEncoding
    }

    /// Why a live change cannot be made.
    public enum LiveChangeProblem: Sendable, Hashable {
        /// The session's rate control cannot take the change: no CRF, no VBV, or a two-pass bit rate.
        case constantQualityWithoutCRF, bitRateWithoutVBV, bitRateOfMultiPass, vbvWithoutVBV
        /// A value x264 does not take (a CRF outside 0 to 51, a bit rate or buffer size not above 0).
        case outOfRange(name: String, value: Double)
    }

    /// What went wrong, in words, with the remedy where there is one.
    public var description: String {
        switch self {
        case .formatNotAccepted(let session, let sample):
            "the session decodes \(session.nalUnitLengthSize)-byte NAL lengths of H.264; this sample's description is \(sample) (make a new session)"
        case .notVideo(let format):
            "the session decodes H.264 video; this sample is \(format.codecName) (\(format.mediaType))"
        case .outputsNotConsumed(let waited, let inFlight):
            "\(inFlight) frames waited \(waited) s with nothing consuming the session's frames sequence; a blocking call cannot wait for a consumer "
                + "that would run after it on the same thread: consume frames on another task, use the async form, or give the session an output handler"
        case .outputHandlerRequired:
            "a synchronous session delivers to an output handler; give one, or make the session asynchronous to consume its frames"
        case .outputsGoToHandler:
            "the session delivers its outputs to its handler; it has no frames sequence"
        case .outputSequenceTaken:
            "the session's frames have one consumer, and the sequence was taken already"
        case .pictureMismatch(let expected, let got):
            "the session encodes \(expected) pictures; this one is \(got) (convert it, or make the session with convertsPictures)"
        case .presentationTimeOutOfOrder(let time, let previous):
            previous.map { "presentation time \(time) is not after the previous picture's (\($0)); pictures go in in presentation order" }
                ?? "a picture needs a numeric presentation time, not \(time)"
        case .invalidSettings(let error): "invalid settings: \(error.description)"
        case .invalidOption(let problem): "invalid option: \(problem)"
        case .unsupportedChange(let problem):
            switch problem {
            case .constantQualityWithoutCRF: "constant quality can change only in a session that encodes at constant quality (CRF)"
            case .bitRateWithoutVBV: "the bit rate can change only in an average-bit-rate session started with VBV limits (x264 keeps the rate of an encode without VBV)"
            case .bitRateOfMultiPass: "the bit rate of a two-pass encode cannot change"
            case .vbvWithoutVBV: "VBV limits can change only in a session started with them (x264 cannot turn VBV on)"
            case .outOfRange(let name, let value): "\(name) \(value) is out of range"
            }
        case .outOfOrder(let call):
            switch call {
            case .encodeBeforeBeginPass: "call beginPass() before the pictures of a pass"
            case .encodeAfterEndPass: "the pass has ended; call beginPass() for the next"
            case .beginPassDuringPass: "a pass is under way; end it first"
            case .beginPassAfterLastPass: "every pass is done"
            case .changeWhenNotEncoding: "the session is not encoding"
            }
        case .codecFailed(let error): error.description
        case .invalidated: "the session is finished or invalidated"
        case .cancelled: "cancelled"
        case .chunkFailed(let chunk, let reason): "chunk \(chunk): \(reason)"
        case .chunkError(let chunk, let underlying): "chunk \(chunk): " + String(describing: underlying)
        case .damaged(let reason): reason
        case .referenceFailed(let reason): reason
        case .source(let error): error.description
        case .mediaIO(let error): error.description
        case .system(let error): error.description
        }
    }
}

/// A picture's size and pixel format.
public struct PictureGeometry: Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The pixel format.
    public var format: PixelFormat

    /// A geometry of the given size and pixel format.
    public init(width: Int, height: Int, format: PixelFormat) {
        self.width = width
        self.height = height
        self.format = format
    }

    /// The geometry of `picture`.
    public init(_ picture: PixelBuffer) { self.init(width: picture.width, height: picture.height, format: picture.format) }

    /// Reads like `1920x1080 yuv420p`.
    public var description: String { "\(width)x\(height) \(format)" }
}

/// SampleFlow's work (reading an input, writing an output) as a session's, its error kept whole
/// in ``SessionError/source(_:)``; a SampleFlow job stopped by the task's cancellation is the
/// session's ``SessionError/cancelled``.
func flowing<T>(_ body: () throws(SampleFlowError) -> T) throws(SessionError) -> T {
    do { return try body() } catch {
        if case .cancelled = error { throw .cancelled }
        throw .source(error)
    }
}
