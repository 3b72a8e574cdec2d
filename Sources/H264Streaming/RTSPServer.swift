public import SampleFlow
public import H264Network
import MediaCore
import NIOCore
import NIOSSL
import NIOPosix
import Synchronization
import SystemIO

/// An RTSP server (RFC 2326) on SwiftNIO: serves H.264 at one or more paths to any number of
/// clients, over RTP/AVP on UDP or interleaved in the RTSP connection (RTP/AVP/TCP), as ffmpeg,
/// ffplay, GStreamer and VLC play it; and takes what a publisher pushes (`ANNOUNCE`/`RECORD`)
/// at a path served with ``Media/ingest(_:)``.
///
/// What a path serves (``Media``):
/// - a file, to each client from its start (or from the `Range` its `PLAY` asks), paced by its
///   own `Timebase`; `PAUSE` holds it;
/// - a file looped, as one live stream every client joins at its next sync sample;
/// - an ``RTSPBroadcast`` the application feeds (a compression session's output).
///
/// Every client has its own session, SSRC, sequence numbers and timestamps, sender reports
/// every 5 seconds and a BYE at the end (over UDP, half a second behind its last RTP packets
/// out of the socket: a receiver ends at the BYE and drops what it has not read). The pacing
/// and all the socket work run on SwiftNIO's event loops; a client that reads too slowly (its
/// socket queue past ``Options/clientQueueLimit``) drops to the next sync sample and is
/// counted, so it never holds up the others or grows the server's memory, and one that stops
/// talking (no request, no RTCP) loses its session after ``Options/sessionTimeout`` seconds.
/// Requests are bounded (`RTSPMessageParser`); bad ones are answered with a 4xx and counted.
public final class RTSPServer: Sendable {
    /// How the server runs.
    public struct Options: Sendable {
        /// The address to listen on (loopback unless another is asked for).
        public var host: String
        /// The TCP port (0: any free port; ``run(onListening:)`` says which).
        public var port: Int
        /// When set, every request but `OPTIONS` must authenticate (Digest or Basic).
        public var credentials: RTSPCredentials?
        /// Seconds a session lives without a request or RTCP from its client.
        public var sessionTimeout: Int
        /// Seconds a connection without a session may stay without a request.
        public var idleConnectionTimeout: Int
        /// How files are packetized (broadcasts bring their own).
        public var packetizer: H264Packetizer.Configuration
        /// Files wait for each sample's time (true), or go as fast as the sockets take them
        /// (false): a file played to one client then waits while the client's socket is full,
        /// so a slow client slows its own file and loses nothing; a looped file shared by all
        /// is live, and a client that falls behind skips to the next sync sample.
        public var paced: Bool
        /// The pace of files, when paced: 1 is real time.
        public var rate: Double
        /// The most connections at once; one more is closed at once.
        public var maximumConnections: Int
        /// Bytes that may wait for one client before it skips to the next sync sample: in the
        /// server's queue for its connection, and again in the kernel's send buffer (the
        /// connection's `SO_SNDBUF`).
        public var clientQueueLimit: Int
        /// The transports offered: RTP over UDP, interleaved in TCP, or both.
        public var transports: Set<RTSPTransport.Lower> = [.udp, .tcp]
        /// Serve a file's first AAC track beside its video, as a second medium (RFC 3640,
        /// AAC-hbr, a frame a packet, timed at its sample rate; `trackID=1`), which a client
        /// sets up with the video and plays with it: on by default. Off: the video alone.
        public var carriesAudio = true
        /// When set, only URLs signed with this key are answered (`OPTIONS` aside), 403 to any
        /// other (counted in ``Statistics/errorsAnswered``): a URL signed for
        /// `rtsp://host:port/cam` opens that presentation and its tracks until it expires
        /// (`URLSigningKey.signedURL(_:scope:expires:)`).
        public var accessKey: URLSigningKey?
        /// RTSP over TLS (`rtsps://`) with this certificate and key: the requests and the RTP
        /// interleaved in the TLS connection (a `SETUP` for UDP, which would send the media in
        /// the clear, is answered 461 and a client asks for TCP). nil: plain RTSP.
        public var tls: TLSFiles?
        /// How long a TLS handshake may take before the connection is closed.
        public var tlsHandshakeTimeout: Duration = .seconds(10)

