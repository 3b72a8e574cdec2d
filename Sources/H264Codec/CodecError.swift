import CCodecs

/// An error code returned by libavcodec, libavutil or libswscale (`AVERROR(...)`), the
/// swift-system `Errno` pattern: named constants, never magic numbers.
public struct AVError: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The negative error number libavcodec returned.
    public let rawValue: Int32
    /// The error with code `rawValue`.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Output is not available in this state; send more input (`AVERROR(EAGAIN)`).
    public static let tryAgain = AVError(rawValue: cffmpeg_averror_eagain())
    /// The end of the stream was reached (`AVERROR_EOF`).
    public static let endOfFile = AVError(rawValue: cffmpeg_averror_eof())
    /// Invalid data in the input (`AVERROR_INVALIDDATA`).
    public static let invalidData = AVError(rawValue: cffmpeg_averror_invaliddata())
    /// Out of memory (`AVERROR(ENOMEM)`).
    public static let outOfMemory = AVError(rawValue: cffmpeg_averror(ENOMEM))
    /// Invalid argument (`AVERROR(EINVAL)`).
    public static let invalidArgument = AVError(rawValue: cffmpeg_averror(EINVAL))

    /// The library's message for the code (`av_strerror`).
    public var description: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
            guard av_strerror(rawValue, buffer.baseAddress, 128) == 0 else { return "error \(rawValue)" }
            return String(cString: buffer.baseAddress!)
        }
    }
}

/// Why encoding or decoding failed, with the FFmpeg/x264 code when there is one.
public struct CodecError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure it was.
    public enum Code: Sendable, Hashable {
        /// The codec is not in the installed library.
        case unavailable
        /// A setting the library rejects.
        case invalidConfiguration
        /// The data could not be decoded.
        case decodeFailed
        /// A picture could not be encoded.
        case encodeFailed
        /// A pixel format this library does not handle.
        case unsupportedFormat
    }

    /// What kind of failure it was.
    public var code: Code
    /// What failed, for the user.
    public var reason: String
    /// The library's error code, if the failure came from one.
    public var underlying: AVError?
    /// The error of another layer that made this one (x264's parameter sets that do not parse:
    /// their `BitstreamError`), whole.
    public var cause: (any Error)?

    /// An error of kind `code` with a reason, and the library's code or the error underneath
    /// when there is one.
    public init(_ code: Code, _ reason: String, underlying: AVError? = nil, cause: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
        self.cause = cause
    }

    /// The reason, then the library's message or the cause when there is one.
    public var description: String {
        underlying.map { "\(reason): \($0)" } ?? cause.map { "\(reason): " + String(describing: $0) } ?? reason
    }
}

/// Opens libavcodec, libavutil and libswscale on first use (they are not linked, so that
/// programs which never decode do not map them), or says which library or symbol is missing.
func loadFFmpeg() throws(CodecError) {
    if let message = ccodecs_load_ffmpeg() { throw CodecError(.unavailable, String(cString: message)) }
}

/// The same for libx264.
func loadX264() throws(CodecError) {
    if let message = ccodecs_load_x264() { throw CodecError(.unavailable, String(cString: message)) }
}

/// Turns a negative return code into a ``CodecError`` saying which call failed.
@inline(__always)
func check(_ result: Int32, _ code: CodecError.Code, _ what: @autoclosure () -> String) throws(CodecError) {
    if result < 0 { throw CodecError(code, what(), underlying: AVError(rawValue: result)) }
}
