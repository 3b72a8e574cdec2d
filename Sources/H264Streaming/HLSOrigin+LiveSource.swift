import H264Network
import MediaCore

extension HLSOrigin {
    /// Samples received and not yet taken by the segmenter, at most (``LiveSource/relayedSampleLimit``).
    public static let relayedSampleLimit = LiveSource.relayedSampleLimit

    /// Publishes what `source` receives (a camera's RTSP stream, RTP, a session description,
    /// a publisher pushing to an RTSP path) as `rendition`, as it arrives, until the source
    /// ends (the playlist then gets `EXT-X-ENDLIST`) or the task is cancelled; returns the
    /// source's reception counts. See ``publish(_:paced:rendition:sound:)`` for renditions.
    /// A source that receives sound (``LiveSource/receivesAudio``) has its AAC sound published
    /// beside the picture, placed by the sender's reports; sound of another codec (G.711) is
    /// not received, and the report names it.
    public func publish(_ source: LiveSource, rendition: String = "video") async throws(StreamingError) -> RTPReceiver.Report {
        let sound: (id: TrackID, language: String?)? = source.receivesAudio ? (LiveSource.soundTrackID, nil) : nil
        return try await source.relay(soundRefusal: { $0.isAAC ? nil : "HLS and DASH carry AAC sound" }) { samples in
            try await self.publish(samples, paced: false, rendition: rendition, sounds: sound.map { [$0] } ?? [])
        }
    }
}
