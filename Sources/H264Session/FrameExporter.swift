public import SampleFlow
public import H264Bitstream
public import H264Codec
import ISOBMFF
import MPEGTS
public import MediaCore
import MediaIO

/// Decodes a whole input (an Annex-B stream, an MP4 or MOV) and writes its frames to a picture
/// file: raw video in FFmpeg's rawvideo layout, Y4M, a PNG sequence, or FFmpeg's framemd5 lines.
/// `h264kit decode` as one call.
///
/// Frames go out in presentation order as a ``FrameReader`` gives them (a size change scaled to
/// the first size unless ``Options/reader`` says otherwise). A damaged frame is concealed as
/// FFmpeg conceals it and written, and told to `onDamage` as it goes by; with
/// ``Options/stopsAtDamage`` the first damage is an error instead. Memory is the reader's:
/// each frame is written and let go.
public struct FrameExporter: Sendable {
    /// The picture file's kind.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// Planes one after another, frame after frame (`ffmpeg -f rawvideo`).
        case raw
        /// YUV4MPEG2 (mpv and ffplay read it from a pipe).
        case y4m
        /// A PNG file per frame, named by a pattern with a frame number (`frames-%05d.png`).
        case png
        /// FFmpeg's `-f framemd5` lines: a hash per frame.
        case framemd5

