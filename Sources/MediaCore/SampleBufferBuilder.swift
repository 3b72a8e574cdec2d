public import H264Bitstream

/// Turns an Annex-B elementary stream into sample buffers: one sample per picture (a frame, or
/// both fields of a pair), NAL units length-prefixed, parameter sets moved into the format
/// description, and timestamps from the stream's timing (seed 003, "Building a CMSampleBuffer").
///
/// Feed NAL units in stream order with `append(nalUnit:at:)`, take finished samples with
/// ``nextSample()`` as they come, and call ``finish()`` at the end. Samples come out in decoding
/// order. A sample is released once its presentation time is known, which takes at most the
/// stream's reorder depth of later pictures (the SPS's max_num_reorder_frames, else the level's
/// DPB size), so memory stays bounded however long the stream is.
///
/// Timing: the frame rate is the SPS VUI timing unless the caller fixes one; a stream without
/// either is timed at the fallback the caller gives, by default `FrameRate/assumedWithoutTiming`
/// (25 fps, as ffmpeg reads a raw H.264 stream), and ``frameRateIsAssumed`` says so for the
/// caller to warn; with `.stream(fallback: nil)` such a stream is an error
/// (`BitstreamError/Code/missingTiming`). The one rule of the library and the tool. Presentation times
/// are display positions times the frame duration (B-frames and pyramids reordered by picture
/// order count), the first shown picture at 0; decode times step by one frame duration, starting
/// the reorder depth before 0 so no sample is decoded after it is shown.
public struct SampleBufferBuilder: Sendable {
    /// How NAL units are framed into samples.
    public struct Options: Sendable, Hashable {
        /// Bytes of each NAL unit's length prefix: 1, 2 or 4.
        public var nalUnitLengthSize: Int
        /// Keep SPS and PPS in the samples as well as in the format description (what `avc3` expects).
        public var keepsParameterSetsInBand: Bool
        /// Leave access unit delimiters (NAL type 9) out of the samples.
        public var dropsAccessUnitDelimiters: Bool
        /// Leave filler data (NAL type 12) out of the samples.
        public var dropsFillerData: Bool
        /// The sample entry type the format descriptions carry.
        public var codec: FourCharCode

        /// Options with the given framing; by default 4-byte lengths, parameter sets out of band, nothing dropped.
        public init(nalUnitLengthSize: Int = 4, keepsParameterSetsInBand: Bool = false, dropsAccessUnitDelimiters: Bool = false,
                    dropsFillerData: Bool = false, codec: FourCharCode = "avc1") {
            self.nalUnitLengthSize = nalUnitLengthSize
            self.keepsParameterSetsInBand = keepsParameterSetsInBand
            self.dropsAccessUnitDelimiters = dropsAccessUnitDelimiters
            self.dropsFillerData = dropsFillerData
            self.codec = codec
        }
    }

    /// Where the frame rate comes from.
    public enum FrameRateSource: Sendable, Hashable {
        /// The SPS VUI timing; `fallback` when the stream has none. With no fallback, a stream
        /// without timing is an error.
        case stream(fallback: FrameRate?)
        /// This rate, whatever the stream says.
        case fixed(FrameRate)
    }

    /// Samples held back before the reorder window is forced open. A conforming stream never
    /// needs more than 16 frames of reordering.
    public static let maximumHeldSamples = 64

    /// How NAL units are framed into samples.
    public let options: Options
    /// Where the frame rate comes from: the stream's VUI timing, or a rate the caller fixes.
    public let frameRateSource: FrameRateSource
    /// The parser underneath: parameter sets, diagnostics, counts, and the most recent
    /// ``retainedPictures`` pictures (a builder runs as long as its stream: its memory must
    /// not grow with it).
    public private(set) var parser = H264StreamParser(retainingPictures: SampleBufferBuilder.retainedPictures)
    /// Pictures the parser keeps: four times the most samples held back.
    public static let retainedPictures = 4 * maximumHeldSamples
    /// The frame rate in use, known from the first picture on.
    public private(set) var frameRate: FrameRate?
    /// Whether ``frameRate`` came from the stream (VUI timing) rather than the caller.
    public private(set) var frameRateIsFromStream = false
    /// Whether ``frameRate`` is the fallback of a stream without VUI timing (no rate was
    /// fixed): worth a warning naming the option that sets the rate.
    public private(set) var frameRateIsAssumed = false
    /// NAL units that could not be placed in any sample: a stream without a single decodable picture.
    public private(set) var droppedNALUnitCount = 0
    /// NAL units removed on request (AUD, filler) or moved into the format description.
    public private(set) var removedNALUnitCount = 0
    /// Samples closed so far, counting those not yet released.
    public private(set) var sampleCount = 0

