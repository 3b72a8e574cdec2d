import ISOBMFF
public import MPEGTS
public import MediaCore

/// Cuts a stream of samples into the media segments HLS and DASH serve: CMAF fragmented MP4
/// (an initialization segment, then segments of one fragment per GOP) or MPEG-TS, each segment
/// starting at a sync sample, with a report per segment as AVAssetWriter's delegate gives one:
/// its duration and earliest presentation time, its fragments' and sync samples' byte ranges
/// (for I-frame playlists), whether it starts with an IDR picture and whether it can be decoded
/// on its own.
///
/// A segment is cut before the first sync sample whose presentation time is at or past the
/// next multiple of ``Options/segmentDuration`` (from the first sample's); with
/// ``Options/cutsOnlyAtCleanSyncSamples`` only before a clean one (no picture after it in
/// decoding order is shown before it: an IDR picture, or a closed GOP's I picture), so that
/// every segment decodes on its own even from an open-GOP source. A segment's duration runs
/// from its earliest presentation time to the end of its last shown picture, so the durations
/// add up to the stream's. Times in reports count from the first sample's presentation time,
/// or from ``Options/timeOrigin`` (the fragments' timeline too).
///
/// A fragmented MP4 segmenter cuts one track: H.264 video, or AAC sound (every frame a sync
/// sample; an audio-only rendition cut on the same schedule, or a rendition's sound cut where
/// its picture's segments end, with ``append(_:startsSegment:)``).
///
/// No I/O: segments come back as bytes (the samples' storage referenced) as they are made, a
/// fragment (or, for a transport stream, a few hundred kilobytes) at a time with the segment
/// they belong to (``Output``), and each segment's report once it is whole: a packager writes
/// the chunks as they come (memory: one fragment), an origin gathers them (memory: one
/// segment).
///
/// Within one ``Output``, the ``Output/chunks`` may already hold the next segment's first
/// bytes (the sample that cuts is the new segment's first) while ``Output/completed`` reports
/// the segment that sample closed: route each chunk by its own ``Chunk/segment`` number, and
/// treat a segment as whole only once its report has come (from ``append(_:)`` or
/// ``finish()``).
public struct MediaSegmenter {
    /// The segments' container.
    public enum Format: String, Sendable, Hashable, Codable {
        /// CMAF fragmented MP4 (`.m4s` after an initialization segment), HLS version 7 and DASH.
        case fragmentedMP4 = "fmp4"
        /// MPEG-2 transport stream segments (`.ts`), each starting with the PAT and PMT.
        case transportStream = "ts"

        /// The media segments' file extension.
        public var fileExtension: String { self == .fragmentedMP4 ? "m4s" : "ts" }
        /// The media segments' content type.
        public var contentType: String { self == .fragmentedMP4 ? "video/iso.segment" : "video/mp2t" }
    }

    /// How to cut.
    public struct Options: Sendable {
        /// The container.
        public var format: Format
        /// The target length of a segment: 6 s by default, Apple's recommendation.
        public var segmentDuration: MediaTime
        /// Cut only before clean sync samples (segments that decode on their own from any
        /// source); otherwise before any sync sample, and an open-GOP source's segments are
        /// reported as not independent.
        public var cutsOnlyAtCleanSyncSamples: Bool
        /// For fragmented MP4: fragments as the parts of low-latency HLS: a new one before a
        /// sample that would make the fragment longer than this (in decoding time), so that no
        /// fragment is longer unless one sample is, and at a sync sample only once the fragment
        /// has 85% of this (RFC 8216bis: only a segment's last part may be shorter; a sync
        /// sample inside a part is not in the I-frame playlist); nil: a fragment per GOP.
        public var partDuration: MediaTime?
        /// For transport streams: the muxer's layout, PIDs and clock.
        public var transportStream: TransportStreamMuxer.Options
        /// The source's time reports count from, and, for fragmented MP4, the fragments'
        /// timeline's 0 (`CMAFWriter.Options.timeOrigin`): the same for the segmenters of
        /// tracks played together (a picture and its sound), at or before each one's first
        /// decoding time; nil: the first sample's presentation time.
        public var timeOrigin: MediaTime?

