/// An HLS media playlist (RFC 8216 §4.3.3, and RFC 8216bis): the segments of one rendition in
/// order, or its I-frames, rendered as the text a player fetches.
///
/// Low-latency HLS (RFC 8216bis) adds partial segments (before each segment's line, and those
/// of the segment being made at the end), `EXT-X-PART-INF`, `EXT-X-SERVER-CONTROL`, a preload
/// hint for the next part and, in a delta update, `EXT-X-SKIP` in place of the oldest segments.
///
/// The version is the lowest the tags need (§7): 3 for decimal durations, 4 for byte ranges and
/// I-frames-only, 5 for a map in an I-frame playlist, 6 for a map in a media playlist, 9 for
/// `EXT-X-SKIP`. The
/// target duration is given (a live playlist keeps one for its life); ``targetDurationNeeded``
/// is what the segments listed ask for, each duration rounded to the nearest second.
public struct HLSMediaPlaylist: Sendable, Hashable {
    /// A media segment (or, in an I-frame playlist, an I-frame) as the playlist lists it.
    public struct Segment: Sendable, Hashable {
        /// Its URI, relative to the playlist.
        public var uri: String
        /// Its duration in seconds (`EXTINF`).
        public var duration: Double
        /// The part of the resource it is (`EXT-X-BYTERANGE`), when not the whole.
        public var byteRange: Range<Int>?
        /// A discontinuity before it (`EXT-X-DISCONTINUITY`).
        public var discontinuity: Bool
        /// The wall-clock time of its first sample (`EXT-X-PROGRAM-DATE-TIME`), seconds since
        /// 1970, when known.
        public var programDateTime: Double?
        /// Its partial segments, listed before it (low-latency HLS).
        public var parts: [HLSPartialSegment]

        /// A segment of `duration` seconds at `uri`.
        public init(uri: String, duration: Double, byteRange: Range<Int>? = nil, discontinuity: Bool = false, programDateTime: Double? = nil,
                    parts: [HLSPartialSegment] = []) {
            self.uri = uri
            self.duration = duration
            self.byteRange = byteRange
            self.discontinuity = discontinuity
            self.programDateTime = programDateTime
            self.parts = parts
        }
    }

    /// `EXT-X-PLAYLIST-TYPE`.
    public enum PlaylistType: String, Sendable, Hashable {
        /// The playlist will not change (with `EXT-X-ENDLIST`).
        case vod = "VOD"
        /// Segments are only added.
        case event = "EVENT"
    }

    /// `EXT-X-TARGETDURATION`, whole seconds: no segment's duration rounded is longer.
    public var targetDuration: Int
    /// `EXT-X-MEDIA-SEQUENCE`: the first listed segment's number.
    public var mediaSequence: Int
    /// `EXT-X-DISCONTINUITY-SEQUENCE`: discontinuities removed from the top of a live playlist.
    public var discontinuitySequence: Int
    /// `EXT-X-PLAYLIST-TYPE`, if any (none for a live sliding window).
    public var playlistType: PlaylistType?
    /// `EXT-X-INDEPENDENT-SEGMENTS`: every segment decodes without the one before.
    public var independentSegments: Bool
    /// `EXT-X-I-FRAMES-ONLY`: the entries are I-frames, each a byte range of a segment.
    public var iFramesOnly: Bool
    /// `EXT-X-MAP`: the initialization section of fragmented MP4 segments.
    public var map: (uri: String, byteRange: Range<Int>?)?
    /// The segments, in order.
    public var segments: [Segment]
    /// `EXT-X-ENDLIST`: no segment will be added.
    public var endList: Bool
    /// `EXT-X-PART-INF:PART-TARGET`: no part is longer, seconds (low-latency HLS).
    public var partTarget: Double?
    /// `EXT-X-SERVER-CONTROL`.
    public var serverControl: HLSServerControl?
    /// `EXT-X-SKIP:SKIPPED-SEGMENTS`: in a delta update, how many segments after the media
    /// sequence number are left out (``segments`` holds the rest).
    public var skippedSegments: Int
    /// The parts of the segment being made, after the last whole segment.
    public var pendingParts: [HLSPartialSegment]
    /// The wall-clock time of the first sample of the segment being made.
    public var pendingProgramDateTime: Double?
    /// `EXT-X-PRELOAD-HINT:TYPE=PART`: the URI of the next part, which the server holds a
    /// request for until it is whole.
    public var preloadHint: String?
    /// `EXT-X-RENDITION-REPORT`s: where the stream's other renditions stand.
    public var renditionReports: [HLSRenditionReport]

