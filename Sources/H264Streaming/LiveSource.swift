public import SampleFlow
public import H264Network
public import MediaCore
import SystemIO

/// Where live H.264 comes from, named as ffmpeg's `-i` and `h264kit receive` name it:
/// `rtsp://[USER:PASS@]HOST:PORT/PATH` (a stream to play, or with `listen` a path to serve
/// for a publisher), `rtp://@:PORT` or `rtp://HOST:PORT` (RTP to receive, parameter sets in
/// band), or a session description file (`.sdp`, as `ffmpeg -sdp_file` or `h264kit sdp`
/// writes it).
public enum LiveSource: Sendable {
    /// RTP over UDP, received.
    case rtp(RTPReceiver)
    /// An RTSP stream, played.
    case rtsp(RTSPClient)
    /// An RTSP path served for a publisher (ANNOUNCE, RECORD), recorded.
    case publisher(RTSPIngest)

    /// Whether `name` names a live source (an `rtp://` or `rtsp://` URL, a `.sdp` file)
    /// rather than a media file.
    public static func isLive(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.hasPrefix("rtp://") || RTSPURL.hasScheme(name) || lower.hasSuffix(".sdp")
    }

    /// The source `name` names, receiving with `options`: an RTSP client prefers `transport`,
    /// and with `audio` receives the stream's AAC or G.711 sound beside its picture (an RTSP
    /// stream's, a session description's; track 2, in lip
    /// sync; a consumer of pictures alone leaves it off, and the report names the sound not
    /// received); with `listen`, an `rtsp://` path is served for a publisher, who must give
    /// `credentials` when set. An `rtsps://` stream is played over TLS, its certificate checked
    /// by `trust`. A session description file is read (at most
    /// `SessionDescription.maximumSize` bytes); anything else is an error.
    public init(parsing name: String, options: RTPReceiver.Options = .init(), transport: RTSPClient.TransportPreference = .automatic,
                listen: Bool = false, credentials: RTSPCredentials? = nil, audio: Bool = false, trust: TLSTrust = .system) throws(StreamingError) {
        let lower = name.lowercased()
        if listen, lower.hasPrefix("rtsps://") {
            throw .invalidOption("\(name): serving for a publisher is over plain rtsp:// (RTSP over TLS is for playing)")
        }
        if listen || credentials != nil, !lower.hasPrefix("rtsp://") {
            throw .invalidOption("\(name): serving for a publisher (and its credentials) is for an rtsp:// path")
        }
        if credentials != nil, !listen {
            throw .invalidOption("\(name): credentials are what a publisher must give; a client gives its own in the URL (rtsp://USER:PASS@HOST/PATH)")
        }
        if RTSPURL.hasScheme(name) {
            let url = try StreamingError.network { () throws(NetworkError) in try RTSPURL(parsing: name) }
            self = listen ? .publisher(RTSPIngest(url: url, credentials: credentials, options: options, recordsAudio: audio))
                : .rtsp(RTSPClient(url: url, options: { () -> RTSPClient.Options in
                    var client = RTSPClient.Options(receiver: options, transport: transport)
                    client.receivesAudio = audio
                    client.trust = trust
                    return client
                }()))
        } else if lower.hasPrefix("rtp://") {
            self = .rtp(RTPReceiver(endpoint: try StreamingError.network { () throws(NetworkError) in try RTPDestination(parsing: name) }, options: options))
        } else {
            let bytes: [UInt8]
            do { bytes = try filePrefix(name, count: SessionDescription.maximumSize + 1) } catch { throw .source(.file(error)) }
            guard bytes.count <= SessionDescription.maximumSize else {
                throw .network(NetworkError(.tooLarge, "\(name): over \(SessionDescription.maximumSize) bytes; a session description is at most that"))
            }
            let description = try StreamingError.network { () throws(NetworkError) in try SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) }
            self = .rtp(try RTPReceiver(sessionDescription: description, options: options, receivesAudio: audio))
        }
    }

    /// The same source receiving with `change` made to its options (low latency for a
    /// display, say).
    public func withReceiverOptions(_ change: (inout RTPReceiver.Options) -> Void) -> LiveSource {
        switch self {
        case .rtp(let receiver):
            var options = receiver.options
            change(&options)
            return .rtp(receiver.with(options: options))
        case .rtsp(let client):
            var options = client.options
            change(&options.receiver)
            return .rtsp(RTSPClient(url: client.url, options: options))
        case .publisher(var ingest):
            change(&ingest.options)
            return .publisher(ingest)
        }
    }

    /// Receives until the source ends (as ``record(to:)``), handing each sample to `handle` in
    /// decoding order. `soundRefusal` says why the caller cannot take sound of a format (nil:
    /// it can): such sound is not received, and the report names it.
    public func receive(soundRefusal: @escaping @Sendable (AudioFormatDescription) -> String? = { _ in nil },
                        _ handle: (SampleBuffer) throws -> Void) async throws(StreamingError) -> RTPReceiver.Report {
        switch self {
        case .rtp(let receiver): try await receiver.receive(soundRefusal: soundRefusal, handle)
        case .rtsp(let client): try await client.receive(soundRefusal: soundRefusal, handle)
        case .publisher(let ingest): try await ingest.receive(soundRefusal: soundRefusal, handle)
        }
    }

    /// Whether the source receives sound beside the picture (when the stream has any): made
    /// with `audio`, or a session description with a sound medium taken.
    public var receivesAudio: Bool {
        switch self {
        case .rtp(let receiver): receiver.audio != nil
        case .rtsp(let client): client.options.receivesAudio
        case .publisher(let ingest): ingest.recordsAudio
        }
    }

    /// The track a source's sound comes as (`RTPAudioReceivingSession`'s default).
    public static let soundTrackID = TrackID(rawValue: 2)

    /// Receives until the source ends (a BYE, a TEARDOWN, the sample limit, the idle timeout,
    /// or the task's cancellation) into `output`, which is finished in every case.
    public func record(to output: SampleOutput) async throws(StreamingError) -> RTPReceiver.Report {
        switch self {
        case .rtp(let receiver): try await receiver.record(to: output)
        case .rtsp(let client): try await client.record(to: output)
        case .publisher(let ingest): try await ingest.record(to: output)
        }
    }
}
