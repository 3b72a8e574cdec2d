import MediaCore
import MPEG4Audio
public import SampleFlow
import SystemPackage

/// What an ADTS stream (a `.aac` file) holds: its AAC configuration, its frames and their
/// span, and what was wrong (skipped bytes, cut or changed frames). `h264kit inspect` prints
/// it (as JSON with `--json`); ``probe(path:prefix:listsSamples:keepsRecords:onSample:)`` reads a stream to its end
/// and makes it.
public struct ADTSStreamSummary: Codable, Hashable, Sendable {
    /// Always "adts".
    public var format = "adts"
    /// Bytes read.
    public var bytes: Int
    /// The RFC 6381 codec string (`mp4a.40.2`).
    public var codec: String?
    /// The AAC object type's name ("AAC LC").
    public var objectType: String?
    /// Samples per second.
    public var sampleRate: Int?
    /// Channels.
    public var channels: Int?
    /// Frames read.
    public var frames: Int
    /// The frames' span, seconds (frames x 1024 / rate).
    public var durationSeconds: Double?
    /// What was wrong, as sentences.
    public var warnings: [String]
    /// Every frame as a sample, when listed.
    public var sampleList: [SampleRecord]?

    /// Reads the ADTS stream at `path` ("-": standard input, after the bytes of `prefix` that
    /// `InputFormat.detect(path:)` read from it) to its end, calling `onSample` with each frame
    /// when `listsSamples`. Memory is a read buffer (and the list, when kept).
    public static func probe(path: String, prefix: [UInt8] = [], listsSamples: Bool = false, keepsRecords: Bool = true,
                             onSample: (SampleRecord) -> Void = { _ in }) throws(SampleFlowError) -> ADTSStreamSummary {
        let reader = path == "-" ? ADTSReader(fileDescriptor: .standardInput, name: "stdin", prefix: prefix) : try ADTSReader(path: path)
        var records: [SampleRecord] = []
        var end = MediaTime.zero
        while let sample = try reader.next() {
            if Task.isCancelled { break }
            end = sample.presentationTime + sample.duration
            if listsSamples {
                let record = SampleRecord(index: reader.sampleCount - 1, sample: sample)
                onSample(record)
                if keepsRecords { records.append(record) }
            }
        }
        let audio = reader.audioFormatDescription
        return ADTSStreamSummary(bytes: reader.bytesRead, codec: audio?.codecString, objectType: audio?.audioSpecificConfig.map { "\($0.audioObjectType)" },
                                 sampleRate: audio?.sampleRate, channels: audio?.channelCount, frames: reader.sampleCount,
                                 durationSeconds: reader.sampleCount > 0 ? end.seconds : nil, warnings: reader.warnings,
                                 sampleList: listsSamples && keepsRecords ? records : nil)
    }

    /// The summary as text, for the stream called `name`.
    public func text(name: String) -> String {
        var lines = ["\(name): ADTS (AAC) stream, \(bytes) bytes"]
        func row(_ label: String, _ value: String) { lines.append("  " + label + String(repeating: " ", count: max(1, 14 - label.count)) + value) }
        if let codec {
            row("audio", [codec, objectType, sampleRate.map { "\($0) Hz" }, channels.map { "\($0) channel\($0 == 1 ? "" : "s")" }].compactMap { $0 }.joined(separator: " "))
        }
        row("frames", "\(frames)" + (durationSeconds.map { ", \(decimalText($0, 3)) s" } ?? ""))
        return lines.joined(separator: "\n")
    }
}
