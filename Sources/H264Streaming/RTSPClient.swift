public import SampleFlow
public import H264Network
public import MediaCore
import NIOCore
import NIOSSL
import NIOPosix
import SystemIO

/// Plays an RTSP stream (RFC 2326) and hands on its samples: what `ffmpeg -i rtsp://…` does,
/// as a library call, and what `h264kit receive rtsp://…` records.
///
/// It asks for the stream over UDP first and falls back to RTP interleaved in the RTSP
/// connection (RTP/AVP/TCP) when the server refuses UDP or no packet comes over it within
/// ``Options/udpTimeout`` (a firewall, a NAT), as ffmpeg does. Credentials in the URL answer a
/// 401 (Digest or Basic). While playing it sends keep-alives every half session timeout, RTCP
/// receiver reports, and a picture loss indication when pictures are lost. Receiving ends at
/// the server's RTCP BYE, its closing the connection, ``RTPReceiver/Options/sampleLimit``
/// samples, ``RTPReceiver/Options/idleTimeout`` without a packet, or cancellation; then a
/// `TEARDOWN` goes out, and the samples still held are handed on.
///
/// It plays the description's first H.264 video medium (track 1) and, with
/// ``Options/receivesAudio`` (the default), its first AAC medium (RFC 3640, or RFC 6416 LATM; track 2) in the same
/// session: the sound is placed on the picture's timeline by the sender reports of both
/// (`RTPLipSync`; without reports in time, by the first packets' arrival, and the report says
/// so), and ``RTPReceiver/Report/sound`` tells what came. Other media are not played, and
/// ``RTPReceiver/Report/mediaNotReceived`` names them.
public struct RTSPClient: Sendable {
    /// How the stream is carried.
    public enum TransportPreference: String, Sendable, Hashable, CaseIterable {
        /// UDP, then TCP interleaved when UDP fails.
        case automatic
        /// RTP/AVP over UDP only.
        case udp
        /// RTP/AVP/TCP interleaved only.
        case tcp
    }

    /// How the client plays.
    public struct Options: Sendable, Hashable {
        /// How packets are received (jitter buffer, idle timeout, sample limit).
        public var receiver: RTPReceiver.Options
        /// UDP, TCP, or UDP then TCP.
        public var transport: TransportPreference
        /// With ``TransportPreference/automatic``: how long to wait for the first packet over
        /// UDP before asking for TCP instead.
        public var udpTimeout: Duration
        /// How long to wait for the server's answer to a request.
        public var responseTimeout: Duration
        /// The `User-Agent` header.
        public var userAgent: String
        /// The local address the UDP ports for RTP and RTCP are bound to; nil binds them to the
        /// local address of the RTSP connection (loopback for a server on loopback), so that they
        /// take packets only on the interface the session runs over. "0.0.0.0" takes them on
        /// every IPv4 address.
        public var udpBindAddress: String?
        /// Whether the description's first AAC medium (RFC 3640 or LATM) is set up and received beside
        /// the picture, placed on its timeline by the sender reports (`RTPLipSync`); true by
        /// default. Its samples are on track 2, the picture's on track 1.
        public var receivesAudio = true
        /// For an `rtsps://` URL: which server certificates are trusted (the system's by
        /// default).
        public var trust: TLSTrust = .system

        /// Options: UDP then TCP, 3 seconds to get a UDP packet, 10 for an answer.
        public init(receiver: RTPReceiver.Options = .init(), transport: TransportPreference = .automatic, udpTimeout: Duration = .seconds(3),
                    responseTimeout: Duration = .seconds(10), userAgent: String = "H264Kit", udpBindAddress: String? = nil) {
            self.receiver = receiver
            self.transport = transport
            self.udpTimeout = udpTimeout
            self.responseTimeout = responseTimeout
            self.userAgent = userAgent
            self.udpBindAddress = udpBindAddress
        }
    }