        /// Options: `format`, 6 s segments cut at any sync sample, a fragment per GOP.
        public init(format: Format = .fragmentedMP4, segmentDuration: MediaTime = MediaTime(value: 6, timescale: 1), cutsOnlyAtCleanSyncSamples: Bool = false,
                    partDuration: MediaTime? = nil, transportStream: TransportStreamMuxer.Options = .init(), timeOrigin: MediaTime? = nil) {
            self.format = format
            self.segmentDuration = segmentDuration
            self.cutsOnlyAtCleanSyncSamples = cutsOnlyAtCleanSyncSamples
            self.partDuration = partDuration
            self.transportStream = transportStream
            self.timeOrigin = timeOrigin
        }
    }

    /// A fragment of a segment: its bytes within the segment and its times.
    public struct FragmentReport: Sendable, Hashable, Codable {
        /// Where its bytes are in the segment.
        public var byteRange: Range<Int>
        /// Its earliest presentation time (from the stream's first), seconds as a fraction.
        public var earliestPresentationTime: MediaTime
        /// Its duration.
        public var duration: MediaTime
        /// Whether it starts with a sync sample (an independent part).
        public var startsWithSyncSample: Bool
    }

    /// A sync sample of a segment, as an I-frame playlist lists it.
    public struct SyncSampleReport: Sendable, Hashable, Codable {
        /// Its presentation time (from the stream's first).
        public var presentationTime: MediaTime
        /// Until the next sync sample (or the segment's end) is shown.
        public var duration: MediaTime
        /// The bytes a player fetches to decode it alone: for fragmented MP4 its fragment's
        /// `moof`, `mdat` header and the sample; for a transport stream the tables before it
        /// and its PES packet.
        public var byteRange: Range<Int>
    }

    /// What a segment holds, as AVAssetWriter's segment report tells it.
    public struct SegmentReport: Sendable, Hashable, Codable {
        /// The segment's number, from 0 (its media sequence number).
        public var index: Int
        /// The container.
        public var format: Format
        /// From its earliest presentation time to the end of its last shown picture.
        public var duration: MediaTime
        /// Its earliest presentation time, from the stream's first.
        public var earliestPresentationTime: MediaTime
        /// Its size in bytes.
        public var byteCount: Int
        /// Samples in it.
        public var sampleCount: Int
        /// Whether its first picture is an IDR picture.
        public var startsWithIDR: Bool
        /// Whether it decodes on its own: it starts with a clean sync sample.
        public var isIndependent: Bool
        /// Its fragments (one for a transport stream segment).
        public var fragments: [FragmentReport]
        /// Its sync samples, for an I-frame playlist.
        public var syncSamples: [SyncSampleReport]
    }

    /// Bytes of a segment, handed on as they are made.
    public struct Chunk: Sendable {
        /// The segment they belong to (from 0).
        public var segment: Int
        /// The bytes (the samples' storage referenced).
        public var data: BlockBuffer
        /// For fragmented MP4, the fragment these bytes complete, when they do: with the bytes
        /// of the segment since the previous fragment ended (the `styp` of a segment's first),
        /// a part a low-latency HLS origin serves on its own.
        public var completedFragment: FragmentReport?
    }

    /// What a sample (or the end) brought: bytes of segments, in order, and the segments now
    /// whole.
    public struct Output: Sendable {
        /// Bytes to append to their segment, in order.
        public var chunks: [Chunk] = []
        /// The segments now whole, with their reports (after their last chunk).
        public var completed: [SegmentReport] = []
        /// Whether nothing came.
        public var isEmpty: Bool { chunks.isEmpty && completed.isEmpty }
    }

    /// Bytes of a transport stream gathered before they are handed on as a chunk.
    static let transportStreamChunk = 256 << 10

