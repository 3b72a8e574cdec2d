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
///
/// For low-latency HLS (``partTarget`` set) the window also takes the parts of the segment
/// being made as each is whole (``appendPart(_:programDateTime:)``), lists the parts of the
/// segments in the last three target durations and a preload hint, answers whether a blocking
/// reload's `_HLS_msn`/`_HLS_part` is there yet (``contains(mediaSequence:part:)``) and renders
/// delta updates (``deltaPlaylist``).
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
        /// Its parts (low-latency HLS), taken from those appended while it was being made
        /// when none are given.
        public var parts: [HLSPartialSegment] = []

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
                && a.timeline?.duration == b.timeline?.duration && a.parts == b.parts
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
    /// `EXT-X-PART-INF:PART-TARGET`, seconds: set for low-latency HLS.
    public var partTarget: Double?
    /// `EXT-X-SERVER-CONTROL`.
    public var serverControl: HLSServerControl?
    /// The parts of the segment being made.
    public private(set) var pendingParts: [HLSPartialSegment] = []
    /// When the segment being made started (its first sample), seconds since 1970.
    public private(set) var pendingProgramDateTime: Double?
    /// The next part's URI, for `EXT-X-PRELOAD-HINT`.
    public var preloadHint: String?
    /// The media sequence number of the segment being made (one past the last whole one).
    public private(set) var nextSequence = 0

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
            // The distances the server control declares follow the target they are made of.
            if var control = serverControl {
                let target = Double(targetDuration)
                if let holdBack = control.holdBack { control.holdBack = max(holdBack, 3 * target) }
                if let skip = control.canSkipUntil { control.canSkipUntil = max(skip, 6 * target) }
                serverControl = control
            }
        }
        if !entry.independent { allIndependent = false }
        var entry = entry
        if entry.parts.isEmpty { entry.parts = pendingParts }
        pendingParts = []
        pendingProgramDateTime = nil
        nextSequence = entry.sequence + 1
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

    /// Adds a whole part of the segment being made; `programDateTime` is the segment's start,
    /// taken with its first part.
    public mutating func appendPart(_ part: HLSPartialSegment, programDateTime: Double? = nil) {
        if pendingParts.isEmpty { pendingProgramDateTime = programDateTime }
        pendingParts.append(part)
    }

    /// Marks the end of the stream.
    public mutating func end() {
        ended = true
        preloadHint = nil
    }

    /// Whether the playlist holds part `part` of segment `mediaSequence` (or, without a part,
    /// that whole segment), or anything after it: what a blocking reload waits for (RFC
    /// 8216bis §6.2.5.2). A part past the last of a whole segment is the next segment's first.
    public func contains(mediaSequence: Int, part: Int?) -> Bool {
        if ended { return true }
        guard let part else { return mediaSequence < nextSequence }
        if mediaSequence < nextSequence {
            guard let entry = entries.first(where: { $0.sequence == mediaSequence }) else { return true }
            return part < entry.parts.count || entry.parts.isEmpty || contains(mediaSequence: mediaSequence + 1, part: 0)
        }
        return mediaSequence == nextSequence && part < pendingParts.count
    }

    /// The last part in the playlist (of the segment being made, or of the last whole one),
    /// for another rendition's `EXT-X-RENDITION-REPORT`; the last whole segment when it has
    /// no parts; nil before anything.
    public var lastPart: (mediaSequence: Int, part: Int?)? {
        if !pendingParts.isEmpty { return (nextSequence, pendingParts.count - 1) }
        guard let last = entries.last else { return nil }
        return (last.sequence, last.parts.isEmpty ? nil : last.parts.count - 1)
    }

    /// Whether a blocking reload asks for a segment more than two past the last whole one, or
    /// a part past the Advance Part Limit (3 ÷ `PART-TARGET` parts past the last, for a target
    /// under a second; else 3): the server answers 400 at once (RFC 8216bis §6.2.5.2). After
    /// the end nothing is (the directives are ignored then).
    public func isTooFarAhead(mediaSequence: Int, part: Int? = nil) -> Bool {
        if ended { return false }
        if mediaSequence > nextSequence + 1 { return true }
        guard let part, let partTarget, partTarget > 0 else { return false }
        let limit = partTarget < 1 ? Int((3 / partTarget).rounded(.down)) : 3
        if mediaSequence == nextSequence { return part > pendingParts.count - 1 + limit }
        if mediaSequence == nextSequence + 1 { return part >= limit }
        return false
    }

    /// The media playlist.
    public var mediaPlaylist: HLSMediaPlaylist { playlist(skipping: false) }

    /// The delta update (`_HLS_skip=YES`): the segments older than `CAN-SKIP-UNTIL` from the
    /// end replaced by `EXT-X-SKIP`; the whole playlist when there is no skip boundary.
    public var deltaPlaylist: HLSMediaPlaylist { playlist(skipping: true) }

    private func playlist(skipping: Bool) -> HLSMediaPlaylist {
        let pendingSeconds = pendingParts.map(\.duration).reduce(0, +)
        // Seconds from each segment's end to the playlist's end.
        var after = [Double](repeating: 0, count: entries.count)
        var running = pendingSeconds
        for index in entries.indices.reversed() {
            after[index] = running
            running += entries[index].duration
        }
        var skipped = 0
        // After the end a delta update is not made (RFC 8216bis §6.2.5.1: `_HLS_skip` ignored).
        if skipping, !ended, let boundary = serverControl?.canSkipUntil {
            while skipped < entries.count - 1, after[skipped] >= boundary { skipped += 1 }
        }
        let partWindow = 3 * Double(targetDuration)
        let segments = entries.indices.dropFirst(skipped).map { index -> HLSMediaPlaylist.Segment in
            let entry = entries[index]
            return .init(uri: entry.uri, duration: entry.duration, discontinuity: entry.discontinuity, programDateTime: entry.programDateTime,
                         parts: partTarget != nil && after[index] < partWindow ? entry.parts : [])
        }
        var playlist = HLSMediaPlaylist(targetDuration: targetDuration, mediaSequence: mediaSequence, discontinuitySequence: discontinuitySequence,
                                        independentSegments: allIndependent, map: map.map { (uri: $0, byteRange: nil) }, segments: segments, endList: ended)
        playlist.partTarget = partTarget
        playlist.serverControl = serverControl
        playlist.skippedSegments = skipped
        if partTarget != nil {
            playlist.pendingParts = pendingParts
            playlist.pendingProgramDateTime = pendingProgramDateTime
            playlist.preloadHint = ended ? nil : preloadHint
        }
        return playlist
    }

    /// The I-frame playlist of the same window.
    public var iFramePlaylist: HLSMediaPlaylist {
        var frames: [HLSMediaPlaylist.Segment] = []
        for entry in entries {
            for (index, frame) in entry.iFrames.enumerated() {
                frames.append(.init(uri: entry.uri, duration: frame.duration, byteRange: frame.byteRange, discontinuity: index == 0 && entry.discontinuity))
            }
        }
        // The live target, fixed (an I-frame lasts no longer than its segment).
        return HLSMediaPlaylist(targetDuration: max(targetDuration, HLSMediaPlaylist.targetDuration(for: frames.map(\.duration))), mediaSequence: mediaSequence,
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
