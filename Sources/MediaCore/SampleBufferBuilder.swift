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
    public typealias Options = AccessUnitAssembler.Options

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
    public var options: Options { assembler.options }
    /// Where the frame rate comes from: the stream's VUI timing, or a rate the caller fixes.
    public let frameRateSource: FrameRateSource
    /// The access units underneath, gathered from the NAL units.
    private var assembler: AccessUnitAssembler
    /// The parser underneath: parameter sets, diagnostics, counts, and the most recent
    /// ``retainedPictures`` pictures (a builder runs as long as its stream: its memory must
    /// not grow with it).
    public var parser: H264StreamParser { assembler.parser }
    /// How many diagnostics the parser has kept, without a copy of it.
    public var diagnosticCount: Int { assembler.parser.diagnostics.count }
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
    public var droppedNALUnitCount: Int { assembler.droppedNALUnitCount }
    /// NAL units removed on request (AUD, filler) or moved into the format description.
    public var removedNALUnitCount: Int { assembler.removedNALUnitCount }
    /// Samples closed so far, counting those not yet released.
    public private(set) var sampleCount = 0
    /// The most bytes of NAL units held while no picture takes them (see
    /// ``AccessUnitAssembler/maximumPendingBytes``).
    public static var maximumPendingBytes: Int { AccessUnitAssembler.maximumPendingBytes }

    private struct Held {
        var data: BlockBuffer
        var decodeIndex: Int
        var format: VideoFormatDescription
        var picture: PictureInfo
        var displayIndex: Int?
    }

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
        assembler = AccessUnitAssembler(options: options, retainingPictures: Self.retainedPictures)
        self.frameRateSource = frameRate
    }

    /// Adds the next NAL unit of the stream (header byte first); `location` is its place in the
    /// stream, for diagnostics.
    public mutating func append(nalUnit bytes: Span<UInt8>, at location: AnnexBNALUnit) throws(BitstreamError) {
        if let unit = try assembler.append(nalUnit: bytes, at: location) { try close(unit) }
    }

    /// Adds the next NAL unit of the stream from a block buffer (a slice of a mapped file, say).
    /// Slices of pictures are not copied: the sample's data chains references to them between
    /// its length prefixes, so the memory must stay unchanged while the samples are in use.
    public mutating func append(nalUnit buffer: BlockBuffer, at location: AnnexBNALUnit) throws(BitstreamError) {
        if let unit = try assembler.append(nalUnit: buffer, at: location) { try close(unit) }
    }

    /// Adds the next NAL unit as an `AnnexBReader` returns it; large units are referenced, not
    /// copied (see ``append(nalUnit:at:)-(BlockBuffer,_)``).
    public mutating func append(_ nalUnit: NALUnitBuffer) throws(BitstreamError) {
        if let unit = try assembler.append(nalUnit) { try close(unit) }
    }

    /// Ends the stream: every remaining sample becomes ready.
    public mutating func finish() throws(BitstreamError) {
        if let unit = try assembler.finish() { try close(unit) }
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

    // MARK: Timing

    private mutating func close(_ unit: AccessUnitAssembler.AccessUnit) throws(BitstreamError) {
        let picture = unit.picture
        if sampleCount == 0 { try startTiming(with: picture) }
        sampleCount += 1
        // An IDR or MMCO 5 picture outputs everything before it (§C.4.4), then starts afresh.
        if picture.isIDR || picture.hasMMCO5 { flushWindow() }
        held.append(Held(data: unit.data, decodeIndex: unit.decodeIndex, format: unit.formatDescription, picture: picture))
        window.append((picture.hasMMCO5 ? 0 : picture.picOrderCnt, unit.decodeIndex))
        let depth = parser.registry.sps(picture.seqParameterSetId)?.reorderDepth ?? decodeDelay
        while window.count > depth { popWindow() }
        if held.count - heldStart > Self.maximumHeldSamples {
            assembler.report(.warning, BitstreamError(.invalidStructure, "picture \(unit.decodeIndex): more than \(Self.maximumHeldSamples) pictures wait to be shown; presentation order forced", byteOffset: picture.byteRange.lowerBound))
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
                assembler.report(.warning, BitstreamError(.invalidStructure, "picture \(item.decodeIndex) is shown before it is decoded (reorder deeper than the first SPS allows)", byteOffset: item.picture.byteRange.lowerBound))
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
