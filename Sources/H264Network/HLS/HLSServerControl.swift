/// What a low-latency HLS server can do for a client (RFC 8216bis §4.4.3.8,
/// `EXT-X-SERVER-CONTROL`), and the distances from the live edge a player keeps.
public struct HLSServerControl: Sendable, Hashable {
    /// `CAN-BLOCK-RELOAD=YES`: the server holds a playlist request with `_HLS_msn` (and
    /// `_HLS_part`) until that segment (part) is in the playlist.
    public var canBlockReload: Bool
    /// `CAN-SKIP-UNTIL`: the server answers `_HLS_skip=YES` with a delta update that skips the
    /// segments older than this many seconds from the end (at least 6 target durations).
    public var canSkipUntil: Double?
    /// `HOLD-BACK`: how far from the end a player starts without parts (at least 3 target
    /// durations).
    public var holdBack: Double?
    /// `PART-HOLD-BACK`: how far from the end a player of parts starts (at least 3 part
    /// targets; 2 is the spec's minimum).
    public var partHoldBack: Double?

    /// Server control with the attributes given.
    public init(canBlockReload: Bool = false, canSkipUntil: Double? = nil, holdBack: Double? = nil, partHoldBack: Double? = nil) {
        self.canBlockReload = canBlockReload
        self.canSkipUntil = canSkipUntil
        self.holdBack = holdBack
        self.partHoldBack = partHoldBack
    }

    /// The `EXT-X-SERVER-CONTROL` line.
    public var rendered: String {
        var attributes: [String] = []
        if canBlockReload { attributes.append("CAN-BLOCK-RELOAD=YES") }
        if let canSkipUntil { attributes.append("CAN-SKIP-UNTIL=\(HLSMediaPlaylist.decimal(canSkipUntil))") }
        if let holdBack { attributes.append("HOLD-BACK=\(HLSMediaPlaylist.decimal(holdBack))") }
        if let partHoldBack { attributes.append("PART-HOLD-BACK=\(HLSMediaPlaylist.decimal(partHoldBack))") }
        return "#EXT-X-SERVER-CONTROL:" + attributes.joined(separator: ",")
    }
}