    /// How segments are cut.
    public let options: Options
    /// For fragmented MP4, the initialization segment (`EXT-X-MAP`), known from the first sample on.
    public var initializationSegment: [UInt8]? { cmaf?.initializationSegment }
    /// The first sample's format description: the stream's codec, size and rate (nil for a
    /// fragmented MP4 segmenter of sound).
    public private(set) var formatDescription: VideoFormatDescription?
    /// For a fragmented MP4 segmenter of sound, the first frame's format description.
    public private(set) var audioFormatDescription: AudioFormatDescription?
    /// Segments made so far.
    public private(set) var segmentCount = 0
    /// For fragmented MP4, the track's timescale (the DASH timeline's), known from the first
    /// sample on.
    public var timescale: Int32? { cmaf.flatMap { $0.initializationSegment == nil ? nil : $0.timescale } }

    private var cmaf: CMAFWriter?
    private var muxer: TransportStreamMuxer?
    private var origin: MediaTime?
    private var nextBoundary: MediaTime = .zero
    private var current: Building?
    /// The decoding time the open fragment started at.
    private var lastFragmentStart: MediaTime?

    /// The segment being gathered.
    private struct Building {
        var bytes = 0
        var earliest: MediaTime
        var latestEnd: MediaTime
        var samples = 0
        var startsWithIDR: Bool
        /// The first sample's presentation time, and whether a later one was shown before it.
        var firstPresentation: MediaTime
        var shownBeforeFirst = false
        var fragments: [FragmentReport] = []
        var syncSamples: [SyncSampleReport] = []
        /// For a transport stream: the open sync sample's byte start and time.
        var openSync: (start: Int, time: MediaTime)?
        /// Where the last sample's decoding ends (its decoding time plus its duration).
        var decodeEnd: MediaTime = .invalid
    }

    /// A segmenter with `options`; throws when the transport stream options are refused.
    public init(options: Options = Options()) throws(SampleFlowError) {
        guard options.segmentDuration.isNumeric, options.segmentDuration > .zero else {
            throw .invalidOption("a segment duration of \(options.segmentDuration): give a positive number of seconds")
        }
        self.options = options
        switch options.format {
        case .fragmentedMP4:
            cmaf = CMAFWriter(options: .init(timeOrigin: options.timeOrigin))
        case .transportStream:
            do { muxer = try TransportStreamMuxer(options: options.transportStream) } catch {
                throw .container(ContainerError(error, while: "setting up the transport stream muxer"))
            }
        }
    }

    /// Declares a track before its first sample: a transport stream's first tables then list
    /// it (declare the video first, then the sound muxed beside it). A fragmented MP4 segment
    /// holds one track, H.264 or AAC: declaring anything else there is an error, as appending
    /// it is.
    public mutating func declare(_ track: TrackDescription) throws(SampleFlowError) {
        switch (options.format, track.format) {
        case (.transportStream, .video), (.transportStream, .audio):
            do { try muxer!.addStream(for: track) } catch {
                throw .container(ContainerError(error, while: "declaring track \(track.id)"))
            }
        case (.fragmentedMP4, .video):
            break
        case (.fragmentedMP4, .audio(let audio)) where audio.isAAC:
            break
        default:
            throw .invalidOption("track \(track.id) (\(track.format.codecName)): \(options.format == .transportStream ? "a transport stream segment" : "a fragmented MP4 segment") carries "
                                 + (options.format == .transportStream ? "H.264 video and AAC" : "one H.264 or AAC track"))
        }
    }

    /// Takes the next sample in decoding order; returns the bytes made and the segment it
    /// closed, if it starts one.
    /// It takes H.264 video, and for transport stream segments AAC too (muxed beside the
    /// video; segments are still cut at the video's sync samples, and the reports' times,
    /// durations and sample counts are the video's); for fragmented MP4, one track: H.264, or
    /// AAC alone (cut on the same schedule, every frame a sync sample). A sample of another
    /// kind is an error.
    public mutating func append(_ sample: SampleBuffer) throws(SampleFlowError) -> Output {
        try append(sample, cut: nil)
    }

