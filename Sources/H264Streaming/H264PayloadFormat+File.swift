public import H264Network
public import H264Session
public import MediaCore

extension H264PayloadFormat {
    /// The payload format that sending the file at `path` (anything `MediaSource` reads)
    /// announces: its first sample's parameter sets, profile and level (`h264kit sdp`).
    public init(firstSampleOf path: String, options: MediaSource.Options = .decoding, payloadType: UInt8 = 96,
                packetizationMode: Int = 1) throws(NetworkError) {
        do {
            guard let sample = try MediaSource(path: path, options: options).next() else { throw NetworkError(.source, "\(path): no samples") }
            self.init(formatDescription: sample.formatDescription, payloadType: payloadType, packetizationMode: packetizationMode)
        } catch let error as NetworkError {
            throw error
        } catch {
            throw NetworkError(.source, "\(path): \(error)")
        }
    }

    /// The payload format of the first sample `samples` gives (for pictures encoded live,
    /// one picture is encoded for its parameter sets).
    public init<Samples: AsyncSequence>(firstSampleOf samples: Samples, payloadType: UInt8 = 96, packetizationMode: Int = 1) async throws(NetworkError)
    where Samples.Element == SampleBuffer {
        var iterator = samples.makeAsyncIterator()
        let first: SampleBuffer?
        do { first = try await iterator.next() } catch { throw NetworkError(.source, "the first sample: \(error)") }
        guard let first else { throw NetworkError(.source, "no samples") }
        self.init(formatDescription: first.formatDescription, payloadType: payloadType, packetizationMode: packetizationMode)
    }
}
