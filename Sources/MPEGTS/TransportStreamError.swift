public import MediaCore

/// A problem in a transport stream's packets, tables or PES packets, with where it is: the
/// byte offset of the packet, its index and its PID, when known.
public struct TransportStreamError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// A packet whose header or adaptation field breaks the format.
        public static let invalidPacket = Code(name: "invalid packet")
        /// A table section (PAT, PMT) that breaks the format or fails its CRC.
        public static let invalidSection = Code(name: "invalid section")
        /// A PES packet whose header breaks the format.
        public static let invalidPES = Code(name: "invalid PES packet")
        /// No transport stream: no run of sync bytes 188, 192 or 204 bytes apart.
        public static let notTransportStream = Code(name: "not a transport stream")
        /// No program with an H.264 stream (or not the one asked for).
        public static let noVideo = Code(name: "no H.264 stream")
        /// A size over a limit set for untrusted input; the message names it.
        public static let limitExceeded = Code(name: "over a limit")
        /// Samples or settings a transport stream cannot hold.
        public static let invalidInput = Code(name: "invalid input")
        /// The kind's name in lowercase words, as messages print it.
        public var description: String { name }
    }

    /// What kind of problem it is.
    public var code: Code
    /// What was wrong.
    public var reason: String
    /// The offset of the packet (its sync byte) in the input, when known.
    public var byteOffset: Int?
    /// The packet's PID, when known.
    public var pid: UInt16?
    /// The error of the layer underneath that made this one (a sample's `BitstreamError`),
    /// whole; not compared by `==`.
    public var cause: (any Error)?

    /// An error of `code` at the given place, and the error underneath when there is one.
    public init(_ code: Code, _ reason: String, byteOffset: Int? = nil, pid: UInt16? = nil, cause: (any Error)? = nil) {
        self.code = code
        self.reason = reason
        self.byteOffset = byteOffset
        self.pid = pid
        self.cause = cause
    }

    /// Equal in code, reason and place (the cause is not compared).
    public static func == (a: TransportStreamError, b: TransportStreamError) -> Bool {
        a.code == b.code && a.reason == b.reason && a.byteOffset == b.byteOffset && a.pid == b.pid
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
        hasher.combine(byteOffset)
        hasher.combine(pid)
    }

    /// The place (byte, PID) when known, then the code and the reason.
    public var description: String {
        var place: [String] = []
        if let byteOffset { place.append("byte \(byteOffset)") }
        if let pid { place.append("PID \(pid) (0x\(String(pid, radix: 16)))") }
        return (place.isEmpty ? "" : place.joined(separator: ", ") + ": ") + "\(code): \(reason)" + (cause.map { ": " + String(describing: $0) } ?? "")
    }

    /// The same error, placed at `byteOffset` and `pid` where it had no place yet.
    public func placed(at byteOffset: Int, pid: UInt16) -> TransportStreamError {
        var placed = self
        if placed.byteOffset == nil { placed.byteOffset = byteOffset }
        if placed.pid == nil { placed.pid = pid }
        return placed
    }
}

extension ContainerError {
    /// A transport stream's error met while `doing` something with the file at `path`: kept
    /// whole as the cause (its words are not copied), its byte offset taken as the place.
    public init(_ error: TransportStreamError, while doing: String, path: String? = nil) {
        self.init(error.code == .limitExceeded ? .limitExceeded : .invalidInput, doing, path: path, byteOffset: error.byteOffset, cause: error)
    }
}
