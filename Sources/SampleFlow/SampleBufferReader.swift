public import MediaCore
import SystemIO
public import H264Bitstream

/// Reads an Annex-B stream as sample buffers: an `AnnexBReader` feeding a
/// `SampleBufferBuilder`, with the policies a remuxer applies as options (seed 003,
/// "Building a CMSampleBuffer" for a whole stream).
///
/// Samples come in decoding order with exact timing. By default the reader starts at the first
/// sync sample (pictures before the first IDR or recovery point cannot be decoded and are
/// counted in ``skippedLeadingSamples``), refuses a stream whose first slices come before
/// their SPS/PPS, and takes the frame rate from the stream's VUI timing; a rate the caller
/// gives overrides that (as `ffmpeg -r` does) with a warning when they differ, and a stream
/// with neither is read at ``Options/assumedFrameRate`` with a warning. Warnings collect in
/// ``warnings``; what the stream parser found wrong stays in ``parser``'s diagnostics.
///
/// Read with ``next()`` (`while let sample = try reader.next()`) or as an `AsyncSequence`.
/// An input with no decodable picture ends with ``SampleFlowError/bitstream(_:input:)`` of
/// code `BitstreamError/Code/noPicture`; what the stream parser finds wrong on the way is a
/// bitstream error with its byte offset and NAL unit, a read failure a system error.
public final class SampleBufferReader {
    /// How the stream is turned into samples.
    public struct Options: Sendable, Hashable {
        /// Sample framing: NAL length size, parameter sets in band, AUD and filler handling.
        public var builder: SampleBufferBuilder.Options
        /// The frame rate to time samples with, whatever the stream says (a warning names both
        /// when the stream's VUI timing differs); nil takes the stream's.
        public var frameRate: FrameRate?
        /// The rate for a stream without VUI timing when ``frameRate`` is nil, used with a
        /// warning; nil makes such a stream an error (`BitstreamError/Code/missingTiming`).
        public var assumedFrameRate: FrameRate?
        /// Leave out the samples before the first sync sample.
        public var startsAtSyncSample: Bool
        /// A slice before the SPS/PPS it needs, ahead of the first picture (a stream cut in
        /// the middle), is an error instead of a diagnostic.
        public var rejectsSlicesBeforeParameterSets: Bool
        /// Limits of the underlying reader.
        public var reader: AnnexBReader.Options

        /// Options with the remuxer's defaults.
        public init(builder: SampleBufferBuilder.Options = .init(), frameRate: FrameRate? = nil, assumedFrameRate: FrameRate? = .assumedWithoutTiming,
                    startsAtSyncSample: Bool = true, rejectsSlicesBeforeParameterSets: Bool = true, reader: AnnexBReader.Options = .init()) {
            self.builder = builder
            self.frameRate = frameRate
            self.assumedFrameRate = assumedFrameRate
            self.startsAtSyncSample = startsAtSyncSample
            self.rejectsSlicesBeforeParameterSets = rejectsSlicesBeforeParameterSets
            self.reader = reader
        }
    }

    /// Something worth telling the user that does not stop reading.
    public enum Warning: Sendable, Hashable, CustomStringConvertible {
        /// The stream has no VUI timing and no rate was given: samples are timed at this rate.
        case assumedFrameRate(FrameRate)
        /// The given rate replaced the stream's VUI timing.
        case frameRateOverridden(stream: FrameRate, given: FrameRate)
        /// Bytes before the first start code were skipped.
        case leadingGarbage(bytes: Int)
        /// Samples before the first sync sample were left out.
        case leadingSamplesSkipped(count: Int)

        /// The warning as a sentence for the user.
        public var description: String {
            switch self {
            case .assumedFrameRate(let rate):
                "the stream has no VUI timing; assuming \(rate) fps (give the rate, e.g. 30000/1001)"
            case .frameRateOverridden(let stream, let given):
                "the stream's VUI timing says \(stream) fps; timing the samples at the given \(given) fps instead"
            case .leadingGarbage(let bytes):
                "\(bytes) bytes before the first start code were skipped"
            case .leadingSamplesSkipped(let count):
                "the stream does not start with an IDR picture or recovery point; the \(count) picture(s) before the first one cannot be decoded and were left out"
            }
        }
    }

    /// How the stream is turned into samples.
    public let options: Options
    /// The NAL units underneath.
    public let nalUnits: AnnexBReader
    private var builder: SampleBufferBuilder
    private var ended = false
    private var firstChecked = false
    private var sawSync = false
    /// Samples returned so far.
    public private(set) var sampleCount = 0
    /// Samples left out before the first sync sample.
    public private(set) var skippedLeadingSamples = 0
    /// Warnings so far (final once ``next()`` has returned nil).
    public private(set) var warnings: [Warning] = []

    /// Reads `path` ("-" for standard input).
    public convenience init(path: String, options: Options = Options()) throws(SampleFlowError) {
        self.init(nalUnits: try AnnexBReader(path: path, options: options.reader), options: options)
    }

