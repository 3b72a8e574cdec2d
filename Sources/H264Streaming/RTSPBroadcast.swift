public import H264Network
public import MediaCore

/// A live stream an application feeds, served by an ``RTSPServer`` to every client that plays
/// its path: the sample buffers of a compression session, a camera, a relay.
///
/// ``send(_:)`` packetizes a sample once and copies it to every playing client, each with its
/// own SSRC, sequence numbers and timestamps; a client that joins starts at the next sync
/// sample (parameter sets first), and one that cannot keep up skips to the next sync sample
/// (counted), so the application is never held up by a client. Pace the samples yourself (a
/// live source is paced by its nature; `LivePictureSamples` is). When a client asks for a
/// picture (its RTCP picture loss indication, or joining), `onKeyframeRequest` is called: an
/// encoder makes its next picture an IDR picture there.
///
/// With a `sound` track, its samples go as a second medium (`trackID=1`; AAC as RFC 3640 with
/// payload type 97, or 98 beside a picture of 97; G.711 as PCMU or PCMA), packetized once,
/// with sender reports of both media for one same instant: send the picture's and the
/// sound's samples interleaved by decoding time, as a file or a live source brings them.
public final class RTSPBroadcast: Sendable {
    /// The stream's format (its parameter sets go in the session description).
    public let formatDescription: VideoFormatDescription
    /// How the samples are packetized (mode, packet size, payload type).
    public let packetizer: H264Packetizer.Configuration
    /// The sound's medium when the broadcast has one of AAC (nil for G.711: see
    /// ``soundPayloadFormat``).
    public var soundFormat: MPEG4GenericPayloadFormat? {
        if case .mpeg4Generic(let format) = soundPayloadFormat { format } else { nil }
    }
    /// The sound's medium, when the broadcast has one: AAC or G.711.
    public let soundPayloadFormat: AudioPayloadFormat?
    let fanOut: RTPFanOut

    /// A broadcast of samples of `formatDescription`, and with `sound` (an AAC or G.711 track;
    /// another is an error naming it) of that track's samples beside them.
    public init(formatDescription: VideoFormatDescription, packetizer: H264Packetizer.Configuration = .init(), sound: TrackDescription? = nil,
                onKeyframeRequest: (@Sendable () -> Void)? = nil) throws(StreamingError) {
        self.formatDescription = formatDescription
        self.packetizer = packetizer
        var audio: RTPFanOut.Audio?
        if let sound {
            guard let description = sound.format.audio, AudioPacketizer.sends(description) else {
                throw .invalidOption("track \(sound.id) (\(sound.format.codecName)): a broadcast's sound is AAC or G.711")
            }
            let payloadType: UInt8 = packetizer.payloadType == 97 ? 98 : 97
            let configuration = AACPacketizer.Configuration(maximumPacketSize: packetizer.maximumPacketSize, payloadType: payloadType)
            let medium = try RTPFanOut.Audio(sound: sound, configuration: configuration)
            audio = medium
            soundPayloadFormat = medium.payloadFormat
        } else {
            soundPayloadFormat = nil
        }
        fanOut = try RTPFanOut(configuration: packetizer, audio: audio, onKeyframeRequest: onKeyframeRequest)
    }

    /// Sends a sample to every playing client (decode order, as a sender paces it); a sample
    /// of a track other than the picture's and the sound's is left out.
    public func send(_ sample: SampleBuffer) throws(StreamingError) {
        try fanOut.deliver(sample)
    }

    /// Sends every sample of `samples` as it comes, then ends the stream (``finish()``), also
    /// when the sequence fails or the task is cancelled; returns how many samples were sent.
    public func send<Samples: AsyncSequence>(contentsOf samples: Samples) async throws(StreamingError) -> Int where Samples.Element == SampleBuffer {
        defer { finish() }
        var sent = 0
        do {
            for try await sample in samples {
                if Task.isCancelled { break }
                try send(sample)
                sent += 1
            }
        } catch is CancellationError {
        } catch {
            throw .sending(error)
        }
        return sent
    }

    /// Ends the stream: every client gets an RTCP BYE, and so does any that plays it later.
    public func finish() {
        fanOut.finish()
    }

    /// Clients playing now, a medium each (a client of the picture and the sound counts twice).
    public var clientCount: Int { fanOut.subscriberCount }
}