    /// The stream played (with its credentials, if any).
    public let url: RTSPURL
    /// How the client plays.
    public let options: Options

    /// A client for `url`.
    public init(url: RTSPURL, options: Options = Options()) {
        self.url = url
        self.options = options
    }

    /// Plays the stream, handing each sample to `handle` in decode order, until it ends (see
    /// the type's discussion). An error `handle` throws ends playing as
    /// `StreamingError.handler(_:)`. `soundRefusal` says why the caller cannot take sound of
    /// a format (nil: it can): such sound is not received, and the report names it.
    public func receive(soundRefusal: (AudioFormatDescription) -> String? = { _ in nil },
                        _ handle: (SampleBuffer) throws -> Void) async throws(StreamingError) -> RTPReceiver.Report {
        var attempts: [RTSPTransport.Lower] = switch options.transport {
        case .automatic: [.udp, .tcp]
        case .udp: [.udp]
        case .tcp: [.tcp]
        }
        if url.isSecure {
            // RTSP over TLS: the packets interleaved in the TLS connection, never in the clear.
            guard options.transport != .udp else { throw .invalidOption("\(url): rtsps:// carries RTP in the TLS connection (TCP), not over UDP") }
            attempts = [.tcp]
        }
        // (A client context per run: a trusted file is read now, an error before connecting.)
        let tls = url.isSecure ? try options.trust.context() : nil
        for (index, lower) in attempts.enumerated() {
            let outcome: Outcome
            do { outcome = try await play(over: lower, tls: tls, canFallBack: index + 1 < attempts.count, soundRefusal: soundRefusal, handle) } catch let error as StreamingError {
                // The server refuses UDP (461): TCP next.
                if index + 1 < attempts.count, case .network(let network) = error, network.code == .transportRefused { continue }
                throw error
            } catch let error as NetworkError {
                if index + 1 < attempts.count, error.code == .transportRefused { continue }
                throw .network(error)
            } catch let error as RTPReceiver.HandlerError {
                throw .handler(error.underlying)
            } catch {
                throw .socket("\(url)", underlying: error)
            }
            if case .report(let report) = outcome { return report }
        }
        throw .peer("\(url): no RTP arrived over UDP or TCP")
    }

    /// Plays into a file as ``RTPReceiver/record(to:)`` does.
    public func record(to output: SampleOutput) async throws(StreamingError) -> RTPReceiver.Report {
        try await RTPReceiver.record(to: output, from: "\(url)") { (handle) async throws(StreamingError) in
            try await receive(soundRefusal: { output.refusal(of: $0) }, handle)
        }
    }

    private enum Outcome {
        case report(RTPReceiver.Report)
        case noUDP
    }

    /// What reaches the playing loop, from every socket and the clock.
    private enum Input: Sendable {
        case response(RTSPMessage)
        case interleaved(channel: UInt8, payload: [UInt8])
        case rtp([[UInt8]])
        case rtcp([UInt8], from: SocketAddress)
        case audioRTP([[UInt8]])
        case audioRTCP([UInt8])
        case tick
        case closed

        /// The packet bytes it holds (counted against ``RTPReceiver/Options/maximumQueuedBytes``).
        var queuedBytes: Int {
            switch self {
            case .rtp(let datagrams), .audioRTP(let datagrams): datagrams.reduce(0) { $0 + $1.count }
            case .rtcp(let bytes, _), .audioRTCP(let bytes): bytes.count
            case .interleaved(_, let payload): payload.count
            default: 0
            }
        }
    }

