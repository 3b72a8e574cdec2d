public import H264Bitstream
public import MediaCore

/// Where samples come from, one at a time in decoding order: an Annex-B stream, an ADTS stream,
/// a movie's tracks, a transport stream's, a network receiver. The one source abstraction the
/// remux jobs, the sessions and the network senders read. A source of several tracks gives
/// their samples in the order of their decoding times (as a demuxer does), each carrying its
/// track's ID (``tracks`` describes them).
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
    /// The tracks the samples come from, as far as they are known (a transport stream's once
    /// its tables came; a stream's once its first sample is read).
    var tracks: [TrackDescription] { get }
}

extension SampleSource {
    /// One video track, ``TrackID/first``, once the first sample's description is known (the
    /// sources written before tracks had only their video).
    public var tracks: [TrackDescription] {
        formatDescription.map { [TrackDescription(id: .first, format: .video($0))] } ?? []
    }
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