    /// Takes the next sample of a track cut where another's segments end (a rendition's sound
    /// beside its picture, within a frame of the picture's cuts): a new segment starts before
    /// it when `startsSegment` (it must then be a sync sample) and never otherwise.
    public mutating func append(_ sample: SampleBuffer, startsSegment: Bool) throws(SampleFlowError) -> Output {
        if startsSegment && !sample.isSync {
            throw .sample(index: current?.samples ?? 0, decodeTime: sample.decodeTime,
                          underlying: .invalidOption("a segment starts with a sync sample: this one is not"))
        }
        return try append(sample, cut: startsSegment)
    }

    private mutating func append(_ sample: SampleBuffer, cut: Bool?) throws(SampleFlowError) -> Output {
        if options.format == .transportStream, case .audio = sample.formatDescription { return try appendAudio(sample) }
        let format = sample.formatDescription
        let audio = options.format == .fragmentedMP4 ? format.audio.flatMap { $0.isAAC ? $0 : nil } : nil
        guard format.video != nil || audio != nil else {
            throw .sample(index: current?.samples ?? 0, decodeTime: sample.decodeTime,
                          underlying: .invalidOption("a \(format.codecName) sample: the segmenter cuts H.264 video\(options.format == .fragmentedMP4 ? " or AAC" : "")"))
        }
        if origin != nil, (audio != nil) != (audioFormatDescription != nil) {
            throw .sample(index: current?.samples ?? 0, decodeTime: sample.decodeTime,
                          underlying: .invalidOption("a \(format.codecName) sample after \(audioFormatDescription != nil ? "AAC" : "H.264"): a fragmented MP4 segment holds one track"))
        }
        output = Output()
        if origin == nil {
            if let start = options.timeOrigin, !(start.isNumeric && sample.decodeTime >= start) {
                throw .sample(index: 0, decodeTime: sample.decodeTime,
                              underlying: .invalidOption("the first sample is decoded at \(sample.decodeTime), before the time origin \(start)"))
            }
            origin = options.timeOrigin ?? sample.presentationTime
            formatDescription = format.video
            audioFormatDescription = audio
            nextBoundary = (sample.presentationTime - origin!) + options.segmentDuration
        }
        let time = sample.presentationTime - origin!
        let clean = !sample.attachments.earlierDisplayTimesAllowed
        let cuts = current != nil && (cut ?? (sample.isSync && time >= nextBoundary && (clean || !options.cutsOnlyAtCleanSyncSamples)))
        if cuts {
            // A gap in the decoding times before this sample (a loop's seam, where the picture
            // waits for its longer sound) lengthens the closing segment's last picture (as the
            // writer's sample durations do), not a hole between the segments' durations.
            let gap = sample.decodeTime - current!.decodeEnd
            if gap.isNumeric, gap > .zero { current!.latestEnd = current!.latestEnd + gap }
            if options.format == .fragmentedMP4 {
                // The fragment this sample ends is the closing segment's last.
                if let fragment = try appendToCMAF(sample, startsFragment: true) { add(fragment) }
                try closeSegment(last: false)
                begin(sample, time: time)
            } else {
                muxer!.flush()  // (the sound gathered so far belongs to the segment that closes)
                try closeSegment(last: false)
                begin(sample, time: time)
                try appendToTransportStream(sample, time: time)
            }
            while nextBoundary <= time { nextBoundary = nextBoundary + options.segmentDuration }
        } else {
            if current == nil { begin(sample, time: time) } else { note(sample, time: time) }
            switch options.format {
            case .fragmentedMP4:
                // (Sound: one fragment a segment; every frame is a sync sample.)
                var startsFragment = current!.samples == 1 || (sample.isSync && audioFormatDescription == nil)
                if let part = options.partDuration, let start = lastFragmentStart, sample.decodeTime.isNumeric {
                    // Parts: a new one before a sample that would make this one too long, or at a
                    // sync sample once this one has 85% of the part (a shorter part is allowed
                    // only as a segment's last); a sync sample before that stays inside.
                    let sofar = sample.decodeTime - start
                    let longEnough = sofar.seconds >= 0.85 * part.seconds
                    startsFragment = current!.samples == 1 || (sample.isSync && longEnough)
                        || sofar + (sample.duration.isNumeric ? sample.duration : .zero) > part
                }
                if let fragment = try appendToCMAF(sample, startsFragment: startsFragment) { add(fragment) }
                if startsFragment { lastFragmentStart = sample.decodeTime }
            case .transportStream:
                try appendToTransportStream(sample, time: time)
                if muxer!.pendingByteCount >= Self.transportStreamChunk { drainTransportStream() }
            }
        }
        return output
    }

