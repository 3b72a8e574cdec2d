public import MediaCore

/// Writes one track (H.264 video, or AAC audio) as CMAF (ISO/IEC 23000-19): the fragmented MP4 that HLS (with
/// EXT-X-MAP) and DASH both play. An initialization segment (`ftyp` with the `cmfc` brand and a
/// `moov` with `mvex` and no samples), then fragments (`moof` + `mdat`) wherever the caller
/// starts one; a media segment is a ``segmentTypeBox`` and one or more fragments.
///
/// Times: decoding times count from the first sample's (`tfdt` starts at 0 and never goes
/// back), and composition offsets are signed (`trun` version 1) so that the first sample is
/// presented at 0 and every later one at its presentation time less the first's: no edit list
/// is needed, as CMAF asks. Tracks played together (a picture and its sound in two renditions)
/// share one timeline with ``Options/timeOrigin`` instead: every decoding and presentation time
/// is then the source's less the origin, and composition offsets are the source's (never
/// negative), so that every reader places the tracks alike (FFmpeg shows a track with negative
/// offsets later, by the largest of them). A sample lasts until the next one is decoded (its fragment is made
/// when the next sample comes). Parameter sets that change mid-stream go in band in the samples
/// that use them. No I/O: fragments are handed back as bytes; the samples' bytes are copied as
/// they come (memory: one fragment), so that a mapped file's pages are read once.
public struct CMAFWriter {
    /// A fragment as written, with where its samples fall.
    public struct Fragment: Sendable {
        /// The bytes: the `moof`, the `mdat` header, then the samples (referenced).
        public var data: BlockBuffer
        /// `mfhd` sequence_number, from 1.
        public var sequenceNumber: Int
        /// The first sample's decoding time (`tfdt`).
        public var baseDecodeTime: MediaTime
        /// The earliest presentation time of its samples.
        public var earliestPresentationTime: MediaTime
        /// Its samples' durations added up.
        public var duration: MediaTime
        /// Its samples.
        public var sampleCount: Int
        /// Whether its first sample is a sync sample.
        public var startsWithSyncSample: Bool
        /// The bytes from the fragment's start to the end of its first sample (the `moof`, the
        /// `mdat` header, the first sample): what an I-frame playlist's byte range covers.
        public var firstSampleEnd: Int
    }

    /// The writer's options.
    public struct Options: Sendable, Hashable {
        /// The fixed timescale of the track; nil picks one from the first sample (its
        /// duration's, doubled up to at least 10000, as the movie writer does).
        public var timescale: Int32?
        /// The source's time that the fragments' timeline puts at 0, shared by the tracks of
        /// one presentation (the earliest of their first decoding times); nil: the first
        /// sample's presentation time, with signed composition offsets. The first sample must
        /// not be decoded before it.
        public var timeOrigin: MediaTime?

        /// Options: the timescale from the first sample; times from the first sample's, or
        /// from `timeOrigin`.
        public init(timescale: Int32? = nil, timeOrigin: MediaTime? = nil) {
            self.timescale = timescale
            self.timeOrigin = timeOrigin
        }
    }

    /// The track's timescale (ticks a second), known from the first sample on.
    public var timescale: Int32 { track.timescale }
    /// The initialization segment (`ftyp` + `moov`), known from the first sample on.
    public private(set) var initializationSegment: [UInt8]?
    /// Fragments written.
    public private(set) var fragmentCount = 0
    /// The first sample's presentation time in the input's time line: a fragment's times are
    /// the input's less this.
    public private(set) var timeOrigin: MediaTime?

    private var track: TrackTimeline
    private let requestedOrigin: MediaTime?
    /// Ticks from the time origin to the first sample's presentation (0 without an origin).
    private var originShift: Int64 = 0
    private var pending: [(size: Int, entry: TrackRunBox.Entry, presentation: Int64)] = []
    private var pendingStart: Int64 = 0
    /// The pending samples' bytes, one after another: copied in as they come (while fresh: a
    /// mapped file's pages are read once), handed out with the fragment; its buffer comes back
    /// to the pool when the caller lets the fragment go, for a later one (no fresh pages to
    /// fault in each time).
    private var sampleBytes: UnsafeMutableRawBufferPointer?
    private var sampleCount = 0
    private let pool = ByteBufferPool()

    /// The `styp` a media segment starts with: `msdh` (a media segment), `msix` (with an
    /// index), `cmfs` (CMAF).
    public static let segmentTypeBox: [UInt8] = SegmentTypeBox(majorBrand: "msdh", compatibleBrands: ["msdh", "msix", "cmfs", "cmfc", "iso6"]).serialized

