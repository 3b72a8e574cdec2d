import ISOBMFF
public import MPEGTS
import MediaCore
public import SampleFlow
import MPEG4Audio
import SystemPackage

/// Reads a transport stream to its end and summarizes it: `h264kit inspect` of a `.ts` as one
/// call, with its video's samples listed if asked.
///
/// Every picture is read, those before the first sync sample and damaged ones too (they are
/// counted, as ffprobe counts them). Memory is the reader's, and the sample list's only with
/// ``StreamProbe/Options/keepsRecords``.
public enum TransportStreamProbe {
    /// What a probe found.
    public struct Result: Sendable {
        /// The summary (with the samples, when listed and kept).
        public var summary: TransportStreamSummary
        /// Whether the probe stopped early because its task was cancelled.
        public var interrupted: Bool
    }

    /// Probes the transport stream at `path` ("-": standard input, after the bytes of `prefix`
    /// that `InputFormat.detect(path:)` read from it), calling `onSample` with each sample
    /// when `listsSamples`; `program` picks the program (else the first with H.264).
    public static func probe(path: String, prefix: [UInt8] = [], program: UInt16? = nil, listsSamples: Bool = false, keepsRecords: Bool = true,
                             onSample: (SampleRecord) -> Void = { _ in }) throws(SampleFlowError) -> Result {
        var options = TransportStreamReader.Options(startsAtSyncSample: false, keepsDamagedPESPackets: true)
        options.tracks = .all
        if let program { options.selection = .program(program) }
        let reader: TransportStreamReader
        if path == "-" {
            reader = TransportStreamReader(fileDescriptor: .standardInput, name: "stdin", prefix: prefix, options: options)
        } else {
            do { reader = try TransportStreamReader(path: path, options: options) } catch { throw .container(error) }
        }
        return try probe(reader, listsSamples: listsSamples, keepsRecords: keepsRecords, onSample: onSample)
    }

    /// Probes what `reader` reads.
    public static func probe(_ reader: TransportStreamReader, listsSamples: Bool = false, keepsRecords: Bool = true,
                             onSample: (SampleRecord) -> Void = { _ in }) throws(SampleFlowError) -> Result {
        var records: [SampleRecord] = []
        var count = 0
        var first: MediaTime?
        var end: MediaTime?
        var interrupted = false
        var others: [TrackID: TransportStreamSummary.TrackSpan] = [:]
        do {
            while let sample = try reader.next() {
                if Task.isCancelled {
                    interrupted = true
                    break
                }
                guard sample.mediaType == .video else {
                    others[sample.trackID, default: .init(first: sample.presentationTime, end: sample.presentationTime)].add(sample)
                    continue
                }
                if first == nil || sample.presentationTime < first! { first = sample.presentationTime }
                let sampleEnd = sample.presentationTime + sample.duration
                if end == nil || sampleEnd > end! { end = sampleEnd }
                if listsSamples {
                    let record = SampleRecord(index: count, sample: sample)
                    onSample(record)
                    if keepsRecords { records.append(record) }
                }
                count += 1
            }
        } catch {
            throw .container(error)
        }
        let duration = first.flatMap { start in end.map { $0 - start } }
        return Result(summary: TransportStreamSummary(reader: reader, samples: count, duration: duration, sampleList: listsSamples && keepsRecords ? records : nil,
                                                      spans: others),
                      interrupted: interrupted)
    }
}
