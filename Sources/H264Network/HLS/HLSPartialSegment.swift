/// A partial segment of a low-latency HLS playlist (RFC 8216bis §4.4.4.9, `EXT-X-PART`): a
/// piece of a media segment a player can fetch before the segment is whole.
public struct HLSPartialSegment: Sendable, Hashable {
    /// Its URI, relative to the playlist.
    public var uri: String
    /// Its duration in seconds.
    public var duration: Double
    /// Whether it starts with a sync sample (`INDEPENDENT=YES`): a player may start there.
    public var independent: Bool
    /// The part of the resource it is (`BYTERANGE`), when not the whole.
    public var byteRange: Range<Int>?

    /// A part of `duration` seconds at `uri`.
    public init(uri: String, duration: Double, independent: Bool = false, byteRange: Range<Int>? = nil) {
        self.uri = uri
        self.duration = duration
        self.independent = independent
        self.byteRange = byteRange
    }

    /// The `EXT-X-PART` line.
    public var rendered: String {
        var line = "#EXT-X-PART:DURATION=\(HLSMediaPlaylist.decimal(duration)),URI=\"\(uri)\""
        if independent { line += ",INDEPENDENT=YES" }
        if let byteRange { line += ",BYTERANGE=\"\(byteRange.count)@\(byteRange.lowerBound)\"" }
        return line
    }
}
