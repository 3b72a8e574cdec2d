public import H264Codec
public import SystemIO

/// Why a media file could not be read or written: which file, where in it, and what was wrong.
public struct MediaIOError: Error, Sendable, CustomStringConvertible {
    /// What kind of problem it is.
    public enum Code: Sendable, Hashable {
        /// Opening, reading or writing failed (the reason names the system error).
        case io
        /// The file is not in the format (a Y4M header that is not one, a cut frame).
        case invalidData
        /// Valid, but not something this module handles (a Y4M colour space, a pixel format).
        case unsupported
        /// The caller's values do not fit (a size that does not divide the file, a picture of another size).
        case invalidArgument
        /// The codec library failed (PNG, MD5).
        case codec
        /// A size the format allows but over the limits set for untrusted input
        /// (`PictureLimits`); the reason names the size and the limit.
        case limitExceeded
    }

    /// What kind of problem it is.
    public var code: Code
    /// What was wrong, in words (the message without the path and offset).
    public var reason: String
    /// The file.
    public var path: String?
    /// Where in the file, when known.
    public var byteOffset: Int?
    /// The codec error underneath, for ``Code/codec``.
    public var underlying: CodecError?
    /// The failed system call underneath an ``Code/io`` error: the operation, the file and
    /// `errno`.
    public var systemError: SystemError?

    /// An error of `code`, with where it happened and the codec error underneath when known.
    public init(_ code: Code, _ reason: String, path: String? = nil, byteOffset: Int? = nil, underlying: CodecError? = nil) {
        self.code = code
        self.reason = reason
        self.path = path
        self.byteOffset = byteOffset
        self.underlying = underlying
    }

    /// An I/O error caused by a failed system call.
    public init(_ error: SystemError) {
        self.init(.io, "\(error.operation.rawValue): \(error.errno)", path: error.path)
        systemError = error
    }

    /// Reads like `path: byte N: reason: underlying`, each part present when known.
    public var description: String {
        var text = ""
        if let path { text += "\(path): " }
        if let byteOffset { text += "byte \(byteOffset): " }
        text += reason
        if let underlying { text += ": \(underlying)" }
        return text
    }
}
