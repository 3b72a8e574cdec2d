import ISOBMFF
public import MPEGTS
public import MediaCore

/// Samples into an MPEG-2 transport stream, through `TransportStreamWriter`: a file, standard
/// output or a pipe (`"-"`), 188-byte packets or M2TS.
public final class TransportStreamSink: SampleSink {
    /// The stream's path ("-": standard output).
    public let path: String
    /// The writer underneath.
    public let writer: TransportStreamWriter
    private var bytes = 0

    /// Creates the stream at `path` with `options`.
    public init(path: String, options: TransportStreamWriter.Options = .init()) throws(SampleFlowError) {
        self.path = path
        do { writer = try TransportStreamWriter(path: path, options: options) } catch { throw .container(error) }
    }

    /// Declares the tracks to the muxer: the first PMT names them all, in this order.
    public func prepare(_ tracks: [TrackDescription]) throws(SampleFlowError) {
        for track in tracks {
            do { try writer.addStream(for: track) } catch { throw .container(error) }
        }
    }

    /// Appends the sample (an H.264 picture as a PES packet; AAC frames gathered into one).
    public func append(_ sample: SampleBuffer) throws(SampleFlowError) {
        do { try writer.append(sample) } catch { throw .sample(index: writer.sampleCount, decodeTime: sample.decodeTime, underlying: .container(error)) }
        bytes += sample.size
    }

    /// Writes the last packets and puts the stream in place.
    public func finish() throws(SampleFlowError) -> SampleSinkSummary {
        do {
            let summary = try writer.finish()
            return SampleSinkSummary(samples: summary.sampleCount, bytes: bytes, transportStream: summary)
        } catch {
            throw .container(error)
        }
    }

    /// Removes what was written.
    public func cancel() { writer.cancel() }
}