        /// Options: 127.0.0.1:8554, no credentials, a 60-second session timeout.
        public init(host: String = "127.0.0.1", port: Int = 8554, credentials: RTSPCredentials? = nil, sessionTimeout: Int = 60, idleConnectionTimeout: Int = 30,
                    packetizer: H264Packetizer.Configuration = .init(), paced: Bool = true, rate: Double = 1, maximumConnections: Int = 1024,
                    clientQueueLimit: Int = 1 << 20) {
            self.host = host
            self.port = port
            self.credentials = credentials
            self.sessionTimeout = sessionTimeout
            self.idleConnectionTimeout = idleConnectionTimeout
            self.packetizer = packetizer
            self.paced = paced
            self.rate = rate
            self.maximumConnections = maximumConnections
            self.clientQueueLimit = clientQueueLimit
        }
    }

    /// What a path serves.
    public enum Media: Sendable {
        /// A file (anything `MediaSource` reads); `loops`: one live stream, looped, that
        /// clients join; otherwise each client gets it from its start.
        case file(path: String, options: MediaSource.Options = .init(), loops: Bool = false)
        /// A live stream the application feeds.
        case broadcast(RTSPBroadcast)
        /// A path a publisher pushes to (`ANNOUNCE`, `SETUP` with `mode=record`, `RECORD`).
        case ingest(RTSPIngest.Sink)
    }

