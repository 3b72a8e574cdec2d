import H264Network
import MediaCore

extension HLSOrigin {
    /// Samples received and not yet taken by the segmenter, at most (past it the oldest are
    /// dropped: the segmenter outpaces any live source by far, so only a stalled origin drops).
    public static let relayedSampleLimit = 1024

    /// Publishes what `source` receives (a camera's RTSP stream, RTP, a session description,
    /// a publisher pushing to an RTSP path) as `rendition`, as it arrives, until the source
    /// ends (the playlist then gets `EXT-X-ENDLIST`) or the task is cancelled; returns the
    /// source's reception counts. See ``publish(_:paced:rendition:sound:)`` for renditions.
    /// A source that receives sound (``LiveSource/receivesAudio``) has its AAC sound published
    /// beside the picture, placed by the sender's reports; sound of another codec (G.711) is
    /// not received, and the report names it.
    public func publish(_ source: LiveSource, rendition: String = "video") async throws(StreamingError) -> RTPReceiver.Report {
        let (samples, continuation) = AsyncStream<SampleBuffer>.makeStream(bufferingPolicy: .bufferingNewest(Self.relayedSampleLimit))
        do {
            return try await withThrowingTaskGroup(of: RTPReceiver.Report?.self) { group in
                group.addTask {
                    defer { continuation.finish() }
                    return try await source.receive(soundRefusal: { $0.isAAC ? nil : "HLS and DASH carry AAC sound" }) { continuation.yield($0) }
                }
                group.addTask {
                    try await self.publish(samples, paced: false, rendition: rendition, sound: source.receivesAudio ? (LiveSource.soundTrackID, nil) : nil)
                    return nil
                }
                var report: RTPReceiver.Report?
                // The first error (a refused rendition, a source that fails) ends both.
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