    private struct Building {
        var data: SampleAssembly
        var decodeIndex: Int
        var format: VideoFormatDescription
    }
    private struct Held {
        var data: BlockBuffer
        var decodeIndex: Int
        var format: VideoFormatDescription
        var picture: PictureInfo
        var displayIndex: Int?
    }

    private var current: Building?
    /// Non-VCL NAL units after the last slice: they start the next access unit unless a slice
    /// of the same picture follows (§7.4.1.2.3).
    private var pending: [Pending] = [] {
        didSet { if pending.isEmpty { pendingBytes = 0 } }
    }
    /// Bytes held in ``pending``, with a per-unit overhead.
    private var pendingBytes = 0
    /// The most bytes of NAL units held while no picture takes them (SEI, AUDs and parameter
    /// sets before a picture, slices before their parameter sets): 64 MiB.
    public static let maximumPendingBytes = 64 << 20
    private struct Pending {
        var bytes: [UInt8]
        /// A parameter set that moves into the format description if a new picture follows.
        var outOfBand = false
    }
    private var format: VideoFormatDescription?
    private var formatParameterSets: Set<[UInt8]> = []
    private var formatIsStale = true
    /// Samples waiting for a presentation time, in decoding order (from `heldStart`).
    private var held: [Held] = []
    private var heldStart = 0
    /// Decode indexes of pictures in the reorder window, with their order counts.
    private var window: [(picOrderCnt: Int, decodeIndex: Int)] = []
    private var nextDisplayIndex = 0
    private var frameDuration: Int64 = 0
    private var timescale: Int32 = 0
    private var decodeDelay = 0
    private var ready: [SampleBuffer] = []
    private var readyStart = 0

    /// A builder that has seen nothing, framing with `options` and timing by `frameRate`.
    public init(options: Options = Options(), frameRate: FrameRateSource = .stream(fallback: .assumedWithoutTiming)) {
        self.options = options
        self.frameRateSource = frameRate
    }

    /// Adds the next NAL unit of the stream (header byte first); `location` is its place in the
    /// stream, for diagnostics.
    public mutating func append(nalUnit bytes: Span<UInt8>, at location: AnnexBNALUnit) throws(BitstreamError) {
        try append(bytes, reference: nil, at: location)
    }

    /// Adds the next NAL unit of the stream from a block buffer (a slice of a mapped file, say).
    /// Slices of pictures are not copied: the sample's data chains references to them between
    /// its length prefixes, so the memory must stay unchanged while the samples are in use.
    public mutating func append(nalUnit buffer: BlockBuffer, at location: AnnexBNALUnit) throws(BitstreamError) {
        try buffer.withUnsafeBytes { (raw) throws(BitstreamError) in
            try append(raw.bindMemory(to: UInt8.self).span, reference: buffer, at: location)
        }
    }

    /// Adds the next NAL unit as an `AnnexBReader` returns it; large units are referenced, not
    /// copied (see ``append(nalUnit:at:)-(BlockBuffer,_)``).
    public mutating func append(_ nalUnit: NALUnitBuffer) throws(BitstreamError) {
        if nalUnit.count >= SampleAssembly.smallestReference {
            try append(nalUnit: BlockBuffer(nalUnit), at: nalUnit.location)
        } else {
            try nalUnit.withSpan { (span) throws(BitstreamError) in try append(span, reference: nil, at: nalUnit.location) }
        }
    }