    /// What the server has done so far.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Connections accepted.
        public var connections = 0
        /// Connections open now.
        public var openConnections = 0
        /// Connections closed at once because ``Options/maximumConnections`` were open.
        public var connectionsRefused = 0
        /// Requests answered.
        public var requests = 0
        /// Requests answered with a 4xx or 5xx (including ones that did not parse).
        public var errorsAnswered = 0
        /// Sessions that played.
        public var sessionsPlayed = 0
        /// Sessions playing now.
        public var sessionsPlaying = 0
        /// Sessions ended for want of a request or RTCP packet.
        public var sessionsTimedOut = 0
        /// RTP packets sent, all clients.
        public var packetsSent = 0
        /// Access units clients did not get because they fell behind, all clients: each one a
        /// client's socket could not take, and every one it skipped after it up to the next
        /// sync sample. (A file played unpaced to one client waits for its socket instead, and
        /// drops none.)
        public var accessUnitsDroppedBehind = 0
        /// Times a client fell behind and skipped to the next sync sample.
        public var clientsFellBehind = 0
        /// Datagrams on the server's ports from no known client.
        public var strayDatagrams = 0
        /// Picture loss indications received from clients.
        public var pictureLossIndications = 0
        /// TLS handshakes completed (``Options/tls``).
        public var tlsHandshakes = 0
        /// TLS handshakes that failed (a client that does not trust the certificate, a client
        /// that speaks plain RTSP to the TLS port, a connection closed halfway).
        public var tlsHandshakesFailed = 0
        /// TLS handshakes that did not end within ``Options/tlsHandshakeTimeout``.
        public var tlsHandshakesTimedOut = 0
    }

    /// How the server runs.
    public let options: Options
    let core: ServerCore

    /// A server with `options`; ``serve(_:at:)`` gives it paths, ``run(onListening:)`` runs it.
    public init(options: Options = Options()) throws(StreamingError) {
        guard (0...65535).contains(options.port) else { throw .invalidOption("port \(options.port): 0-65535") }
        guard options.sessionTimeout > 0, options.idleConnectionTimeout > 0, options.maximumConnections > 0, options.clientQueueLimit >= 4096 else {
            throw .invalidOption("RTSP server options: timeouts and the connection limit above 0, a client queue of at least 4096 bytes")
        }
        guard options.rate > 0, options.rate.isFinite else { throw .invalidOption("a pace of \(options.rate) times real time: more than 0") }
        _ = try StreamingError.network { () throws(NetworkError) in try H264Packetizer(configuration: options.packetizer) }
        guard options.tlsHandshakeTimeout > .zero else { throw .invalidOption("a TLS handshake timeout above 0") }
        if options.tls != nil, !options.transports.contains(.tcp) {
            throw .invalidOption("RTSP over TLS carries RTP interleaved in the connection: offer TCP")
        }
        self.options = options
        core = ServerCore(options: options, tls: try options.tls.map(TLSContextStore.init(files:)))
    }

    /// Reads the certificate and key files again (``Options/tls``): connections made from now
    /// on get the new certificate, open ones keep theirs. On an error the certificate in use
    /// stays and the error says why.
    public func reloadCertificate() throws(StreamingError) {
        guard let tls = core.tls else { throw .invalidOption("the RTSP server has no certificate to reload (not rtsps://)") }
        try tls.reload()
    }

    /// Serves `media` at `path` (`/live`); a file is opened now, for its description. Paths
    /// may be added while the server runs.
    public func serve(_ media: Media, at path: String) throws(StreamingError) {
        let path = RTSPServerConnection.normalizedPath(path)
        let mount: Mount
        switch media {
        case .file(let file, var sourceOptions, let loops):
            // The first AAC or G.711 track goes beside the video (the tracks read widened to it).
            var audioTrack: TrackDescription?
            if options.carriesAudio, sourceOptions.tracks == .firstVideo, sourceOptions.trackID == nil {
                let tracks = try StreamedTracks(path: file, options: sourceOptions, sound: .aacOrG711)
                audioTrack = tracks.audio
                sourceOptions = tracks.sourceOptions(sourceOptions)
            }
            var reader = LoopingSampleReader(path: file, options: sourceOptions, loops: false)
            var first: SampleBuffer?
            do {
                while let sample = try reader.next() {
                    if sample.videoFormatDescription != nil { first = sample; break }
                }
            } catch { throw .source(error) }
            guard let first else { throw .source(.noSamples(input: file, reason: "no H.264 samples to serve")) }
            let format = H264PayloadFormat(formatDescription: try first.requireVideo(input: file), payloadType: options.packetizer.payloadType,
                                           packetizationMode: options.packetizer.packetizationMode, control: "trackID=0")
            var audio: (format: AudioPayloadFormat, fanOut: RTPFanOut.Audio)?
            if let audioTrack {
                let payloadType: UInt8 = options.packetizer.payloadType == 97 ? 98 : 97
                let packetizer = AACPacketizer.Configuration(maximumPacketSize: options.packetizer.maximumPacketSize, payloadType: payloadType)
                // (Made now: a setting the packetizer refuses is an error here, not a PLAY
                // answered with nothing sent.)
                let medium = try RTPFanOut.Audio(sound: audioTrack, configuration: packetizer)
                audio = (medium.payloadFormat, medium)
            }
            if loops {
                let fanOut = try RTPFanOut(configuration: options.packetizer, audio: audio?.fanOut)
                mount = Mount(path: path, kind: .shared(fanOut, file: (file, sourceOptions)), format: format, audio: audio?.format)
            } else {
                mount = Mount(path: path, kind: .perClient(file: file, options: sourceOptions, audio: audio?.fanOut), format: format, audio: audio?.format)
            }
        case .broadcast(let broadcast):
            let format = H264PayloadFormat(formatDescription: broadcast.formatDescription, payloadType: broadcast.packetizer.payloadType,
                                           packetizationMode: broadcast.packetizer.packetizationMode, control: "trackID=0")
            mount = Mount(path: path, kind: .shared(broadcast.fanOut, file: nil), format: format, audio: broadcast.soundPayloadFormat)
        case .ingest(let sink):
            mount = Mount(path: path, kind: .ingest(sink), format: nil)
        }
        core.mounts.withLock { $0[path] = mount }
        if core.running.load(ordering: .acquiring) { core.startShared(mount) }
    }

    /// What the server has done so far.
    public var statistics: Statistics { core.statistics }

    /// Listens, and serves until the task is cancelled; `onListening` gets the TCP port once
    /// the server listens (the one asked for, or the one the system chose for port 0).
    public func run(onListening: @Sendable (Int) -> Void = { _ in }) async throws(StreamingError) {
        try await core.run(onListening: onListening)
    }
}

/// A path's media as the server holds it.
final class Mount: Sendable {
    enum Kind: Sendable {
        case perClient(file: String, options: MediaSource.Options, audio: RTPFanOut.Audio?)
        case shared(RTPFanOut, file: (path: String, options: MediaSource.Options)?)
        case ingest(RTSPIngest.Sink)
    }

    let path: String
    let kind: Kind
    let format: H264PayloadFormat?
    /// The audio medium served beside the video, if any.
    let audio: AudioPayloadFormat?
    let player = Locked<PacedFilePlayer?>(nil)

    init(path: String, kind: Kind, format: H264PayloadFormat?, audio: AudioPayloadFormat? = nil) {
        self.path = path
        self.kind = kind
        self.format = format
        self.audio = audio
    }

