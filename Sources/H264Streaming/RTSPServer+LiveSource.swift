import H264Network
import MediaCore
import SystemIO

extension RTSPServer {
    /// The most samples held while a relay waits for its source's first picture and sound.
    public static let relayHeldLimit = 1024

    /// Seconds of media a relay waits for its source's sound before it serves the picture
    /// alone: the sound is held until both media's sender reports place it (up to
    /// `RTPLipSync.reportWait`, 6 s; a camera's first report may come seconds in), and a
    /// second more.
    public static let relaySoundWait = 7.0

    /// Relays what `source` receives (a camera's RTSP stream, RTP, a publisher) at `path` as
    /// one stream every client joins at its next sync sample, and runs the server until the
    /// source ends (every client then gets an RTCP BYE, and the server stops half a second
    /// later) or the task is cancelled; returns the source's reception counts. `onListening`
    /// gets the TCP port once the server listens.
    ///
    /// The first picture gives the stream's description; a source that receives sound
    /// (``LiveSource/receivesAudio``) has its AAC or G.711 sound relayed as a second medium (placed by
    /// its sender's reports, and sent with reports of both media for one instant), its format
    /// from its first frame: the samples are held (at most ``relayHeldLimit``, or
    /// ``relaySoundWait`` seconds of media) until both have come. Sound of another codec is not received, and the report
    /// names it; a client's picture loss indication is not passed on to the source.
    public func run(relaying source: LiveSource, at path: String, onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws(StreamingError)
        -> RTPReceiver.Report {
        let sound = source.receivesAudio
        return try await source.relay(soundRefusal: { AudioPacketizer.sends($0) ? nil : "an RTSP relay carries AAC and G.711 sound" }) { samples in
            try await self.relay(samples, at: path, sound: sound, onListening: onListening)
        }
    }

    /// Serves `samples` as a broadcast once its picture (and, with `sound`, its sound) is known.
    private func relay(_ samples: AsyncStream<SampleBuffer>, at path: String, sound: Bool, onListening: @escaping @Sendable (Int) -> Void) async throws {
        var held: [SampleBuffer] = []
        var broadcast: RTSPBroadcast?
        var serving: Task<Void, any Error>?
        defer { serving?.cancel() }
        func start() throws(StreamingError) {
            guard let picture = held.first(where: { $0.videoFormatDescription != nil })?.videoFormatDescription else {
                held.removeAll { $0.videoFormatDescription == nil }  // (no picture yet: the sound cannot wait for ever)
                return
            }
            let frame = held.first { $0.audioFormatDescription.map(AudioPacketizer.sends) == true }
            let stream = try RTSPBroadcast(formatDescription: picture, packetizer: options.packetizer,
                                           sound: frame.map { TrackDescription(id: $0.trackID, format: $0.formatDescription) })
            try serve(.broadcast(stream), at: path)
            serving = Task { try await self.run(onListening: onListening) }
            broadcast = stream
            for sample in held { try stream.send(sample) }
            held = []
        }
        for await sample in samples {
            if Task.isCancelled { break }
            if let broadcast {
                try broadcast.send(sample)
                continue
            }
            held.append(sample)
            let hasPicture = held.contains { $0.videoFormatDescription != nil }, hasSound = held.contains { $0.audioFormatDescription != nil }
            let span = held.last!.decodeTime - held.first!.decodeTime
            if hasPicture && (!sound || hasSound || held.count >= Self.relayHeldLimit || (span.isNumeric && span.seconds >= Self.relaySoundWait)) {
                try start()
            } else if held.count >= Self.relayHeldLimit {
                held.removeFirst()
            }
        }
        guard let broadcast else { return }
        broadcast.finish()
        try await Task.sleep(for: .milliseconds(500))  // the BYEs out
    }
}
