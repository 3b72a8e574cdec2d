public import SystemIO

/// An error reading or writing an MP4/MOV file, with where it happened: the file, the box path
/// ("moov/trak[1]/mdia/minf/stbl/stsz") and the byte offset.
public struct ContainerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// A read, write, open or rename failed (disk full, closed pipe, permissions).
        public static let io = Code(name: "I/O error")
        /// A box whose size or contents break the format.
        public static let invalidBox = Code(name: "invalid box")
        /// The file ends inside a box or before the media the index points to.
        public static let truncated = Code(name: "truncated")
        /// Valid but not handled here (a codec other than H.264, a version we do not read).
        public static let unsupported = Code(name: "unsupported")
        /// Samples or settings the container cannot hold.
        public static let invalidInput = Code(name: "invalid input")
        /// A value the format allows but over a limit set for untrusted input (see
        /// `MovieReader/Limits`); the message names the field, its value and the limit.
        public static let limitExceeded = Code(name: "over a limit")
        /// The kind's name in lowercase words, as messages print it.
        public var description: String { name }
    }

    /// What kind of problem it is.
    public var code: Code
    /// What was wrong.
    public var reason: String
    /// The file, when known.
    public var path: String?
    /// The box path, when the error is inside a box.
    public var boxPath: String?
    /// Where in the file, when known.
    public var byteOffset: Int?
    /// The failed system call underneath an ``Code/io`` error: the operation, the file and
    /// `errno` (a full disk is `Errno.noSpace`).
    public var systemError: SystemError?
    /// The error of the layer underneath that made this one (an avcC's `BitstreamError`, a
    /// timecode's `TimecodeError`), whole; not compared by `==`.
    public var cause: (any Error)?

    /// An error of `code`, with its place and the error underneath when there is one.
    public init(_ code: Code, _ reason: String, path: String? = nil, boxPath: String? = nil, byteOffset: Int? = nil, cause: (any Error)? = nil) {
        self.cause = cause
        self.code = code
        self.reason = reason
        self.path = path
        self.boxPath = boxPath
        self.byteOffset = byteOffset
    }

    /// A failed system call met while `doing` something with the file at `path`: an ``Code/io``
    /// error with the system error as its cause and ``systemError``.
    public init(_ error: SystemError, while doing: String, path: String? = nil) {
        self.init(.io, doing, path: path, cause: error)
        systemError = error
    }

    /// The place (file, byte offset, box path) when known, then the code and the reason.
    public var description: String {
        var place: [String] = []
        if let path { place.append(path) }
        if let byteOffset { place.append("byte \(byteOffset)") }
        if let boxPath { place.append(boxPath) }
        return (place.isEmpty ? "" : place.joined(separator: ": ") + ": ") + "\(code): \(reason)" + (cause.map { ": " + String(describing: $0) } ?? "")
    }

    /// Equal in code, reason, place and system error (the cause is not compared).
    public static func == (a: ContainerError, b: ContainerError) -> Bool {
        a.code == b.code && a.reason == b.reason && a.path == b.path && a.boxPath == b.boxPath && a.byteOffset == b.byteOffset && a.systemError == b.systemError
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
        hasher.combine(path)
        hasher.combine(boxPath)
        hasher.combine(byteOffset)
    }
}
