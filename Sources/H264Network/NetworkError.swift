/// A packet, session description or request that could not be used: what was wrong and where
/// (the packet's sequence number, the byte in it, the SDP line).
public struct NetworkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: Hashable, Sendable { case truncated, invalidHeader, invalidPayload, tooLarge, invalidDescription, unsupported, socket, source, output, transportRefused, invalidKey }
        let base: Base
        init(_ base: Base) { self.base = base }

        /// The data ends inside a structure (an RTP header, a STAP-A length, a NAL unit).
        public static let truncated = Code(.truncated)
        /// An RTP header that is not version 2, or whose padding or extension does not fit.
        public static let invalidHeader = Code(.invalidHeader)
        /// An H.264 payload that breaks RFC 6184 (a reserved type, an FU-A with both start and end).
        public static let invalidPayload = Code(.invalidPayload)
        /// A unit larger than the packet size allows, or than a limit.
        public static let tooLarge = Code(.tooLarge)
        /// A session description line that does not parse, or lacks what H.264 needs.
        public static let invalidDescription = Code(.invalidDescription)
        /// Valid syntax that this library does not handle (an interleaved packetization mode).
        public static let unsupported = Code(.unsupported)
        /// A socket that could not be opened, bound, resolved or written (the system's words follow).
        public static let socket = Code(.socket)
        /// The media being sent could not be read (the file's own error follows).
        public static let source = Code(.source)
        /// What was received could not be written out (the writer's own error follows).
        public static let output = Code(.output)
        /// An RTSP server refused the transport the client asked for in its SETUP (461
        /// Unsupported Transport): a client with another lower transport tries it next.
        public static let transportRefused = Code(.transportRefused)
        /// An access key that cannot be made (a secret too short) or a URL it cannot sign.
        public static let invalidKey = Code(.invalidKey)

        /// The code's name.
        public var description: String { "\(base)" }
    }

    /// What was wrong.
    public var code: Code
    /// Why, in words.
    public var reason: String
    /// Where: "packet 1234, byte 12", "SDP line 7".
    public var location: String?

    /// The error of the layer underneath that made this one (a parameter set's
    /// `BitstreamError`, a session description's own `NetworkError`), whole; not compared by `==`.
    public var cause: (any Error)?

    /// An error of `code` for `reason`, at `location` when known, and the error underneath.
    public init(_ code: Code, _ reason: String, at location: String? = nil, cause: (any Error)? = nil) {
        self.cause = cause
        self.code = code
        self.reason = reason
        self.location = location
    }

    /// Reads like `location: reason`.
    public var description: String { (location.map { "\($0): " } ?? "") + reason + (cause.map { ": " + String(describing: $0) } ?? "") }

    /// Equal in code, reason and location (the cause is not compared).
    public static func == (a: NetworkError, b: NetworkError) -> Bool { a.code == b.code && a.reason == b.reason && a.location == b.location }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
        hasher.combine(location)
    }
}
