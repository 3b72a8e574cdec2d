public import H264Bitstream
import MediaCore
public import SampleFlow
import SystemPackage

/// Reads an Annex-B H.264 stream to its end and summarizes it: `h264kit inspect` of a stream
/// as one call, with its NAL units or its samples listed if asked.
///
/// Memory is the summary's: the stream is read NAL unit by NAL unit, and NAL units and
/// samples are handed to the callbacks as they are read, and kept in the summary only with
/// ``Options/keepsRecords`` (a caller that prints them as they come keeps none).
public enum StreamProbe {
    /// What to list beside the summary.
    public struct Options: Sendable, Hashable {
        /// List every NAL unit (to `onNALUnit`, and ``StreamSummary/nalUnits``).
        public var listsNALUnits: Bool
        /// List every access unit as a sample in decoding order (to `onSample`, and
        /// ``StreamSummary/samples``), from the first on (nothing is skipped before a sync
        /// sample). The samples are made by a `SampleBufferReader`, which lists no NAL unit:
        /// asking for both is an error.
        public var listsSamples: Bool
        /// The rate the samples are timed with: overrides the stream's VUI timing (with a
        /// warning when they differ) or times a stream without it (25 fps, with a warning,
        /// when neither says). Only samples have times: it needs ``listsSamples``.
        public var frameRate: FrameRate?
        /// Keep what is listed in the summary as well (for JSON); without it the records go
        /// only to the callbacks and memory stays the summary's, however long the stream.
        public var keepsRecords: Bool

        /// Options listing nothing but the summary unless asked.
        public init(listsNALUnits: Bool = false, listsSamples: Bool = false, frameRate: FrameRate? = nil, keepsRecords: Bool = true) {
            self.listsNALUnits = listsNALUnits
            self.listsSamples = listsSamples
            self.frameRate = frameRate
            self.keepsRecords = keepsRecords
        }
    }

    /// What a probe found.
    public struct Result: Sendable {
        /// The summary (with the lists asked for).
        public var summary: StreamSummary
        /// The parser that read the stream: every diagnostic, its counts.
        public var parser: H264StreamParser
        /// What the sample reader warned of while timing the samples (an assumed or
        /// overridden rate), when samples were listed.
        public var warnings: [SampleBufferReader.Warning]
        /// Whether the probe stopped early because its task was cancelled (SIGINT in the
        /// tool, or a listing's reader gone): the summary covers the stream read until then.
        public var interrupted = false
    }

    /// Probes the stream in the file at `path` (or standard input for "-", after the bytes of
    /// `prefix` that `InputFormat.detect(path:)` read from it).
    public static func probe(path: String, prefix: [UInt8] = [], options: Options = Options(), onNALUnit: (NALUnitRecord) -> Void = { _ in },
                             onSample: (SampleRecord) -> Void = { _ in }) throws(SampleFlowError) -> Result {
        let units = path == "-" ? AnnexBReader(fileDescriptor: .standardInput, name: "stdin", prefix: prefix, options: .init(releasesPagesBehind: false))
            : try AnnexBReader(path: path, options: .init(releasesPagesBehind: false))
        return try probe(units, options: options, onNALUnit: onNALUnit, onSample: onSample)
    }

    /// Probes the stream `units` reads, calling `onNALUnit` with each NAL unit (when listed)
    /// and `onSample` with each sample (when listed) as they are read. A stream with no start
    /// code at all is an error (`BitstreamError.Code.noPicture`); a stream with damaged NAL
    /// units or without a decodable picture is summarized, and the summary counts them.
    /// Cancelling the calling task stops the reading; the result covers what was read.
    public static func probe(_ units: AnnexBReader, options: Options = Options(), onNALUnit: (NALUnitRecord) -> Void = { _ in },
                             onSample: (SampleRecord) -> Void = { _ in }) throws(SampleFlowError) -> Result {
        if options.listsNALUnits && options.listsSamples {
            throw .invalidOption("a probe lists NAL units or samples, not both")
        }
        if options.frameRate != nil && !options.listsSamples {
            throw .invalidOption("a frame rate times samples: list samples to give one")
        }
        var nalRecords: [NALUnitRecord] = []
        var sampleRecords: [SampleRecord] = []
        var sampleCount = 0
        var warnings: [SampleBufferReader.Warning] = []
        let parser: H264StreamParser
        if options.listsSamples {
            // The sample reader owns the parser; every sample is listed, from the first on.
            let reader = SampleBufferReader(nalUnits: units, options: .init(frameRate: options.frameRate, startsAtSyncSample: false,
                                                                             rejectsSlicesBeforeParameterSets: false))
            do {
                while let sample = try reader.next() {
                    if Task.isCancelled { break }
                    let record = SampleRecord(index: sampleCount, sample: sample)
                    sampleCount += 1
                    onSample(record)
                    if options.keepsRecords { sampleRecords.append(record) }
                }
            } catch where error.bitstreamError?.code == .noPicture {
                // A stream without pictures is summarized, as without samples.
            }
            warnings = reader.warnings
            parser = reader.parser
        } else {
            var streamParser = H264StreamParser()
            while let unit = try units.next() {
                if Task.isCancelled { break }
                let parsed = unit.withSpan { streamParser.consume($0, at: unit.location) }
                guard options.listsNALUnits else { continue }
                let record = NALUnitRecord(parsed)
                onNALUnit(record)
                if options.keepsRecords { nalRecords.append(record) }
            }
            streamParser.finish()
            if units.leadingGarbageCount > 0 && streamParser.nalUnitCount > 0 {
                streamParser.reportExternal(.warning, BitstreamError(.invalidStructure, "\(units.leadingGarbageCount) bytes before the first start code were skipped", byteOffset: 0))
            }
            parser = streamParser
        }
        guard parser.nalUnitCount > 0 else {
            throw .bitstream(BitstreamError(.noPicture, "no H.264 start code found in \(units.bytesRead) bytes; not an Annex-B H.264 stream"), input: units.name)
        }
        let keeps = options.keepsRecords
        var summary = StreamSummary(parser: parser, bytes: units.bytesRead, nalUnits: options.listsNALUnits && keeps ? nalRecords : nil)
        if options.listsSamples {
            if keeps { summary.samples = sampleRecords }
            summary.sampleFrameRate = sampleCount == 0 ? nil : (options.frameRate ?? parser.firstPictureSPS?.frameRate ?? .assumedWithoutTiming).description
        }
        return Result(summary: summary, parser: parser, warnings: warnings, interrupted: Task.isCancelled)
    }
}
