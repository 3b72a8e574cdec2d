public import ISOBMFF
public import MPEGTS
public import MediaCore
import SystemIO

/// Where samples go, one at a time in decoding order: a movie, an Annex-B stream, a transport
/// stream, a segmenter. The one sink protocol the remux jobs, the encoders and the network
/// receivers write through.
///
/// Nothing is visible at the output until ``finish()`` (a file is written under a temporary
/// name and renamed into place; standard output and devices are written as samples come), and
/// ``cancel()`` (or letting go of an unfinished sink) leaves nothing. A sink is used by one
/// caller at a time.
public protocol SampleSink: AnyObject {
    /// The output's name in messages ("-" for standard output).
    var path: String { get }
    /// Takes the next sample, in decoding order.
    func append(_ sample: SampleBuffer) throws(SampleFlowError)
    /// Completes the output, once; returns what was written.
    func finish() throws(SampleFlowError) -> SampleSinkSummary
    /// Gives up: whatever was written is removed. Harmless after ``finish()``.
    func cancel()
    /// Declares the tracks to come before the first sample (their languages; a transport
    /// stream's first PMT names them all). A sink of one stream ignores it.
    func prepare(_ tracks: [TrackDescription]) throws(SampleFlowError)
}

extension SampleSink {
    /// Nothing to declare.
    public func prepare(_ tracks: [TrackDescription]) throws(SampleFlowError) {}
}

/// What a sink wrote.
public struct SampleSinkSummary: Sendable, Hashable {
    /// Samples written.
    public var samples: Int
    /// Bytes of sample data written (for a movie, without its boxes).
    public var bytes: Int
    /// The movie writer's account, for a movie.
    public var movie: MovieWriter.Summary?
    /// The transport stream writer's account, for a transport stream.
    public var transportStream: TransportStreamWriter.Summary?

    /// A summary of `samples` samples of `bytes` bytes.
    public init(samples: Int, bytes: Int, movie: MovieWriter.Summary? = nil, transportStream: TransportStreamWriter.Summary? = nil) {
        self.samples = samples
        self.bytes = bytes
        self.movie = movie
        self.transportStream = transportStream
    }
}

/// Samples into an MP4 or MOV file, through `MovieWriter`.
public final class MovieSink: SampleSink {
    /// The movie's path ("-": standard output, fragmented layouts only).
    public let path: String
    /// The writer underneath.
    public let writer: MovieWriter
    private var samples = 0
    private var bytes = 0

    /// Creates the movie at `path` with `options`.
    public init(path: String, options: MovieWriter.Options = .init()) throws(SampleFlowError) {
        self.path = path
        do { writer = try MovieWriter(path: path, options: options) } catch { throw .container(error) }
    }

    /// Declares the tracks (their languages, in this order) to the writer.
    public func prepare(_ tracks: [TrackDescription]) throws(SampleFlowError) {
        for track in tracks {
            do { try writer.addTrack(track) } catch { throw .container(error) }
        }
    }

    /// Appends the sample to the movie.
    public func append(_ sample: SampleBuffer) throws(SampleFlowError) {
        do { try writer.append(sample) } catch { throw .sample(index: samples, decodeTime: sample.decodeTime, underlying: .container(error)) }
        samples += 1
        bytes += sample.size
    }

    /// Writes the index and puts the movie in place.
    public func finish() throws(SampleFlowError) -> SampleSinkSummary {
        do { return SampleSinkSummary(samples: samples, bytes: bytes, movie: try writer.finish()) } catch { throw .container(error) }
    }

    /// Removes what was written.
    public func cancel() { writer.cancel() }
}

/// Samples into an Annex-B elementary stream: start codes before each NAL unit, and the format
/// description's SPS and PPS before every IDR picture that lacks them (what FFmpeg's
/// `h264_mp4toannexb` does), so the stream plays from any IDR picture. Written a megabyte at a
/// time. Samples framed with start codes already (an encoder's Annex-B output) are written as
/// they are, with ``Framing/annexB``.
public final class AnnexBSink: SampleSink {
    /// How the samples given are framed.
    public enum Framing: Sendable, Hashable {
        /// NAL units behind length prefixes, as in a movie (the format description's size).
        case lengthPrefixed
        /// NAL units behind start codes already, parameter sets where they belong: copied.
        case annexB
    }

    /// The stream's path ("-": standard output).
    public let path: String
    /// How the samples given are framed.
    public let framing: Framing
    private var file: OutputFile?
    private var writer = AnnexBWriter()
    private var buffer: [UInt8] = []
    private var samples = 0
    private var bytes = 0
    /// Samples appended so far.
    public var sampleCount: Int { samples }

    /// Bytes gathered before a write.
    static let writeSize = 1 << 20

    /// Creates the stream at `path` ("-": standard output; a device or pipe is written in place).
    public init(path: String, framing: Framing = .lengthPrefixed) throws(SampleFlowError) {
        self.path = path
        self.framing = framing
        do { file = try OutputFile(path: path) } catch { throw .file(error) }
        buffer.reserveCapacity(Self.writeSize * 2)
    }

    /// Appends the sample's NAL units with start codes. An H.264 stream holds video alone: a
    /// sample of another kind is an error.
    public func append(_ sample: SampleBuffer) throws(SampleFlowError) {
        guard let file else { throw .invalidOption("\(path): the stream was finished or cancelled") }
        guard sample.mediaType == .video else {
            throw .sample(index: samples, decodeTime: sample.decodeTime, underlying: .invalidOption("\(path): a \(sample.formatDescription.codecName) sample in an H.264 stream"))
        }
        let before = buffer.count
        switch framing {
        case .lengthPrefixed:
            do { try writer.append(sample, to: &buffer) } catch {
                throw .sample(index: samples, decodeTime: sample.decodeTime, underlying: .bitstream(error, input: path))
            }
        case .annexB:
            sample.data.forEachSegment { buffer.append(contentsOf: $0) }
        }
        samples += 1
        bytes += buffer.count - before
        if buffer.count >= Self.writeSize {
            do { try file.write(buffer) } catch { throw .file(error) }
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// Writes what is gathered and puts the stream in place.
    public func finish() throws(SampleFlowError) -> SampleSinkSummary {
        guard let file else { throw .invalidOption("\(path): the stream was finished or cancelled") }
        self.file = nil
        do {
            try file.write(buffer)
            try file.commit()
        } catch {
            throw .file(error)
        }
        buffer = []
        return SampleSinkSummary(samples: samples, bytes: bytes)
    }

    /// Removes what was written (an unfinished temporary file).
    public func cancel() {
        file?.discard()
        file = nil
    }
}