    private mutating func hold(_ unit: Pending, at location: AnnexBNALUnit) throws(BitstreamError) {
        pendingBytes += unit.bytes.count + 64
        guard pendingBytes <= Self.maximumPendingBytes else {
            throw BitstreamError(.limitExceeded, "\(pending.count + 1) NAL units (\(pendingBytes) bytes) with no picture to go in, over the limit of \(Self.maximumPendingBytes) bytes",
                                 byteOffset: location.startCodeOffset, nalIndex: parser.nalUnitCount - 1)
        }
        pending.append(unit)
    }

    private mutating func append(_ bytes: Span<UInt8>, reference: BlockBuffer?, at location: AnnexBNALUnit) throws(BitstreamError) {
        guard !bytes.isEmpty else { return }
        let picturesBefore = parser.pictureCount
        let errorsBefore = parser.errorCount
        let parsed = parser.consume(bytes, at: location)
        let type = parsed.header.nalUnitType
        let failed = parser.errorCount > errorsBefore
        switch type.rawValue {
        case 1...5:
            let startsPicture = parser.pictureCount > picturesBefore
            if startsPicture {
                try closeCurrent()
                try begin(decodeIndex: picturesBefore)
                if reference == nil { current!.data.tail.reserveCapacity(bytes.count + 64) }
                // Parameter sets before the picture are in its format description now.
                if !options.keepsParameterSetsInBand {
                    let before = pending.count
                    pending.removeAll { $0.outOfBand }
                    removedNALUnitCount += before - pending.count
                }
            } else if current == nil {
                // A slice no picture could start from (no parameter sets yet, a broken header):
                // it goes with the first picture, as a remuxer keeps it.
                try hold(Pending(bytes: bytes.array), at: location)
                return
            }
            // Parameter sets between the slices of one sample (a PPS before the second field)
            // cannot move out: the format description holds one per id. They stay in band.
            for nal in pending { try appendToCurrent(nal.bytes.span) }
            pending.removeAll()
            try appendToCurrent(bytes, reference: reference)
        case NALUnitType.sps.rawValue, NALUnitType.pps.rawValue:
            if !failed && !formatParameterSets.contains(bytes.array) { formatIsStale = true }
            try hold(Pending(bytes: bytes.array, outOfBand: !failed && !options.keepsParameterSetsInBand), at: location)
        case NALUnitType.accessUnitDelimiter.rawValue:
            if options.dropsAccessUnitDelimiters { removedNALUnitCount += 1 } else { try hold(Pending(bytes: bytes.array), at: location) }
        case NALUnitType.fillerData.rawValue where options.dropsFillerData:
            removedNALUnitCount += 1
        case 6, 13...18:
            try hold(Pending(bytes: bytes.array), at: location)
        default:
            // End of sequence/stream, filler, auxiliary and unspecified units follow the picture they end.
            if pending.isEmpty && current != nil { try appendToCurrent(bytes) } else { try hold(Pending(bytes: bytes.array), at: location) }
        }
    }

    /// Ends the stream: every remaining sample becomes ready.
    public mutating func finish() throws(BitstreamError) {
        if current != nil {
            for nal in pending where !nal.outOfBand { try appendToCurrent(nal.bytes.span) }
        } else {
            droppedNALUnitCount += pending.count
        }
        pending.removeAll()
        parser.finish()
        try closeCurrent()
        flushWindow()
        try releaseSettled()
    }

    /// The next sample in decoding order whose timing is settled, if any.
    public mutating func nextSample() -> SampleBuffer? {
        guard readyStart < ready.count else { return nil }
        let sample = ready[readyStart]
        readyStart += 1
        if readyStart == ready.count { ready.removeAll(keepingCapacity: true); readyStart = 0 }
        return sample
    }

    // MARK: Building a sample