    /// Ends the stream: the last segment's last bytes and its report.
    public mutating func finish() throws(SampleFlowError) -> Output {
        output = Output()
        if current != nil {
            if options.format == .transportStream { muxer!.flush() }
            try closeSegment(last: true)
        }
        return output
    }

    /// An AAC frame into the transport stream, beside the video: into the segment being made
    /// (before the first picture, into the first segment).
    private mutating func appendAudio(_ sample: SampleBuffer) throws(SampleFlowError) -> Output {
        output = Output()
        do { try muxer!.write(sample) } catch {
            throw .sample(index: current?.samples ?? 0, decodeTime: sample.decodeTime, underlying: .container(ContainerError(error, while: "muxing")))
        }
        if current != nil, muxer!.pendingByteCount >= Self.transportStreamChunk { drainTransportStream() }
        return output
    }

    /// What the call being made brings.
    private var output = Output()

    /// Hands on a chunk of the segment being made.
    private mutating func emit(_ data: BlockBuffer) {
        guard !data.isEmpty else { return }
        output.chunks.append(Chunk(segment: segmentCount, data: data))
        current!.bytes += data.count
    }

    // MARK: Writing

    /// Starts a segment with `sample`.
    private mutating func begin(_ sample: SampleBuffer, time: MediaTime) {
        let end = time + (sample.duration.isNumeric ? sample.duration : .zero)
        current = Building(earliest: time, latestEnd: end, startsWithIDR: Self.startsWithIDR(sample), firstPresentation: time)
        current!.samples = 1
        current!.decodeEnd = sample.decodeTime + (sample.duration.isNumeric ? sample.duration : .zero)
        if options.format == .fragmentedMP4 {
            emit(BlockBuffer(CMAFWriter.segmentTypeBox))
            lastFragmentStart = sample.decodeTime
        }
    }

    /// A later sample of the segment: its times.
    private mutating func note(_ sample: SampleBuffer, time: MediaTime) {
        let end = time + (sample.duration.isNumeric ? sample.duration : .zero)
        if time < current!.firstPresentation { current!.shownBeforeFirst = true }
        if time < current!.earliest { current!.earliest = time }
        if end > current!.latestEnd { current!.latestEnd = end }
        current!.samples += 1
        current!.decodeEnd = sample.decodeTime + (sample.duration.isNumeric ? sample.duration : .zero)
    }

    private mutating func appendToCMAF(_ sample: SampleBuffer, startsFragment: Bool) throws(SampleFlowError) -> CMAFWriter.Fragment? {
        do { return try cmaf!.append(sample, startsFragment: startsFragment) } catch {
            throw .sample(index: current?.samples ?? 0, decodeTime: sample.decodeTime, underlying: .container(error))
        }
    }

    private mutating func appendToTransportStream(_ sample: SampleBuffer, time: MediaTime) throws(SampleFlowError) {
        let before = muxer!.pendingByteCount
        do { try muxer!.write(sample) } catch {
            throw .sample(index: current!.samples - 1, decodeTime: sample.decodeTime, underlying: .container(ContainerError(error, while: "muxing")))
        }
        if sample.isSync {
            closeSyncSample(time: time)
            current!.openSync = (current!.bytes + before, time)
            current!.syncSamples.append(SyncSampleReport(presentationTime: time, duration: .zero,
                                                         byteRange: (current!.bytes + before)..<(current!.bytes + muxer!.pendingByteCount)))
        }
    }