        /// The kind a file name says (`.y4m`, `.png`, `.framemd5`/`.md5`); raw for any other.
        public init(path: String) {
            let lower = path.lowercased()
            if lower.hasSuffix(".y4m") { self = .y4m } else if lower.hasSuffix(".png") { self = .png } else if lower.hasSuffix(".framemd5") || lower.hasSuffix(".md5") {
                self = .framemd5
            } else {
                self = .raw
            }
        }
    }

    /// How to decode and write.
    public struct Options: Sendable {
        /// How the frames come out of the decoder (threads, pixel format, size, interval, limits).
        public var reader: FrameReader.Options
        /// How the input is read (an Annex-B stream's rate, a movie's track and limits).
        public var source: MediaSource.Options
        /// The file's kind; nil takes it from the output's name.
        public var format: Format?
        /// Write at most this many frames.
        public var frameLimit: Int?
        /// Stop with ``SessionError/damaged(_:)`` at the first damaged frame or, for an Annex-B
        /// stream, when any NAL unit could not be parsed (`--strict`).
        public var stopsAtDamage: Bool

        /// Options: every frame, the decoder's defaults, damage concealed.
        public init(reader: FrameReader.Options = .init(), source: MediaSource.Options = .decoding, format: Format? = nil,
                    frameLimit: Int? = nil, stopsAtDamage: Bool = false) {
            self.reader = reader
            self.source = source
            self.format = format
            self.frameLimit = frameLimit
            self.stopsAtDamage = stopsAtDamage
        }
    }

    /// A damaged frame, as it went by.
    public enum Damage: Sendable, Hashable, CustomStringConvertible {
        /// Decoded with damage concealed, and written as the `frame`th frame.
        case concealed(frame: Int, sample: Int, presentationTime: MediaTime, errorFlags: DecodeErrorFlags, messages: [String])
        /// The decoder gave no picture for the sample, and said why.
        case rejected(sample: Int, reason: String)

        /// What and where, as `h264kit decode` prints it.
        public var description: String {
            switch self {
            case .concealed(let frame, let sample, let time, let flags, let messages):
                let seconds = time.isNumeric ? " at \(time.seconds) s" : ""
                return "frame \(frame) (sample \(sample)\(seconds)): damaged, concealed" + (flags.isEmpty ? "" : " (\(flags))")
                    + (messages.isEmpty ? "" : ": " + messages.joined(separator: "; "))
            case .rejected(let sample, let reason): return "sample \(sample): damaged, no picture (\(reason))"
            }
        }
    }

    /// What an export did.
    public struct Summary: Sendable {
        /// Frames written.
        public var frames = 0
        /// Of those, frames with damage concealed.
        public var concealedFrames = 0
        /// Samples the decoder rejected (damaged, no picture).
        public var rejectedSamples = 0
        /// Samples that gave no picture for want of what they refer to (before the first sync
        /// sample, or cut off).
        public var samplesWithoutPicture = 0
        /// A movie's reader warnings.
        public var movieWarnings: [String] = []
        /// An Annex-B stream's reader warnings (an assumed or overridden rate).
        public var streamWarnings: [SampleBufferReader.Warning] = []
        /// What the stream parser found wrong in an Annex-B stream (damaged headers, units cut
        /// off; each also told to `onDiagnostic` as it was found).
        public var diagnostics: [StreamDiagnostic] = []
        /// NAL units of an Annex-B stream that could not be parsed.
        public var damagedNALUnits = 0
        /// Whether the export stopped early because its task was cancelled: the file holds
        /// the frames decoded until then, finished.
        public var interrupted = false
    }

    /// How to decode and write.
    public var options: Options

    /// An exporter with `options`.
    public init(options: Options = Options()) { self.options = options }

    /// Decodes the input at `path` ("-": an Annex-B stream on standard input) into `output`
    /// ("-": standard output), calling `onDamage` for each damaged frame and, for an Annex-B
    /// stream, `onDiagnostic` with each problem the stream parser finds, as it is found (those
    /// before a failure too). Cancelling the calling task stops the decoding and finishes the
    /// file with the frames written so far (``Summary/interrupted``).
    public func run(path: String, to output: String, onDamage: (Damage) -> Void = { _ in },
                    onDiagnostic: (StreamDiagnostic) -> Void = { _ in }) throws(SessionError) -> Summary {
        let format = options.format ?? Format(path: output)
        if let limit = options.frameLimit, limit < 1 { throw .invalidOption("a frame limit of \(limit): at least 1") }
        if format == .png, options.frameLimit != 1, output == "-" || !output.contains("%") {
            throw .invalidOption("\(output): PNG output writes a file per frame; name it with a pattern (frames-%05d.png), or export one frame")
        }
        let reader = try FrameReader(path: path, options: options.reader, sourceOptions: options.source)
        var summary = Summary()
        summary.movieWarnings = reader.source.movie?.warnings ?? []
        var writer: (any PictureWriter)?
        var told = 0
        func tell() {
            guard case .annexB(let stream) = reader.source.kind else { return }
            let diagnostics = stream.parser.diagnostics
            for diagnostic in diagnostics.dropFirst(told) { onDiagnostic(diagnostic) }
            told = diagnostics.count
        }
        defer { tell() }
        // The writer's errors, as the session's.
        func writing(_ body: () throws(MediaIOError) -> Void) throws(SessionError) {
            do { try body() } catch { throw .mediaIO(error) }
        }
        while summary.frames < (options.frameLimit ?? .max), let frame = try reader.next() {
            if Task.isCancelled {
                summary.interrupted = true
                break
            }
            tell()
            try note(frame, in: &summary, onDamage: onDamage)
            guard let picture = frame.pixelBuffer else { continue }
            let fieldOrder: FieldOrder = frame.isInterlaced ? (frame.topFieldFirst ? .topFieldFirst : .bottomFieldFirst) : .progressive
            try writing { () throws(MediaIOError) in
                if writer == nil { writer = try Self.writer(format, path: output, source: reader.source) }
                try writer!.write(picture, at: frame.presentationTime, fieldOrder: fieldOrder)
            }
            summary.frames += 1
        }
        if case .annexB(let stream) = reader.source.kind {
            summary.streamWarnings = stream.warnings
            summary.diagnostics = stream.parser.diagnostics
            summary.damagedNALUnits = stream.parser.errorCount
            if options.stopsAtDamage, stream.parser.errorCount > 0 { throw .damaged("\(stream.parser.errorCount) NAL unit(s) are damaged") }
        }
        try writing { () throws(MediaIOError) in try writer?.finish() }
        return summary
    }

    /// Counts a frame's damage (and stops at it, if asked).
    private func note(_ frame: DecodedFrame, in summary: inout Summary, onDamage: (Damage) -> Void) throws(SessionError) {
        if frame.flags.contains(.notDisplayed) && !frame.isDropped { return }
        guard frame.pixelBuffer != nil else {
            guard frame.error != nil || !frame.messages.isEmpty else {
                summary.samplesWithoutPicture += 1
                return
            }
            summary.rejectedSamples += 1
            let reason = frame.error.map { "\($0)" } ?? frame.messages.joined(separator: "; ")
            onDamage(.rejected(sample: frame.sampleIndex, reason: reason))
            if options.stopsAtDamage { throw .damaged("sample \(frame.sampleIndex): damaged (\(reason))") }
            return
        }
        guard frame.flags.contains(.concealed) else { return }
        summary.concealedFrames += 1
        onDamage(.concealed(frame: summary.frames, sample: frame.sampleIndex, presentationTime: frame.presentationTime, errorFlags: frame.errorFlags, messages: frame.messages))
        if options.stopsAtDamage { throw .damaged("frame \(summary.frames) (sample \(frame.sampleIndex)): damaged") }
    }

    /// The writer of `format` at `path`, timed at the source's rate (`FrameRate/assumedWithoutTiming` when it has none).
    private static func writer(_ format: Format, path: String, source: MediaSource) throws(MediaIOError) -> any PictureWriter {
        let rate = source.frameRate ?? .assumedWithoutTiming
        switch format {
        case .raw: return try RawVideoWriter(path: path)
        case .y4m: return try Y4MWriter(path: path, frameRate: rate, stream: source.formatDescription)
        case .framemd5: return try FrameMD5Writer(path: path, frameRate: rate)
        case .png: return try PNGSequenceWriter(pattern: path)
        }
    }
}