    var resource: RTSPServerConnection.Resource {
        if case .ingest = kind { return .recordable }
        guard let format else { return .recordable }  // (every mount but an ingest has one)
        if let audio { return .playableMedia([.h264(format), RTPPayloadFormat(sending: audio)]) }
        return .playable(format)
    }

    func requestKeyframe() {
        if case .shared(let fanOut, _) = kind { fanOut.requestKeyframe() }
    }
}

/// Where a datagram on the server's UDP ports goes: a playing client's RTCP, or a publisher.
enum UDPRoute: Sendable {
    case player(RTPSubscriber, Mount)
    case publisher(RTSPIngest.Sink, sessionID: String, isAudio: Bool)
}

/// The server's shared state: its paths, its UDP ports, the routes of their datagrams, the counts.
final class ServerCore: Sendable {
    let options: RTSPServer.Options
    let mounts = Locked<[String: Mount]>([:])
    let routes = Locked<[String: UDPRoute]>([:])
    let counts = Locked(RTSPServer.Statistics())
    let running = Atomic<Bool>(false)
    let udp = Locked<(rtp: any Channel, rtcp: any Channel)?>(nil)
    let connections = Locked<[ObjectIdentifier: any Channel]>([:])
    let group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    let authenticator: RTSPAuthenticator?
    /// The certificate of RTSP over TLS, if served.
    let tls: TLSContextStore?

    init(options: RTSPServer.Options, tls: TLSContextStore?) {
        self.options = options
        self.tls = tls
        authenticator = options.credentials.map { RTSPAuthenticator(credentials: $0) }
    }

    /// The transports a connection offers: over TLS, only RTP interleaved in it.
    var transports: Set<RTSPTransport.Lower> { tls == nil ? options.transports : [.tcp] }

    let subscribers = Locked<[String: RTPSubscriber]>([:])

    /// The counts, with the packets of the sessions still playing.
    var statistics: RTSPServer.Statistics {
        var statistics = counts.withLock { $0 }
        for subscriber in subscribers.withLock({ Array($0.values) }) {
            let playing = subscriber.counts
            statistics.packetsSent += playing.packets
            statistics.accessUnitsDroppedBehind += playing.droppedBehind
            statistics.clientsFellBehind += playing.fellBehind
        }
        return statistics
    }

    /// A client started playing (a subscriber for each medium of its session).
    func subscribed(_ session: [RTPSubscriber]) {
        subscribers.withLock { for subscriber in session { $0[subscriber.id] = subscriber } }
        counts.withLock {
            $0.sessionsPlayed += 1
            $0.sessionsPlaying += 1
        }
    }

    /// A client's session ended: its counts join the totals.
    func unsubscribed(_ session: [RTPSubscriber], timedOut: Bool) {
        let removed = subscribers.withLock { all in session.filter { all.removeValue(forKey: $0.id) != nil } }
        guard !removed.isEmpty else { return }
        counts.withLock {
            $0.sessionsPlaying -= 1
            for subscriber in removed {
                let final = subscriber.counts
                $0.packetsSent += final.packets
                $0.accessUnitsDroppedBehind += final.droppedBehind
                $0.clientsFellBehind += final.fellBehind
            }
            if timedOut { $0.sessionsTimedOut += 1 }
        }
    }

    func mount(for path: String) -> Mount? { mounts.withLock { $0[path] } }

    /// Route keys: `address:port`.
    static func key(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        return "\(ip):\(port)"
    }