    /// A fragment the CMAF writer closed: into the segment it belongs to (the one being built,
    /// or, when the fragment ends a segment, that one).
    private mutating func add(_ fragment: CMAFWriter.Fragment) {
        let start = current!.bytes
        emit(fragment.data)
        let origin = cmafOriginOffset
        let earliest = fragment.earliestPresentationTime + origin
        let report = FragmentReport(byteRange: start..<current!.bytes, earliestPresentationTime: earliest, duration: fragment.duration,
                                    startsWithSyncSample: fragment.startsWithSyncSample)
        current!.fragments.append(report)
        if !fragment.data.isEmpty, !output.chunks.isEmpty { output.chunks[output.chunks.count - 1].completedFragment = report }
        if fragment.startsWithSyncSample {
            current!.syncSamples.append(SyncSampleReport(presentationTime: earliest, duration: fragment.duration, byteRange: start..<(start + fragment.firstSampleEnd)))
        } else if let last = current!.syncSamples.indices.last {
            // A part after the sync sample's: the I-frame lasts until the next sync sample.
            current!.syncSamples[last].duration = current!.syncSamples[last].duration + fragment.duration
        }
    }

    /// CMAF presentation times count from the first sample's; reports count from the stream's
    /// first sample too: no offset (kept as a name for the one place that would change).
    private var cmafOriginOffset: MediaTime { .zero }

    /// The open sync sample of a transport stream segment ends where the next begins.
    private mutating func closeSyncSample(time: MediaTime) {
        guard let open = current!.openSync, let last = current!.syncSamples.indices.last else { return }
        current!.syncSamples[last].duration = time - open.time
        current!.openSync = nil
    }

    /// The transport stream's bytes so far, as a chunk.
    private mutating func drainTransportStream() {
        var pending: [UInt8] = []
        pending.reserveCapacity(muxer!.pendingByteCount)
        muxer!.drain { pending.append(contentsOf: $0.bindMemory(to: UInt8.self)) }
        emit(BlockBuffer(pending))
    }

    private mutating func closeSegment(last: Bool) throws(SampleFlowError) {
        switch options.format {
        case .fragmentedMP4:
            // At the end the pending fragment is the last segment's (before, the sample that
            // cut it closed it).
            if last, let fragment = cmaf!.finish() { add(fragment) }
        case .transportStream:
            drainTransportStream()
        }
        var building = current!
        current = nil
        if options.format == .transportStream, let open = building.openSync, let last = building.syncSamples.indices.last {
            building.syncSamples[last].duration = building.latestEnd - open.time
            building.openSync = nil
            building.fragments = [FragmentReport(byteRange: 0..<building.bytes, earliestPresentationTime: building.earliest,
                                                 duration: building.latestEnd - building.earliest, startsWithSyncSample: true)]
        } else if options.format == .transportStream {
            building.fragments = [FragmentReport(byteRange: 0..<building.bytes, earliestPresentationTime: building.earliest,
                                                 duration: building.latestEnd - building.earliest, startsWithSyncSample: false)]
        }
        let report = SegmentReport(index: segmentCount, format: options.format, duration: building.latestEnd - building.earliest,
                                   earliestPresentationTime: building.earliest, byteCount: building.bytes, sampleCount: building.samples,
                                   startsWithIDR: building.startsWithIDR, isIndependent: building.startsWithIDR || !building.shownBeforeFirst,
                                   fragments: building.fragments, syncSamples: building.syncSamples)
        segmentCount += 1
        output.completed.append(report)
    }

    /// Whether the sample holds an IDR slice (an AAC frame: always, it decodes on its own).
    static func startsWithIDR(_ sample: SampleBuffer) -> Bool {
        if case .audio = sample.formatDescription { return true }
        var idr = false
        try? sample.forEachNALUnit { nal in if nal.first.map({ $0 & 0x1F }) == 5 { idr = true } }
        return idr
    }
}