    private mutating func appendToCurrent(_ nal: Span<UInt8>, reference: BlockBuffer? = nil) throws(BitstreamError) {
        do {
            if let reference, reference.count >= SampleAssembly.smallestReference {
                try AVCC.appendLengthPrefix(reference.count, lengthSize: options.nalUnitLengthSize, to: &current!.data.tail)
                current!.data.closeTail()
                current!.data.segments.append(reference)
            } else {
                try AVCC.append(nalUnit: nal, lengthSize: options.nalUnitLengthSize, to: &current!.data.tail)
            }
        } catch {
            throw error.prefixed("picture \(current!.decodeIndex)")
        }
    }

    private mutating func begin(decodeIndex: Int) throws(BitstreamError) {
        if formatIsStale || format == nil { try makeFormat(for: parser.picture(decodeIndex)!) }
        current = Building(data: SampleAssembly(), decodeIndex: decodeIndex, format: format!)
    }

    /// A format description from every parameter set received so far, the picture's SPS first.
    private mutating func makeFormat(for picture: PictureInfo) throws(BitstreamError) {
        let registry = parser.registry
        let spss = registry.sequenceParameterSets.sorted { ($0.key == picture.seqParameterSetId ? 0 : 1, $0.key) < ($1.key == picture.seqParameterSetId ? 0 : 1, $1.key) }
        let ppss = registry.pictureParameterSets.sorted { $0.key < $1.key }
        var description: VideoFormatDescription
        do {
            description = try VideoFormatDescription(sequenceParameterSets: spss.map(\.value.nalUnit), pictureParameterSets: ppss.map(\.value.nalUnit),
                                                     nalUnitLengthSize: options.nalUnitLengthSize, codec: options.codec)
        } catch {
            // A PPS left over from an SPS since replaced may no longer parse: keep the sets in use.
            let used = ppss.filter { $0.value.value.seqParameterSetId == picture.seqParameterSetId }
            do {
                description = try VideoFormatDescription(sequenceParameterSets: [spss[0].value.nalUnit], pictureParameterSets: used.map(\.value.nalUnit),
                                                         nalUnitLengthSize: options.nalUnitLengthSize, codec: options.codec)
            } catch { throw error.prefixed("format description for picture \(picture.decodeIndex)") }
        }
        if let format, format == description { description = format }
        format = description
        formatParameterSets = Set(description.sequenceParameterSets + description.pictureParameterSets)
        formatIsStale = false
    }

    private mutating func closeCurrent() throws(BitstreamError) {
        guard let building = current else { return }
        current = nil
        let picture = parser.picture(building.decodeIndex)!
        if sampleCount == 0 { try startTiming(with: picture) }
        sampleCount += 1
        // An IDR or MMCO 5 picture outputs everything before it (§C.4.4), then starts afresh.
        if picture.isIDR || picture.hasMMCO5 { flushWindow() }
        held.append(Held(data: building.data.finished(), decodeIndex: building.decodeIndex, format: building.format, picture: picture))
        window.append((picture.hasMMCO5 ? 0 : picture.picOrderCnt, building.decodeIndex))
        let depth = parser.registry.sps(picture.seqParameterSetId)?.reorderDepth ?? decodeDelay
        while window.count > depth { popWindow() }
        if held.count - heldStart > Self.maximumHeldSamples {
            parser.reportExternal(.warning, BitstreamError(.invalidStructure, "picture \(building.decodeIndex): more than \(Self.maximumHeldSamples) pictures wait to be shown; presentation order forced", byteOffset: picture.byteRange.lowerBound))
            flushWindow()
        }
        try releaseSettled()
    }

    private mutating func startTiming(with picture: PictureInfo) throws(BitstreamError) {
        let sps = parser.registry.sps(picture.seqParameterSetId)
        let rate: FrameRate
        switch frameRateSource {
        case .fixed(let fixed): rate = fixed
        case .stream(let fallback):
            if let streamRate = sps?.frameRate {
                rate = streamRate
                frameRateIsFromStream = true
            } else if let fallback {
                rate = fallback
                frameRateIsAssumed = true
            } else {
                throw BitstreamError(.missingTiming, "the stream has no VUI timing and no frame rate was given", byteOffset: picture.byteRange.lowerBound)
            }
        }
        guard rate.numerator <= UInt64(Int32.max), rate.denominator <= UInt64(Int32.max) else {
            throw BitstreamError(.unsupported, "frame rate \(rate) needs a timescale beyond 32 bits")
        }
        frameRate = rate
        timescale = Int32(rate.numerator)
        frameDuration = Int64(rate.denominator)
        decodeDelay = sps?.reorderDepth ?? 0
    }