    func run(onListening: @Sendable (Int) -> Void) async throws(StreamingError) {
        let (rtp, rtcp) = try await bindUDPPair()
        udp.withLock { $0 = (rtp, rtcp) }
        let server: any Channel
        do {
            let core = self
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 1024)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: options.clientQueueLimit / 2, high: options.clientQueueLimit))
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .childChannelOption(.socketOption(.so_sndbuf), value: .init(options.clientQueueLimit))
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls = core.tls {
                            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context))
                            try channel.pipeline.syncOperations.addHandler(TLSHandshakeWatch(timeout: TimeAmount(core.options.tlsHandshakeTimeout)) { outcome in
                                core.counts.withLock { counts in
                                    switch outcome {
                                    case .completed: counts.tlsHandshakes += 1
                                    case .failed: counts.tlsHandshakesFailed += 1
                                    case .timedOut: counts.tlsHandshakesTimedOut += 1
                                    }
                                }
                            })
                        }
                        try channel.pipeline.syncOperations.addHandler(RTSPConnectionHandler(core: core))
                    }
                }
                .bind(host: options.host, port: options.port).get()
        } catch {
            rtp.close(promise: nil)
            rtcp.close(promise: nil)
            throw .socket("listening on \(options.host):\(options.port)", underlying: error)
        }
        running.store(true, ordering: .releasing)
        for mount in mounts.withLock({ Array($0.values) }) { startShared(mount) }
        onListening(server.localAddress?.port ?? options.port)
        await withTaskCancellationHandler {
            try? await server.closeFuture.get()
        } onCancel: {
            server.close(promise: nil)
        }
        running.store(false, ordering: .releasing)
        for mount in mounts.withLock({ Array($0.values) }) {
            mount.player.withLock { $0 }?.stop()
        }
        for connection in connections.withLock({ Array($0.values) }) { try? await connection.close() }
        try? await rtp.close()
        try? await rtcp.close()
    }

    /// Starts the player of a looped file (once).
    func startShared(_ mount: Mount) {
        guard case .shared(let fanOut, let file?) = mount.kind else { return }
        let player: PacedFilePlayer? = mount.player.withLock { player in
            guard player == nil else { return nil }
            player = PacedFilePlayer(reader: LoopingSampleReader(path: file.path, options: file.options, loops: true), fanOut: fanOut,
                                     loop: group.next(), paced: options.paced, rate: options.rate, onEnd: { _ in })
            return player
        }
        player?.start()
    }

    /// The server's RTP and RTCP ports: an even port and the next (RFC 3550 §11).
    private func bindUDPPair() async throws(StreamingError) -> (any Channel, any Channel) {
        var lastError: (any Error)?
        for _ in 0..<32 {
            do {
                let rtp = try await datagramBootstrap(control: false).bind(host: options.host, port: 0).get()
                guard let port = rtp.localAddress?.port, port % 2 == 0, port < 65535 else {
                    try? await rtp.close()
                    continue
                }
                do {
                    let rtcp = try await datagramBootstrap(control: true).bind(host: options.host, port: port + 1).get()
                    return (rtp, rtcp)
                } catch {
                    lastError = error
                    try? await rtp.close()
                }
            } catch {
                lastError = error
            }
        }
        throw .socket("binding an RTP/RTCP port pair on \(options.host)" + (lastError == nil ? ": no even port free" : ""), underlying: lastError)
    }

    private func datagramBootstrap(control: Bool) -> DatagramBootstrap {
        let core = self
        // An ephemeral pair: no SO_REUSEADDR (it lets a port be shared with another such socket).
        return DatagramBootstrap(group: group)
            .readingWholeDatagrams(8)
            .channelOption(.writeBufferWaterMark, value: .init(low: 4 << 20, high: 8 << 20))
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            // A publisher's burst (ffmpeg holds its video back until its sound begins, then
            // sends seconds of it at once) waits here rather than being dropped by the kernel.
            .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ServerDatagramHandler(core: core, isControl: control))
                }
            }
    }

    /// A datagram on the server's RTP (`isControl` false) or RTCP port.
    func received(_ bytes: [UInt8], from address: SocketAddress, isControl: Bool) {
        guard let key = Self.key(address), let route = routes.withLock({ $0[key] }) else {
            counts.withLock { $0.strayDatagrams += 1 }
            return
        }
        switch route {
        case .player(let subscriber, let mount):
            guard isControl else { return }
            subscriber.touch()
            let packets = bytes.withUnsafeBytes { try? RTCPPacket.parse(compound: $0) } ?? []
            if subscriber.medium == .video, packets.contains(where: { if case .pictureLossIndication = $0 { true } else { false } }) {
                counts.withLock { $0.pictureLossIndications += 1 }
                mount.requestKeyframe()
            }
        case .publisher(let sink, let id, let isAudio):
            if isControl { sink.receiveRTCP(bytes, session: id, isAudio: isAudio) } else { sink.receiveRTP(bytes, session: id, isAudio: isAudio) }
        }
    }
}

/// Reads the server's UDP ports.
final class ServerDatagramHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let core: ServerCore
    let isControl: Bool

    init(core: ServerCore, isControl: Bool) {
        self.core = core
        self.isControl = isControl
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        core.received(Array(envelope.data.readableBytesView), from: envelope.remoteAddress, isControl: isControl)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP port unreachable from a client that went away: the others go on.
    }
}
