import H264Network
public import MediaCore

extension LiveSource {
    /// Samples received and not yet taken by a relay's consumer, at most (past it the oldest
    /// are dropped: a segmenter or a fan-out outpaces any live source by far, so only a stalled
    /// consumer drops).
    public static let relayedSampleLimit = 1024

    /// Receives until the source ends, handing the samples on to `consume` as a sequence (it
    /// runs beside the reception, in its own task, at most ``relayedSampleLimit`` samples
    /// behind), and returns the reception counts. `soundRefusal` as in
    /// ``receive(soundRefusal:_:)``. The first error of either ends both; the sequence ends
    /// when the source does.
    public func relay(soundRefusal: @escaping @Sendable (AudioFormatDescription) -> String? = { _ in nil },
                      to consume: @escaping @Sendable (AsyncStream<SampleBuffer>) async throws -> Void) async throws(StreamingError) -> RTPReceiver.Report {
        let (samples, continuation) = AsyncStream<SampleBuffer>.makeStream(bufferingPolicy: .bufferingNewest(Self.relayedSampleLimit))
        do {
            return try await withThrowingTaskGroup(of: RTPReceiver.Report?.self) { group in
                group.addTask {
                    defer { continuation.finish() }
                    return try await self.receive(soundRefusal: soundRefusal) { continuation.yield($0) }
                }
                group.addTask {
                    try await consume(samples)
                    return nil
                }
                var report: RTPReceiver.Report?
                // The first error (a refused rendition or path, a source that fails) ends both.
                do {
                    for try await result in group where result != nil { report = result }
                } catch {
                    group.cancelAll()
                    throw error
                }
                return report ?? RTPReceiver.Report(session: RTPReceivingSession(), ending: .cancelled, samples: 0)
            }
        } catch let error as StreamingError {
            throw error
        } catch {
            throw .sending(error)
        }
    }
}
