/// The delivery directives of a low-latency playlist request (RFC 8216bis §6.2.5): the query
/// parameters `_HLS_msn` (hold the answer until this media segment is in the playlist),
/// `_HLS_part` (… this part of it) and `_HLS_skip` (a delta update: `YES`, or `v2` to skip
/// date ranges too). Other parameters are left to the server.
public struct HLSDeliveryDirectives: Sendable, Hashable {
    /// `_HLS_msn`: the media sequence number to wait for.
    public var mediaSequence: Int?
    /// `_HLS_part`: the part of that segment to wait for.
    public var part: Int?
    /// `_HLS_skip`: a delta update is asked for.
    public var skip: Bool

    /// Directives with the values given.
    public init(mediaSequence: Int? = nil, part: Int? = nil, skip: Bool = false) {
        self.mediaSequence = mediaSequence
        self.part = part
        self.skip = skip
    }

    /// Whether the request asks to be held (a blocking playlist reload).
    public var isBlocking: Bool { mediaSequence != nil }

    /// Reads a request's query string (without the `?`); nil when a directive is malformed (a
    /// number that is not a decimal integer of at most 12 digits, a skip other than `YES` or
    /// `v2`) or `_HLS_part` comes without `_HLS_msn`: the server answers `400`.
    public init?(query: Substring) {
        skip = false
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            let key = equals.map { pair[..<$0] } ?? pair[...]
            let value = equals.map { pair[pair.index(after: $0)...] } ?? ""
            switch key {
            case "_HLS_msn":
                guard let number = Self.number(value) else { return nil }
                mediaSequence = number
            case "_HLS_part":
                guard let number = Self.number(value) else { return nil }
                part = number
            case "_HLS_skip":
                guard value == "YES" || value == "v2" else { return nil }
                skip = true
            default:
                continue
            }
        }
        if part != nil && mediaSequence == nil { return nil }
    }

    /// A decimal integer of 1 to 12 digits.
    private static func number(_ text: Substring) -> Int? {
        guard (1...12).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }
}