    /// A writer with `options`.
    public init(options: Options = Options()) {
        track = TrackTimeline(path: "CMAF", descriptions: .single, signedOffsets: options.timeOrigin == nil, fixedTimescale: options.timescale)
        requestedOrigin = options.timeOrigin
    }

    /// Takes the next sample in decoding order; when `startsFragment` (and samples are
    /// pending), the samples before it become a fragment, returned.
    public mutating func append(_ sample: SampleBuffer, startsFragment: Bool) throws(ContainerError) -> Fragment? {
        if initializationSegment == nil, let origin = requestedOrigin {
            guard origin.isNumeric, sample.decodeTime.isNumeric, sample.decodeTime >= origin else {
                throw ContainerError(.invalidInput, "the first sample is decoded at \(sample.decodeTime), before the time origin \(origin)", path: "CMAF")
            }
        }
        let placed = try track.place(sample)
        if initializationSegment == nil {
            timeOrigin = requestedOrigin ?? sample.presentationTime
            if let origin = requestedOrigin {
                originShift = (sample.decodeTime - origin).converted(toTimescale: track.timescale).value
            }
            let options = MovieWriter.Options(fileType: .mp4, layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 1)),
                                              negativeCompositionOffsets: true)
            let ftyp = FileTypeBox(majorBrand: "iso6", minorVersion: 0, compatibleBrands: ["iso6", "cmfc", "mp41", "dash"])
            initializationSegment = ftyp.serialized + MovieIndex(options: options, tracks: [WrittenTrack(timeline: track, fileTrackID: 1, sourceID: .first, language: nil)]).fragmentedMovieBox().box.serialized
        }
        // The previous sample lasts until this one is decoded.
        if placed.gapBefore != 0, let last = pending.indices.last {
            pending[last].entry.duration = UInt32(Int64(pending[last].entry.duration ?? 0) + placed.gapBefore)
        }
        var closed: Fragment?
        if startsFragment && !pending.isEmpty { closed = makeFragment() }
        if pending.isEmpty { pendingStart = placed.decodeTime + originShift }
        copyIn(placed.data)
        pending.append((placed.data.count, MovieFragment.entry(placed), placed.decodeTime + originShift + placed.compositionOffset))
        return closed
    }

    /// The samples still pending, as the last fragment.
    public mutating func finish() -> Fragment? {
        pending.isEmpty ? nil : makeFragment()
    }

    private mutating func makeFragment() -> Fragment {
        fragmentCount += 1
        let fragment = MovieFragment(entries: pending.map(\.entry), sequenceNumber: UInt32(fragmentCount), baseDecodeTime: UInt64(pendingStart),
                                     signedOffsets: true, mediaBytes: sampleCount)
        let header = fragment.header
        let scale = track.timescale
        let duration = pending.reduce(Int64(0)) { $0 + Int64($1.entry.duration ?? 0) }
        let bytes = sampleBytes.map { pool.handOut($0, count: sampleCount) } ?? BlockBuffer()
        sampleBytes = nil
        sampleCount = 0
        let result = Fragment(data: BlockBuffer(chaining: [BlockBuffer(header), bytes]), sequenceNumber: fragmentCount,
                              baseDecodeTime: MediaTime(value: pendingStart, timescale: scale),
                              earliestPresentationTime: MediaTime(value: pending.map(\.presentation).min() ?? pendingStart, timescale: scale),
                              duration: MediaTime(value: duration, timescale: scale), sampleCount: pending.count,
                              startsWithSyncSample: (pending[0].entry.flags ?? 0) & 0x0001_0000 == 0,
                              firstSampleEnd: header.count + pending[0].size)
        pending.removeAll(keepingCapacity: true)
        return result
    }

    /// Appends a sample's bytes to the fragment's buffer, a larger one from the pool when full.
    private mutating func copyIn(_ data: BlockBuffer) {
        let needed = sampleCount + data.count
        if sampleBytes == nil || sampleBytes!.count < needed {
            let bigger = pool.take(capacity: max(needed, (sampleBytes?.count ?? 0) * 2))
            if let old = sampleBytes {
                if sampleCount > 0 { bigger.baseAddress!.copyMemory(from: old.baseAddress!, byteCount: sampleCount) }
                pool.give(old)
            }
            sampleBytes = bigger
        }
        var offset = sampleCount
        data.forEachSegment { segment in
            guard let source = segment.baseAddress, !segment.isEmpty else { return }
            (sampleBytes!.baseAddress! + offset).copyMemory(from: source, byteCount: segment.count)
            offset += segment.count
        }
        sampleCount = offset
    }
}