    private mutating func popWindow() {
        var best = 0
        for i in window.indices.dropFirst() where window[i].picOrderCnt < window[best].picOrderCnt { best = i }
        let decodeIndex = window.remove(at: best).decodeIndex
        held[heldStart + decodeIndex - held[heldStart].decodeIndex].displayIndex = nextDisplayIndex
        nextDisplayIndex += 1
    }

    private mutating func flushWindow() {
        while !window.isEmpty { popWindow() }
    }

    private mutating func releaseSettled() throws(BitstreamError) {
        while heldStart < held.count, let displayIndex = held[heldStart].displayIndex {
            let item = held[heldStart]
            heldStart += 1
            let pts = MediaTime(value: Int64(displayIndex) * frameDuration, timescale: timescale)
            let dts = MediaTime(value: Int64(item.decodeIndex - decodeDelay) * frameDuration, timescale: timescale)
            if pts < dts {
                parser.reportExternal(.warning, BitstreamError(.invalidStructure, "picture \(item.decodeIndex) is shown before it is decoded (reorder deeper than the first SPS allows)", byteOffset: item.picture.byteRange.lowerBound))
            }
            let picture = item.picture
            let intraOnly = picture.sliceTypes.allSatisfy { $0 == .i || $0 == .si }
            ready.append(SampleBuffer(
                data: item.data,
                formatDescription: item.format,
                timing: SampleTiming(presentationTime: pts, decodeTime: dts, duration: MediaTime(value: frameDuration, timescale: timescale)),
                attachments: SampleAttachments(isSync: picture.isSync, dependsOnOthers: !intraOnly,
                                               isDependedOnByOthers: picture.isReference,
                                               earlierDisplayTimesAllowed: picture.isSync && !picture.isIDR)))
        }
        if heldStart == held.count { held.removeAll(keepingCapacity: true); heldStart = 0 }
        else if heldStart > 256 { held.removeFirst(heldStart); heldStart = 0 }
    }
}

/// A sample's bytes as they are gathered: copied NAL units and prefixes in `tail`, and
/// referenced NAL units between them.
private struct SampleAssembly {
    /// NAL units smaller than this are copied: a reference costs a segment.
    static let smallestReference = 4096
    var tail: [UInt8] = []
    var segments: [BlockBuffer] = []

    mutating func closeTail() {
        segments.append(BlockBuffer(tail))
        tail = []
    }

    func finished() -> BlockBuffer {
        segments.isEmpty ? BlockBuffer(tail) : BlockBuffer(chaining: segments + [BlockBuffer(tail)])
    }
}

extension SampleBufferBuilder {
    /// Every sample of an Annex-B stream held in memory, with the builder (for its parser's
    /// diagnostics and the frame rate used).
    public static func samples(
        fromAnnexB bytes: [UInt8], options: Options = Options(), frameRate: FrameRateSource = .stream(fallback: .assumedWithoutTiming)
    ) throws(BitstreamError) -> (samples: [SampleBuffer], builder: SampleBufferBuilder) {
        var builder = SampleBufferBuilder(options: options, frameRate: frameRate)
        var samples: [SampleBuffer] = []
        let locations = AnnexB.nalUnits(in: bytes)
        try bytes.withUnsafeBufferPointer { (base) throws(BitstreamError) in
            for location in locations {
                try builder.append(nalUnit: UnsafeBufferPointer(rebasing: base[location.payload]).span, at: location)
                while let sample = builder.nextSample() { samples.append(sample) }
            }
        }
        try builder.finish()
        while let sample = builder.nextSample() { samples.append(sample) }
        return (samples, builder)
    }
}

extension Span<UInt8> {
    /// A copy of the bytes.
    var array: [UInt8] { withUnsafeBufferPointer { Array($0) } }
}