    private func play(over lower: RTSPTransport.Lower, tls: NIOSSLContext?, canFallBack: Bool, soundRefusal: (AudioFormatDescription) -> String?,
                      _ handle: (SampleBuffer) throws -> Void) async throws -> Outcome {
        let connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.seconds(10))
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: url.host, port: url.port) { [url] channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            // The name for SNI and the certificate check; an address literal is
                            // checked against the certificate's IP addresses instead.
                            let name = url.host.contains(":") || url.host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : url.host
                            try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: name))
                        }
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw StreamingError.socket("\(url): cannot connect", underlying: error)
        }
        let (inputs, input) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingOldest(16_384))
        // The connection's end when a full buffer dropped its `.closed` input: the next tick
        // that gets through (queued after everything that came before the close) sees it.
        let closed = Locked(false)
        // Why reading the connection ended, when it was an error (a TLS handshake refused).
        let failure = Locked<(any Error)?>(nil)
        let url = url
        @Sendable func closedError() -> StreamingError {
            guard let error = failure.withLock({ $0 }) else { return .peer("\(url): the server closed the connection") }
            if error is NIOSSLError || error is BoringSSLError {
                return .socket("\(url): the TLS handshake failed (a certificate not trusted? RTSPClient.Options.trust, --cacert)", underlying: error)
            }
            return .socket("\(url): the connection failed", underlying: error)
        }
        let budget = ByteBudget(limit: max(1, options.receiver.maximumQueuedBytes))
        var udp: (rtp: any Channel, rtcp: any Channel)?
        var audioUDP: (rtp: any Channel, rtcp: any Channel)?
        if lower == .udp {
            do {
                // The connection's own local address unless told otherwise (never every address
                // by default: a camera's stream is for the interface that asked for it).
                let host = options.udpBindAddress ?? connection.channel.localAddress?.ipAddress ?? "0.0.0.0"
                udp = try await Self.bindPortPair(
                    host: host,
                    rtp: { datagrams in
                        let kept = datagrams.map(\.bytes).filter { budget.take($0.count) }
                        if !kept.isEmpty, case .dropped = input.yield(.rtp(kept)) { budget.give(kept.reduce(0) { $0 + $1.count }) }
                    },
                    rtcp: {
                        for datagram in $0 where budget.take(datagram.bytes.count) {
                            if case .dropped = input.yield(.rtcp(datagram.bytes, from: datagram.remoteAddress)) { budget.give(datagram.bytes.count) }
                        }
                    })
                if options.receivesAudio {
                    audioUDP = try await Self.bindPortPair(
                        host: host,
                        rtp: { datagrams in
                            let kept = datagrams.map(\.bytes).filter { budget.take($0.count) }
                            if !kept.isEmpty, case .dropped = input.yield(.audioRTP(kept)) { budget.give(kept.reduce(0) { $0 + $1.count }) }
                        },
                        rtcp: {
                            for datagram in $0 where budget.take(datagram.bytes.count) {
                                if case .dropped = input.yield(.audioRTCP(datagram.bytes)) { budget.give(datagram.bytes.count) }
                            }
                        })
                }
            } catch {
                if let udp {
                    udp.rtp.close(promise: nil)
                    udp.rtcp.close(promise: nil)
                }
                try? await connection.channel.close()
                throw error
            }
        }
        let audioOffer: RTSPTransport? = !options.receivesAudio ? nil
            : lower == .udp ? audioUDP.map { RTSPTransport(lower: .udp, clientPorts: $0.rtp.localAddress!.port!...($0.rtp.localAddress!.port! + 1)) }
            : RTSPTransport(lower: .tcp, interleaved: 2...3)
        let offer = lower == .udp ? RTSPTransport(lower: .udp, clientPorts: udp!.rtp.localAddress!.port!...(udp!.rtp.localAddress!.port! + 1))
                                  : RTSPTransport(lower: .tcp, interleaved: 0...1)
        var machine = RTSPClientSession(url: url, transports: [offer], audioTransports: audioOffer.map { [$0] } ?? [], userAgent: options.userAgent)
        let receiverOptions = options.receiver
        let serverIP = connection.channel.remoteAddress?.ipAddress

        let outcome: Outcome = try await connection.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var parser = RTSPMessageParser()
                    do {
                        for try await buffer in inbound {
                            for element in try parser.append(buffer.readableBytesView) {
                                switch element {
                                case .message(let message): input.yield(.response(message))
                                case .interleaved(let channel, let payload):
                                    // Over TCP the server is slowed rather than its packets dropped
                                    // (an empty queue always takes one: no deadlock).
                                    while !budget.take(payload.count) { try await Task.sleep(for: .milliseconds(2)) }
                                    if case .dropped = input.yield(.interleaved(channel: channel, payload: payload)) { budget.give(payload.count) }
                                }
                            }
                        }
                    } catch {
                        failure.withLock { $0 = error }
                    }
                    // Only when the buffer is full: a flag set on every close would let a tick
                    // queued before the last packets end the stream ahead of them.
                    if case .dropped = input.yield(.closed) { closed.withLock { $0 = true } }
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: .milliseconds(10))
                        input.yield(.tick)
                    }
                }
                defer {
                    group.cancelAll()
                    input.finish()
                    for pair in [udp, audioUDP].compactMap({ $0 }) {
                        pair.rtp.close(promise: nil)
                        pair.rtcp.close(promise: nil)
                    }
                }

                func send(_ request: RTSPMessage) async throws {
                    try await outbound.write(ByteBuffer(bytes: request.bytes))
                }
                func sendControl(_ bytes: [UInt8], transport: RTSPTransport, over socket: (any Channel)?) async {
                    if let socket, let serverIP, let port = transport.serverPorts?.upperBound, let address = try? SocketAddress(ipAddress: serverIP, port: port) {
                        try? await socket.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes)))
                    } else if let channels = transport.interleaved {
                        var frame = ByteBuffer()
                        RTPSubscriber.frame(bytes, channel: UInt8(channels.upperBound), into: &frame)
                        try? await outbound.write(frame)
                    }
                }

                // Negotiation: OPTIONS, DESCRIBE, SETUP, PLAY.
                try await send(machine.start())
                var setup: RTSPClientSession.Setup?
                var early: [Input] = []
                var earlyBytes = 0
                let asked = ContinuousClock.now
                negotiation: for await event in inputs {
                    switch event {
                    case .response(let response):
                        switch try machine.receive(response) {
                        case .send(let request): try await send(request)
                        case .playing(let playing):
                            setup = playing
                            break negotiation
                        }
                    case .closed:
                        throw closedError()
                    case .tick:
                        if closed.withLock({ $0 }) { throw closedError() }
                        if ContinuousClock.now - asked > options.responseTimeout { throw StreamingError.peer("\(url): no answer within \(options.responseTimeout)") }
                    default:
                        // Packets sent before the PLAY answer came in: kept for when it has,
                        // out of the queue's count (a reader waiting for room would hold the
                        // answer back), within a bound of their own.
                        budget.give(event.queuedBytes)
                        if early.count < 4096, earlyBytes + event.queuedBytes <= budget.limit {
                            early.append(event)
                            earlyBytes += event.queuedBytes
                        }
                    }
                }
                guard let setup else { return .report(RTPReceiver.Report(session: RTPReceivingSession(), ending: .cancelled, samples: 0)) }

                // Playing: the picture, and the sound beside it when it was set up.
                var session = RTPReceivingSession(configuration: receiverOptions.session, formatDescription: try? setup.format.formatDescription())
                var mediaNotReceived = setup.mediaNotSetUp
                var audioSession: RTPAudioBesidePicture?
                if let audio = setup.audio {
                    if let format = try? audio.format.formatDescription(), let refusal = soundRefusal(format) {
                        mediaNotReceived.append("audio \(audio.format.encodingName)/\(audio.format.clockRate) (\(refusal))")
                    } else {
                        do { audioSession = try RTPAudioBesidePicture(format: audio.format) } catch {
                            mediaNotReceived.append("audio \(audio.format.encodingName)/\(audio.format.clockRate) (\(error))")
                        }
                    }
                }
                let audioRTPChannel = setup.audio?.transport.interleaved.map { UInt8($0.lowerBound) }
                let audioRTCPChannel = setup.audio?.transport.interleaved.map { UInt8($0.upperBound) }
                var policy = ReceivingPolicy(configuration: .init(idleTimeout: receiverOptions.idleTimeout.inSeconds, sampleLimit: receiverOptions.sampleLimit,
                                                                  udpTimeout: canFallBack ? options.udpTimeout.inSeconds : nil,
                                                                  keepAliveInterval: Double(max(1, setup.timeout / 2)), stallThreshold: 0.5),
                                             now: monotonicSeconds())
                let rtpChannel = setup.transport.interleaved.map { UInt8($0.lowerBound) }
                let rtcpChannel = setup.transport.interleaved.map { UInt8($0.upperBound) }
                var pending = early.makeIterator()
                var events = inputs.makeAsyncIterator()
                playing: while true {
                    let next: Input?
                    if let kept = pending.next() {
                        next = kept
                    } else {
                        next = await events.next()
                        if let next { budget.give(next.queuedBytes) }
                    }
                    guard let event = next else { break playing }
                    var samples: [SampleBuffer] = []
                    var sound: [SampleBuffer] = []
                    switch event {
                    case .audioRTP(let datagrams):
                        let arrival = monotonicSeconds()
                        policy.arrived(at: arrival, isRTP: true)
                        for bytes in datagrams { sound += audioSession?.receiveRTP(bytes, arrival: arrival, picture: .init(session)) ?? [] }
                    case .audioRTCP(let bytes):
                        policy.arrived(at: monotonicSeconds(), isRTP: false)
                        _ = audioSession?.receiveRTCP(bytes, arrival: monotonicSeconds())
                    case .interleaved(let channel, let payload) where channel == audioRTPChannel:
                        policy.arrived(at: monotonicSeconds(), isRTP: true)
                        sound = audioSession?.receiveRTP(payload, arrival: monotonicSeconds(), picture: .init(session)) ?? []
                    case .interleaved(let channel, let payload) where channel == audioRTCPChannel:
                        policy.arrived(at: monotonicSeconds(), isRTP: false)
                        _ = audioSession?.receiveRTCP(payload, arrival: monotonicSeconds())
                    case .rtp(let datagrams):
                        let arrival = monotonicSeconds()
                        policy.arrived(at: arrival, isRTP: true)
                        for bytes in datagrams { samples += session.receiveRTP(bytes, arrival: arrival) }
                    case .interleaved(let channel, let payload) where channel == rtpChannel:
                        policy.arrived(at: monotonicSeconds(), isRTP: true)
                        samples = session.receiveRTP(payload, arrival: monotonicSeconds())
                    case .interleaved(let channel, let payload) where channel == rtcpChannel:
                        policy.arrived(at: monotonicSeconds(), isRTP: false)
                        _ = payload.withUnsafeBytes { session.receiveRTCP($0, arrival: monotonicSeconds()) }
                    case .rtcp(let bytes, _):
                        policy.arrived(at: monotonicSeconds(), isRTP: false)
                        _ = bytes.withUnsafeBytes { session.receiveRTCP($0, arrival: monotonicSeconds()) }
                    case .interleaved, .response:
                        continue
                    case .closed:
                        _ = policy.closed()
                        break playing
                    case .tick:
                        if closed.withLock({ $0 }) {
                            _ = policy.closed()
                            break playing
                        }
                        let now = monotonicSeconds()
                        samples = session.expire(now: now)
                        sound = audioSession?.expire(now: now, picture: .init(session)) ?? []
                        switch policy.tick(now: now, overUDP: lower == .udp, isOver: { session.isOver(quiet: $0) }) {
                        case .goOn: break
                        case .end: break playing
                        case .fallBackToTCP:
                            try? await send(machine.teardown())
                            return .noUDP
                        case .sendKeepAlive:
                            try? await send(machine.keepAlive())
                        }
                    }
                    if let feedback = session.feedback(now: monotonicSeconds()) { await sendControl(feedback, transport: setup.transport, over: udp?.rtcp) }
                    if let audio = setup.audio, let feedback = audioSession?.feedback(now: monotonicSeconds()) {
                        await sendControl(feedback, transport: audio.transport, over: audioUDP?.rtcp)
                    }
                    let step = try RTPReceiver.hand(samples, policy: &policy, handle)
                    try RTPReceiver.handSound(sound, handle)
                    if case .end = step { break playing }
                }
                if Task.isCancelled { _ = policy.cancelled() }
                let ending = policy.ending ?? .cancelled
                if ending != .teardown { try? await send(machine.teardown()) }
                _ = try RTPReceiver.hand(session.finish(), policy: &policy, handle)
                var report = RTPReceiver.Report(session: session, ending: ending, samples: policy.delivered)
                if var sound = audioSession {
                    try RTPReceiver.handSound(sound.finish(picture: .init(session), now: monotonicSeconds()), handle)
                    report.sound = RTPReceiver.SoundReport(sound)
                }
                report.mediaNotReceived = mediaNotReceived
                return .report(report)
            }
        }
        return outcome
    }

    /// Two UDP ports, an even one for RTP and the next for RTCP, on `host`; what arrives on
    /// them goes to `rtp` and `rtcp` (on an event loop).
    static func bindPortPair(host: String, rtp: @escaping @Sendable ([ReceivedDatagram]) -> Void,
                             rtcp: @escaping @Sendable ([ReceivedDatagram]) -> Void) async throws(StreamingError) -> (rtp: any Channel, rtcp: any Channel) {
        func bootstrap(_ forward: @escaping @Sendable ([ReceivedDatagram]) -> Void,
                       on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) -> DatagramBootstrap {
            // No SO_REUSEADDR: with it, Linux may give a port another such socket holds (and
            // the next port's bind succeeds over it), and one client's packets reach the other.
            DatagramBootstrap(group: group)
                .readingWholeDatagrams(16)
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DatagramForwarder(forward)) }
                }
        }
        for _ in 0..<32 {
            guard let rtpChannel = try? await bootstrap(rtp).bind(host: host, port: 0).get() else { continue }
            guard let port = rtpChannel.localAddress?.port, port % 2 == 0, port < 65535 else {
                try? await rtpChannel.close()
                continue
            }
            // RTCP on the RTP socket's event loop: a BYE is not read while that loop is too busy
            // to read the packets sent before it.
            if let rtcpChannel = try? await bootstrap(rtcp, on: rtpChannel.eventLoop).bind(host: host, port: port + 1).get() {
                return (rtpChannel, rtcpChannel)
            }
            try? await rtpChannel.close()
        }
        throw .socket("no free UDP port pair for RTP and RTCP on \(host)", underlying: nil)
    }
}

/// A datagram received: its bytes (copied out of the channel's receive buffer, so that SwiftNIO
/// can read into that buffer again) and where it came from.
struct ReceivedDatagram: Sendable {
    var bytes: [UInt8]
    var remoteAddress: SocketAddress
}

/// Hands the datagrams of each read to a closure, together (a read takes up to
/// `datagramVectorReadMessageCount` at a time, and a burst several reads): one call a burst
/// rather than one a datagram.
final class DatagramForwarder: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let forward: @Sendable ([ReceivedDatagram]) -> Void
    private var pending: [ReceivedDatagram] = []

    init(_ forward: @escaping @Sendable ([ReceivedDatagram]) -> Void) { self.forward = forward }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        pending.append(ReceivedDatagram(bytes: Array(envelope.data.readableBytesView), remoteAddress: envelope.remoteAddress))
        if pending.count >= 256 { flush() }
    }

    func channelReadComplete(context: ChannelHandlerContext) { flush() }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}

    private func flush() {
        guard !pending.isEmpty else { return }
        forward(pending)
        pending.removeAll(keepingCapacity: true)
    }
}
