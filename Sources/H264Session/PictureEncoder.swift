public import H264Codec
public import H264Container
public import MediaCore
public import MediaIO
import SystemIO
import Synchronization

/// Where encoded frames go.
public enum EncodedOutput: Sendable {
    /// An Annex-B stream (`"-"` for standard output), SPS/PPS before every keyframe, as the
    /// x264 CLI writes a `.264` file.
    case annexB(path: String)
    /// A movie through ``MovieWriter``.
    case movie(path: String, options: MovieWriter.Options)

    /// The output a file name implies: `.mp4`/`.m4v` and `.mov` are movies, anything else Annex-B.
    public init(path: String) {
        let lower = path.lowercased()
        if lower.hasSuffix(".mp4") || lower.hasSuffix(".m4v") { self = .movie(path: path, options: .init(fileType: .mp4)) }
        else if lower.hasSuffix(".mov") || lower.hasSuffix(".qt") { self = .movie(path: path, options: .init(fileType: .mov)) }
        else { self = .annexB(path: path) }
    }
}

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
    }

    /// What x264 encodes and how; an Annex-B output turns on `annexB` and `repeatParameterSets`.
    public var settings: EncoderSettings
    /// 1, or 2 (at ``EncoderSettings/rateControl``'s average bit rate).
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
    /// is left at `output` when it fails.
    public func run(reading openReader: () throws(MediaIOError) -> any PictureReader, into output: EncodedOutput,
                    progress: (_ pass: Int, _ pictures: Int, _ bytes: Int) -> Void = { _, _, _ in }) throws(SessionError) -> Summary {
        var settings = self.settings
        if case .annexB = output {
            settings.annexB = true
            settings.repeatParameterSets = true
        }
        let sink = Sink()
        let session = try CompressionSession(configuration: .init(settings: settings, passes: passes), outputHandler: { sink.take($0) })
        // Everything is checked: the output can be created.
        do {
            switch output {
            case .movie(let path, let options): sink.movie = try MovieWriter(path: path, options: options)
            case .annexB(let path): sink.stream = try OutputFile(path: path)
            }
        } catch let error as ContainerError {
            throw .container(error)
        } catch let error as SystemError {
            throw .mediaIO(MediaIOError(.io, "\(error.operation.rawValue): \(error.errno)", path: error.path))
        } catch {
            throw .mediaIO(MediaIOError(.io, "\(error)"))
        }
        var encoded = 0
        var frameDuration = settings.frameRate.frameDuration
        for pass in 1...passes {
            if passes > 1 { try session.beginPass() }
            let reader: any PictureReader
            do { reader = try openReader() } catch { throw .mediaIO(error) }
            frameDuration = reader.frameDuration
            encoded = 0
            while frameLimit.map({ encoded < $0 }) ?? true {
                let picture: PixelBuffer?
                do { picture = try reader.next() } catch { throw .mediaIO(error) }
                guard let picture else { break }
                try session.encode(picture, presentationTime: frameDuration * Int64(encoded))
                encoded += 1
                if let error = sink.error { throw error }
                progress(pass, encoded, sink.bytes)
            }
            if passes > 1 { _ = try session.endPass() }
        }
        if passes == 1 { session.finish() }
        if let error = sink.error { throw error }
        guard encoded > 0 else { throw .mediaIO(MediaIOError(.invalidData, "no pictures to encode; nothing written")) }
        do {
            if let movie = sink.movie { try movie.finish() }
            try sink.stream?.commit()
        } catch let error as ContainerError {
            throw .container(error)
        } catch {
            throw .mediaIO(MediaIOError(.io, "\(error)"))
        }
        return Summary(frames: sink.frames, bytes: sink.bytes, duration: frameDuration * Int64(encoded))
    }
}

/// Where the session's frames go: an Annex-B file or the movie writer. The session is
/// synchronous, so the handler runs on the encoding thread.
private final class Sink: @unchecked Sendable {
    var movie: MovieWriter?
    var stream: OutputFile?
    var error: SessionError?
    var frames = 0
    var bytes = 0

    func take(_ frame: CompressedFrame) {
        guard error == nil else { return }
        frames += 1
        bytes += frame.sampleBuffer.data.count
        do {
            if let movie { try movie.append(frame.sampleBuffer) }
            if let stream {
                do { try frame.sampleBuffer.data.forEachSegment { (raw) throws(SystemError) in try stream.write(raw) } } catch {
                    throw SessionError.mediaIO(MediaIOError(.io, "\(error.operation.rawValue): \(error.errno)", path: error.path))
                }
            }
        } catch let failure as SessionError {
            error = failure
        } catch let failure as ContainerError {
            error = .container(failure)
        } catch {
            self.error = .mediaIO(MediaIOError(.io, "\(error)"))
        }
    }
}
