public import H264Bitstream
public import MediaCore

/// Where samples come from, one at a time in decoding order: an Annex-B stream, a movie's H.264
/// track, a transport stream, a network receiver. The one source abstraction the remux jobs,
/// the sessions and the network senders read.
///
/// A source is read by one caller at a time (it is not `Sendable`); ``next()`` blocks while the
/// input is slow (a pipe), so an async caller reads it off the cooperative pool.
public protocol SampleSource: AnyObject {
    /// The input's name in messages ("stdin" for standard input).
    var name: String { get }
    /// The next sample in decoding order, or nil at the end.
    func next() throws(SampleFlowError) -> SampleBuffer?
    /// The first sample's format description, once read.
    var formatDescription: VideoFormatDescription? { get }
    /// The rate the samples are timed at, once known: a stream's VUI timing (or the given or
    /// assumed rate), a movie track's first sample duration as a rate.
    var frameRate: FrameRate? { get }
    /// How far reading has come, for progress: bytes (or samples) read, of how many when known.
    var progress: (read: Int, total: Int?) { get }
    /// Problems that did not stop reading, as sentences.
    var warnings: [String] { get }
}

extension SampleSource {
    /// Every remaining sample, read to the end (for small inputs and tests; a long input is
    /// better read sample by sample).
    public func readAll() throws(SampleFlowError) -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        while let sample = try next() { samples.append(sample) }
        return samples
    }
}