    /// Reads a stream held in memory.
    public convenience init(bytes: [UInt8], name: String = "bytes", options: Options = Options()) {
        self.init(nalUnits: AnnexBReader(bytes: bytes, name: name, options: options.reader), options: options)
    }

    /// Reads the units of `nalUnits`.
    public init(nalUnits: AnnexBReader, options: Options = Options()) {
        self.nalUnits = nalUnits
        self.options = options
        let source: SampleBufferBuilder.FrameRateSource = options.frameRate.map { .fixed($0) } ?? .stream(fallback: options.assumedFrameRate)
        builder = SampleBufferBuilder(options: options.builder, frameRate: source)
    }

    /// The input's name in messages.
    public var name: String { nalUnits.name }
    /// The stream parser: pictures, parameter sets, diagnostics, counts.
    public var parser: H264StreamParser { builder.parser }
    /// How many diagnostics the parser has kept, without a copy of it (checked per sample).
    public var diagnosticCount: Int { builder.diagnosticCount }
    /// The frame rate the samples are timed with, known from the first sample on.
    public var frameRate: FrameRate? { builder.frameRate }
    /// Whether ``frameRate`` is the stream's own VUI timing.
    public var frameRateIsFromStream: Bool { builder.frameRateIsFromStream }

    /// The next sample in decoding order, or nil at the end.
    public func next() throws(SampleFlowError) -> SampleBuffer? {
        while true {
            if let sample = builder.nextSample() {
                if !firstChecked { try bitstream { () throws(BitstreamError) in try checkFirst() } }
                if options.startsAtSyncSample && !sawSync && !sample.isSync {
                    skippedLeadingSamples += 1
                    continue
                }
                sawSync = true
                sampleCount += 1
                return sample
            }
            if ended {
                guard sampleCount > 0 else { throw .bitstream(noPicture(), input: name) }
                return nil
            }
            if let unit = try nalUnits.next() {
                try bitstream { () throws(BitstreamError) in try builder.append(unit) }
            } else {
                try bitstream { () throws(BitstreamError) in try builder.finish() }
                ended = true
                if nalUnits.leadingGarbageCount > 0 && parser.nalUnitCount > 0 { warnings.append(.leadingGarbage(bytes: nalUnits.leadingGarbageCount)) }
                if skippedLeadingSamples > 0 { warnings.append(.leadingSamplesSkipped(count: skippedLeadingSamples)) }
            }
        }
    }

    /// A stream parser's or builder's error, as this reader's with the input's name.
    private func bitstream(_ body: () throws(BitstreamError) -> Void) throws(SampleFlowError) {
        do { try body() } catch { throw .bitstream(error, input: name) }
    }

    /// At the first sample: the frame-rate warnings, and slices before their parameter sets.
    private func checkFirst() throws(BitstreamError) {
        firstChecked = true
        let streamRate = parser.firstPictureSPS?.frameRate
        if let given = options.frameRate {
            if let streamRate, streamRate != given { warnings.append(.frameRateOverridden(stream: streamRate, given: given)) }
        } else if streamRate == nil, let assumed = options.assumedFrameRate {
            warnings.append(.assumedFrameRate(assumed))
        }
        if options.rejectsSlicesBeforeParameterSets, let first = parser.pictures.first,
           let missing = parser.diagnostics.first(where: {
               $0.severity == .error && $0.error.code == .missingParameterSet && ($0.error.byteOffset ?? 0) < first.byteRange.lowerBound
           }) {
            throw BitstreamError(.missingParameterSet, "slices before their SPS/PPS (\(missing.error)); the stream was cut in the middle?",
                                 byteOffset: missing.error.byteOffset, nalIndex: missing.error.nalIndex)
        }
    }

    private func noPicture() -> BitstreamError {
        if parser.nalUnitCount == 0 {
            return BitstreamError(.noPicture, "no H.264 start code found in \(nalUnits.bytesRead) bytes; not an Annex-B H.264 stream")
        }
        return BitstreamError(.noPicture, "no decodable picture (no slice with its SPS and PPS)")
    }
}

extension SampleBufferReader: AsyncSequence {
    /// The samples read, in decoding order.
    public typealias Element = SampleBuffer
    /// The error a read throws.
    public typealias Failure = SampleFlowError

    /// Iterates the reader; reads that may block (a pipe) run on a dispatch queue.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: SampleBufferReader

        /// The next sample, or nil at the end of the stream.
        public mutating func next() async throws(SampleFlowError) -> SampleBuffer? {
            try await next(isolation: nil)
        }

        /// The next sample, or nil at the end; blocking reads run on a global dispatch queue.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SampleFlowError) -> SampleBuffer? {
            guard reader.nalUnits.readsBlock else { return try reader.next() }
            nonisolated(unsafe) let reader = self.reader  // one iterator at a time uses it
            return try await offloaded { () throws(SampleFlowError) -> SampleBuffer? in try reader.next() }
        }
    }

    /// An iterator over the reader's samples; use one at a time, the reader is shared.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: self) }
}
