/// The sliding window of a live HLS rendition, as a state machine: segments in (each once it
/// is whole), playlists out. No clock and no I/O: an origin adds segments and renders.
///
/// The playlist lists the last ``size`` segments; `EXT-X-MEDIA-SEQUENCE` rises by those that
/// leave, `EXT-X-DISCONTINUITY-SEQUENCE` by the discontinuities that leave with them. A segment
/// that leaves is handed back by ``append(_:)`` so the origin keeps it fetchable a while longer
/// (a player that loaded the playlist just before may still ask for it). The target duration is
/// set once (RFC 8216: it must not change); a segment that rounds past it is counted in
/// ``segmentsOverTarget`` (and the target raised, as a player would rather have a playlist that
/// names its longest segment than none).
public struct HLSLiveWindow: Sendable {
    /// A segment of the window.
    public struct Entry: Sendable, Hashable {
        /// Its media sequence number.
        public var sequence: Int
        /// Its URI, relative to the playlist.
        public var uri: String
        /// Its duration, seconds.
        public var duration: Double
        /// The wall-clock time its first sample entered the packager, seconds since 1970.
        public var programDateTime: Double?
        /// A discontinuity before it.
        public var discontinuity: Bool
        /// Whether it decodes on its own.
        public var independent: Bool
        /// Its size in bytes.
        public var byteCount: Int
        /// Its sync samples: their durations and byte ranges, for the I-frame playlist.
        public var iFrames: [IFrame]
        /// Its earliest presentation time and duration in the DASH timescale, for an MPD.
        public var timeline: (time: Int64, duration: Int64)?

        /// An I-frame of the segment.
        public struct IFrame: Sendable, Hashable {
            /// Until the next sync sample, seconds.
            public var duration: Double
            /// The bytes of the segment a player fetches to show it.
            public var byteRange: Range<Int>

            /// An I-frame of `duration` seconds at `byteRange`.
            public init(duration: Double, byteRange: Range<Int>) {
                self.duration = duration
                self.byteRange = byteRange
            }
        }

        /// A segment entry.
        public init(sequence: Int, uri: String, duration: Double, programDateTime: Double? = nil, discontinuity: Bool = false, independent: Bool = true,
                    byteCount: Int = 0, iFrames: [IFrame] = [], timeline: (time: Int64, duration: Int64)? = nil) {
            self.sequence = sequence
            self.uri = uri
            self.duration = duration
            self.programDateTime = programDateTime
            self.discontinuity = discontinuity
            self.independent = independent
            self.byteCount = byteCount
            self.iFrames = iFrames
            self.timeline = timeline
        }

        /// Equal in every field.
        public static func == (a: Entry, b: Entry) -> Bool {
            a.sequence == b.sequence && a.uri == b.uri && a.duration == b.duration && a.programDateTime == b.programDateTime && a.discontinuity == b.discontinuity
                && a.independent == b.independent && a.byteCount == b.byteCount && a.iFrames == b.iFrames && a.timeline?.time == b.timeline?.time
                && a.timeline?.duration == b.timeline?.duration
        }
        /// Hashes the sequence number and URI.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(sequence)
            hasher.combine(uri)
        }
    }

    /// How many segments the playlist lists.
    public let size: Int
    /// `EXT-X-TARGETDURATION`, set once.
    public private(set) var targetDuration: Int
    /// The initialization section's URI (fragmented MP4), if any.
    public var map: String?
    /// The segments listed, oldest first.
    public private(set) var entries: [Entry] = []
    /// `EXT-X-MEDIA-SEQUENCE`: the first listed segment's number.
    public private(set) var mediaSequence = 0
    /// `EXT-X-DISCONTINUITY-SEQUENCE`.
    public private(set) var discontinuitySequence = 0
    /// Whether the stream ended (`EXT-X-ENDLIST`).
    public private(set) var ended = false
    /// Segments whose duration rounded past the target.
    public private(set) var segmentsOverTarget = 0
    /// Whether every segment so far decodes on its own.
    public private(set) var allIndependent = true

    /// A window of `size` segments (at least 3, RFC 8216 §6.2.2's minimum for a live playlist)
    /// with the target duration `targetDuration`.
    public init(size: Int, targetDuration: Int, map: String? = nil) {
        self.size = max(3, size)
        self.targetDuration = max(1, targetDuration)
        self.map = map
    }

    /// Adds a whole segment; returns the segments that left the playlist.
    public mutating func append(_ entry: Entry) -> [Entry] {
        if Int(entry.duration.rounded()) > targetDuration {
            segmentsOverTarget += 1
            targetDuration = Int(entry.duration.rounded())
        }
        if !entry.independent { allIndependent = false }
        entries.append(entry)
        var removed: [Entry] = []
        while entries.count > size {
            let gone = entries.removeFirst()
            if entries.first?.discontinuity == true { discontinuitySequence += 1 }
            mediaSequence = gone.sequence + 1
            removed.append(gone)
        }
        if let first = entries.first { mediaSequence = first.sequence }
        return removed
    }

    /// Marks the end of the stream.
    public mutating func end() { ended = true }

    /// The media playlist.
    public var mediaPlaylist: HLSMediaPlaylist {
        HLSMediaPlaylist(targetDuration: targetDuration, mediaSequence: mediaSequence, discontinuitySequence: discontinuitySequence,
                         independentSegments: allIndependent, map: map.map { (uri: $0, byteRange: nil) },
                         segments: entries.map { .init(uri: $0.uri, duration: $0.duration, discontinuity: $0.discontinuity, programDateTime: $0.programDateTime) },
                         endList: ended)
    }

    /// The I-frame playlist of the same window.
    public var iFramePlaylist: HLSMediaPlaylist {
        var frames: [HLSMediaPlaylist.Segment] = []
        for entry in entries {
            for (index, frame) in entry.iFrames.enumerated() {
                frames.append(.init(uri: entry.uri, duration: frame.duration, byteRange: frame.byteRange, discontinuity: index == 0 && entry.discontinuity))
            }
        }
        return HLSMediaPlaylist(targetDuration: HLSMediaPlaylist.targetDuration(for: frames.map(\.duration)), mediaSequence: mediaSequence,
                                discontinuitySequence: discontinuitySequence, independentSegments: true, iFramesOnly: true,
                                map: map.map { (uri: $0, byteRange: nil) }, segments: frames, endList: ended)
    }

    /// The peak and average bit rates of the segments listed, bits per second.
    public var bitRates: (peak: Int, average: Int) {
        let peak = entries.map { Double($0.byteCount * 8) / max($0.duration, 0.001) }.max() ?? 0
        let seconds = entries.map(\.duration).reduce(0, +)
        let average = Double(entries.map(\.byteCount).reduce(0, +) * 8) / max(seconds, 0.001)
        return (Int(peak.rounded(.up)), Int(average.rounded(.up)))
    }
}
