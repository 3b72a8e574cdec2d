public import H264Network
public import MediaCore
public import SampleFlow

extension H264PayloadFormat {
    /// The payload format that sending the file at `path` (anything `MediaSource` reads)
    /// announces: its first sample's parameter sets, profile and level (`h264kit sdp`).
    public init(firstSampleOf path: String, options: MediaSource.Options = .decoding, payloadType: UInt8 = 96,
                packetizationMode: Int = 1) throws(StreamingError) {
        let sample: SampleBuffer?
        do { sample = try MediaSource(path: path, options: options).next() } catch { throw .source(error) }
        guard let sample else { throw .source(.noSamples(input: path, reason: "no samples")) }
        self.init(formatDescription: try sample.requireVideo(input: path), payloadType: payloadType, packetizationMode: packetizationMode)
    }

    /// The payload format of the first sample `samples` gives (for pictures encoded live,
    /// one picture is encoded for its parameter sets).
    public init<Samples: AsyncSequence>(firstSampleOf samples: Samples, payloadType: UInt8 = 96, packetizationMode: Int = 1) async throws(StreamingError)
    where Samples.Element == SampleBuffer {
        var iterator = samples.makeAsyncIterator()
        let first: SampleBuffer?
        do { first = try await iterator.next() } catch { throw .sending(error) }
        guard let first else { throw .source(.noSamples(input: "the samples", reason: "no samples")) }
        self.init(formatDescription: try first.requireVideo(input: "the samples"), payloadType: payloadType, packetizationMode: packetizationMode)
    }
}
