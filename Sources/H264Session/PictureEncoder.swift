public import SampleFlow
public import H264Codec
import ISOBMFF
import MPEGTS
public import MediaCore
public import MediaIO
import SystemIO
import Synchronization

/// Encodes every picture of a picture file (Y4M or raw) into an Annex-B stream or a movie with
/// the compression session: `h264kit encode` as one call. Two passes read the input twice.
public struct PictureEncoder: Sendable {
    /// What was written.
    public struct Summary: Sendable, Hashable {
        /// Encoded frames written.
        public var frames: Int
        /// Bytes of encoded frame data written (for a movie, without its boxes).
        public var bytes: Int
        /// The pictures' presentation span.
        public var duration: MediaTime
        /// Whether the encode stopped early because its task was cancelled: the output holds
        /// the pictures read until then, encoded and finished (a two-pass encode cut short in
        /// its first pass writes nothing).
        public var interrupted = false
    }

    /// What x264 encodes and how; an Annex-B output turns on `annexB` and `repeatParameterSets`.
    public var settings: EncoderSettings
    /// 1, or 2 (at `EncoderSettings/rateControl`'s average bit rate).
    public var passes: Int
    /// Encode at most this many pictures.
    public var frameLimit: Int?

    /// An encoder of `passes` passes with `settings`, stopping after `frameLimit` pictures when given.
    public init(settings: EncoderSettings, passes: Int = 1, frameLimit: Int? = nil) {
        self.settings = settings
        self.passes = passes
        self.frameLimit = frameLimit
    }

    /// Encodes the pictures `openReader` gives (called once per pass) into `output`.
    /// `progress` is called after each picture with the pass and the pictures so far. Nothing
    /// is left at `output` when it fails. Cancelling the calling task stops the reading and
    /// finishes the output with the pictures read (``Summary/interrupted``).
    public func run(reading openReader: () throws(MediaIOError) -> any PictureReader, into output: SampleOutput,
                    progress: (_ pass: Int, _ pictures: Int, _ bytes: Int) -> Void = { _, _, _ in }) throws(SessionError) -> Summary {
        var settings = self.settings
        if case .annexB = output {
            settings.annexB = true
            settings.repeatParameterSets = true
        }
        let sink = try CompressedFrameSink(output, annexB: settings.annexB)
        defer { sink.cancel() }  // after a commit, nothing to cancel
        // Pictures in another format than the settings' (gray given to 4:2:0 settings) are converted.
        let session = try CompressionSession(configuration: .init(settings: settings, passes: passes, convertsPictures: true), outputHandler: { sink.take($0) })
        var encoded = 0
        var interrupted = false
        var frameDuration = settings.frameRate.frameDuration
        for pass in 1...passes {
            if passes > 1 { try session.beginPass() }
            let reader: any PictureReader
            do { reader = try openReader() } catch { throw .mediaIO(error) }
            frameDuration = reader.frameDuration
            encoded = 0
            while frameLimit.map({ encoded < $0 }) ?? true {
                if Task.isCancelled {
                    interrupted = true
                    break
                }
                let picture: PixelBuffer?
                do { picture = try reader.next() } catch { throw .mediaIO(error) }
                guard let picture else { break }
                try session.encode(picture, presentationTime: frameDuration * Int64(encoded))
                encoded += 1
                if let error = sink.error { throw error }
                progress(pass, encoded, sink.bytes)
            }
            if interrupted {
                // A first pass cut short has no statistics for a second: the frames of this
                // pass are what there is.
                if passes > 1 && pass == 1 { throw .cancelled }
                if passes > 1 { _ = try session.endPass() }
                break
            }
            if passes > 1 { _ = try session.endPass() }
        }
        if passes == 1 { session.finish() }
        if let error = sink.error { throw error }
        guard encoded > 0 else { throw .mediaIO(MediaIOError(.invalidData, "no pictures to encode; nothing written")) }
        try sink.finish()
        return Summary(frames: sink.frames, bytes: sink.bytes, duration: frameDuration * Int64(encoded), interrupted: interrupted)
    }
}