    /// A playlist of `segments`.
    public init(targetDuration: Int, mediaSequence: Int = 0, discontinuitySequence: Int = 0, playlistType: PlaylistType? = nil,
                independentSegments: Bool = false, iFramesOnly: Bool = false, map: (uri: String, byteRange: Range<Int>?)? = nil,
                segments: [Segment] = [], endList: Bool = false) {
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.playlistType = playlistType
        self.independentSegments = independentSegments
        self.iFramesOnly = iFramesOnly
        self.map = map
        self.segments = segments
        self.endList = endList
        partTarget = nil
        serverControl = nil
        skippedSegments = 0
        pendingParts = []
        pendingProgramDateTime = nil
        preloadHint = nil
        renditionReports = []
    }

    /// Equal in every tag and segment.
    public static func == (a: HLSMediaPlaylist, b: HLSMediaPlaylist) -> Bool { a.rendered == b.rendered }
    /// Hashes the rendering.
    public func hash(into hasher: inout Hasher) { hasher.combine(rendered) }

    /// The target duration the segments listed need: the longest rounded to the nearest second
    /// (at least 1).
    public var targetDurationNeeded: Int { Self.targetDuration(for: segments.map(\.duration)) }

    /// The target duration for segments of `durations` seconds.
    public static func targetDuration(for durations: [Double]) -> Int {
        max(1, durations.map { Int($0.rounded()) }.max() ?? 1)
    }

    /// The lowest `EXT-X-VERSION` the playlist's tags need.
    public var version: Int {
        var version = 3  // decimal EXTINF durations
        if iFramesOnly || segments.contains(where: { $0.byteRange != nil }) || map?.byteRange != nil { version = max(version, 4) }
        if map != nil { version = max(version, iFramesOnly ? 5 : 6) }
        if skippedSegments > 0 { version = max(version, 9) }
        return version
    }

    /// The playlist as text.
    public var rendered: String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(targetDuration)"]
        if let serverControl { lines.append(serverControl.rendered) }
        if let partTarget { lines.append("#EXT-X-PART-INF:PART-TARGET=\(Self.decimal(partTarget))") }
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)")
        if discontinuitySequence > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType.rawValue)") }
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        if iFramesOnly { lines.append("#EXT-X-I-FRAMES-ONLY") }
        if let map {
            lines.append("#EXT-X-MAP:URI=\"\(map.uri)\"" + (map.byteRange.map { ",BYTERANGE=\"\($0.count)@\($0.lowerBound)\"" } ?? ""))
        }
        if skippedSegments > 0 { lines.append("#EXT-X-SKIP:SKIPPED-SEGMENTS=\(skippedSegments)") }
        for segment in segments {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if let date = segment.programDateTime { lines.append("#EXT-X-PROGRAM-DATE-TIME:\(ISO8601Timestamp(secondsSince1970: date))") }
            for part in segment.parts { lines.append(part.rendered) }
            lines.append("#EXTINF:\(Self.decimal(segment.duration)),")
            if let range = segment.byteRange { lines.append("#EXT-X-BYTERANGE:\(range.count)@\(range.lowerBound)") }
            lines.append(segment.uri)
        }
        if !pendingParts.isEmpty, let date = pendingProgramDateTime {
            lines.append("#EXT-X-PROGRAM-DATE-TIME:\(ISO8601Timestamp(secondsSince1970: date))")
        }
        for part in pendingParts { lines.append(part.rendered) }
        if let preloadHint { lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(preloadHint)\"") }
        for report in renditionReports { lines.append(report.rendered) }
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A duration in seconds with six decimals, no trailing zeros past the third.
    static func decimal(_ seconds: Double) -> String {
        let micro = Int64((seconds * 1_000_000).rounded())
        var fraction = String(micro % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.count > 3 && fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(micro / 1_000_000).\(fraction)"
    }
}
