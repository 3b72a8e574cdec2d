/// Where another rendition of a low-latency stream stands (RFC 8216bis §4.4.5.4,
/// `EXT-X-RENDITION-REPORT`): a player switching renditions asks the other's playlist for the
/// right part at once, with no plain reload first.
public struct HLSRenditionReport: Sendable, Hashable {
    /// The other rendition's media playlist, relative to this one.
    public var uri: String
    /// `LAST-MSN`: the media sequence number of its last segment (whole or being made).
    public var lastMediaSequence: Int
    /// `LAST-PART`: the index of the last part of that segment, if it has parts.
    public var lastPart: Int?

    /// A report of the rendition at `uri`.
    public init(uri: String, lastMediaSequence: Int, lastPart: Int? = nil) {
        self.uri = uri
        self.lastMediaSequence = lastMediaSequence
        self.lastPart = lastPart
    }

    /// The `EXT-X-RENDITION-REPORT` line.
    public var rendered: String {
        "#EXT-X-RENDITION-REPORT:URI=\"\(uri)\",LAST-MSN=\(lastMediaSequence)" + (lastPart.map { ",LAST-PART=\($0)" } ?? "")
    }
}
