import SampleFlow
import H264Network
import MediaCore
import NIOCore
import Synchronization
import SystemIO

/// One RTSP connection of the server: bytes in through the ``RTSPMessageParser``, requests
/// through the ``RTSPServerConnection`` state machine, responses out, and its events carried
/// out (a client's stream started, paused, torn down; a publisher's accepted). Runs on the
/// connection's event loop.
final class RTSPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A session of this connection and what serves it.
    private struct Active {
        var session: RTSPServerConnection.Session
        var mount: Mount
        /// One per medium of a playing session, in the order of its streams.
        var subscribers: [RTPSubscriber] = []
        var player: PacedFilePlayer?
        var fanOut: RTPFanOut?
        var routeKeys: [String] = []
        var paused = false
        /// For a publisher, the stream whose sound is recorded (a carried LATM or G.711 one too).
        var recordedAudio: Int?
    }

    private let core: ServerCore
    private var parser = RTSPMessageParser()
    private var machine: RTSPServerConnection
    private var sessions: [String: Active] = [:]
    private var lastRequest = NIODeadline.now()
    private var timer: RepeatedTask?
    private var counted = false
    private var errorsSeen = 0

    init(core: ServerCore) {
        self.core = core
        var configuration = RTSPServerConnection.Configuration(authenticator: core.authenticator, sessionTimeout: core.options.sessionTimeout,
                                                               serverPorts: core.serverPorts, transports: core.transports)
        configuration.accessKey = core.options.accessKey
        machine = RTSPServerConnection(configuration: configuration)
    }

    func channelActive(context: ChannelHandlerContext) {
        let open = core.counts.withLock { counts -> Int in
            counts.connections += 1
            counts.openConnections += 1
            return counts.openConnections
        }
        counted = true
        guard open <= core.options.maximumConnections else {
            core.counts.withLock { $0.connectionsRefused += 1 }
            context.close(promise: nil)
            return
        }
        core.connections.withLock { $0[ObjectIdentifier(context.channel)] = context.channel }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let (handler, context) = bound.value
            handler.checkTimeouts(context: context)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        for id in Array(sessions.keys) { end(id, timedOut: false) }
        _ = machine.closeAll()
        if counted {
            core.counts.withLock { $0.openConnections -= 1 }
            counted = false
        }
        core.connections.withLock { $0[ObjectIdentifier(context.channel)] = nil }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let elements: [RTSPMessageParser.Element]
        do { elements = try parser.append(buffer.readableBytesView) } catch {
            // A request that does not parse, or is too large: answered, then the connection ends.
            let response = machine.response(toUnparsable: error)
            core.counts.withLock { $0.errorsAnswered += 1 }
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: response.bytes)), promise: nil)
            context.close(promise: nil)
            return
        }
        for element in elements {
            switch element {
            case .message(let message): handle(message, context: context)
            case .interleaved(let channel, let payload): handleInterleaved(channel: channel, payload: payload)
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.channel.setOption(.autoRead, value: true).whenComplete { _ in }
            // Files played unpaced over this connection wait for it to have room.
            for active in sessions.values { active.player?.roomAvailable() }
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    // MARK: Requests

    private func handle(_ message: RTSPMessage, context: ChannelHandlerContext) {
        guard case .request = message.startLine else { return }  // a response to nothing we asked: ignored
        lastRequest = .now()
        let (response, event) = machine.respond(to: message, now: Int(WallClock.seconds)) { [core] path in core.mount(for: path)?.resource }
        let newErrors = machine.errorsAnswered - errorsSeen
        errorsSeen = machine.errorsAnswered
        core.counts.withLock {
            $0.requests += 1
            $0.errorsAnswered += newErrors
        }
        if let id = message["Session"].map({ String($0.split(separator: ";").first ?? "") }) { sessions[id]?.subscribers.forEach { $0.touch() } }
        // A publisher's routes are in place before it hears 200 to its RECORD: it sends at once
        // (ffmpeg does), and its first packets, with the first IDR picture, must not go astray.
        var pending = event
        if let recording = pending, case .record = recording {
            apply(recording, context: context)
            pending = nil
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: response.bytes)), promise: nil)
        if !context.channel.isWritable {
            // A client that sends requests without reading the answers: stop reading it until
            // it has read them, so that its answers cannot pile up.
            context.channel.setOption(.autoRead, value: false).whenComplete { _ in }
        }
        if let pending { apply(pending, context: context) }
    }

    private func apply(_ event: RTSPServerConnection.Event, context: ChannelHandlerContext) {
        switch event {
        case .play(let session, let from):
            play(session, from: from, context: context)
        case .pause(let session):
            guard var active = sessions[session.id] else { return }
            active.paused = true
            if let player = active.player {
                player.pause()
            } else if case .shared(let fanOut, _) = active.mount.kind {
                for subscriber in active.subscribers { fanOut.detach(subscriber.id) }
            }
            sessions[session.id] = active
        case .teardown(let session):
            end(session.id, timedOut: false)
        case .record(let session):
            record(session, context: context)
        }
    }

    private func play(_ session: RTSPServerConnection.Session, from: Double?, context: ChannelHandlerContext) {
        if var active = sessions[session.id], active.paused {
            // PLAY after PAUSE: the same stream goes on.
            active.paused = false
            if let player = active.player {
                player.resume()
            } else if case .shared(let fanOut, _) = active.mount.kind {
                for subscriber in active.subscribers {
                    subscriber.rejoin()
                    fanOut.add(subscriber)
                }
            }
            sessions[session.id] = active
            return
        }
        guard let mount = core.mount(for: session.path), mount.format != nil else { return }
        // A subscriber for each medium set up, on its own transport.
        var subscribers: [RTPSubscriber] = []
        var routes: [(key: String, subscriber: RTPSubscriber)] = []
        let anchor = SessionAnchor(canonicalName: "h264kit-\(session.id)")
        for (index, stream) in session.streams.enumerated() {
            let transport: RTPSinkTransport
            var routeKey: String?
            if stream.transport.lower == .tcp, let channels = stream.transport.interleaved {
                transport = .interleaved(connection: context.channel, rtpChannel: UInt8(channels.lowerBound), rtcpChannel: UInt8(channels.upperBound))
            } else {
                guard let udp = core.udp.withLock({ $0 }), let ip = context.channel.remoteAddress?.ipAddress, let ports = stream.transport.clientPorts,
                      let rtpAddress = try? SocketAddress(ipAddress: ip, port: ports.lowerBound),
                      let rtcpAddress = try? SocketAddress(ipAddress: ip, port: ports.upperBound)
                else { return }
                // Packets go only to the address the request came from (never to a `destination`
                // a client names: that would make the server an amplifier for anyone).
                transport = .udp(rtp: udp.rtp, rtcp: udp.rtcp, rtpAddress: rtpAddress, rtcpAddress: rtcpAddress)
                routeKey = ServerCore.key(rtcpAddress)
            }
            subscribers.append(RTPSubscriber(id: "\(session.id)/\(index)", transport: transport, ssrc: stream.ssrc, payloadType: stream.format.payloadType,
                                             initialSequenceNumber: stream.initialSequenceNumber, initialTimestamp: stream.initialTimestamp,
                                             medium: stream.format.mediaType, clockRate: stream.format.clockRate, anchor: anchor))
            if let routeKey { routes.append((routeKey, subscribers[subscribers.count - 1])) }
        }
        guard !subscribers.isEmpty else { return }
        // The fan-out first: when it cannot be made, nothing is registered.
        var player: PacedFilePlayer?
        let fanOut: RTPFanOut
        switch mount.kind {
        case .perClient(let file, let options, let audio):
            var reader = LoopingSampleReader(path: file, options: options, loops: false)
            if let from, from > 0 { reader.seek(to: MediaTime(seconds: from, preferredTimescale: 90_000)) }
            guard let made = try? RTPFanOut(configuration: core.options.packetizer, audio: audio) else { return }
            fanOut = made
            // Unpaced, a file played to one client goes at its socket's pace, nothing dropped.
            player = PacedFilePlayer(reader: reader, fanOut: fanOut, loop: context.eventLoop, paced: core.options.paced, rate: core.options.rate,
                                     waitsForRoom: true, onEnd: { _ in })
        case .shared(let shared, _):
            fanOut = shared
        case .ingest:
            return
        }
        var active = Active(session: session, mount: mount, subscribers: subscribers, player: player, fanOut: fanOut, routeKeys: routes.map(\.key))
        for route in routes { core.routes.withLock { $0[route.key] = .player(route.subscriber, mount) } }
        core.subscribed(subscribers)
        for subscriber in subscribers { fanOut.add(subscriber) }
        player?.start()
        active.paused = false
        sessions[session.id] = active
    }

    private func record(_ session: RTSPServerConnection.Session, context: ChannelHandlerContext) {
        guard let mount = core.mount(for: session.path), case .ingest(let sink) = mount.kind else { return }
        // The video is recorded, and the first sound beside it (AAC as mpeg4-generic first,
        // else LATM or G.711); the others are named in the report, never dropped unsaid.
        guard let format = session.format, let video = session.streams.first(where: { $0.format.mediaType == .video }) else { return }
        func sound(_ format: RTPPayloadFormat, latmOrG711: Bool) -> AudioPayloadFormat? {
            switch format {
            case .mpeg4Generic(let aac): latmOrG711 ? nil : .mpeg4Generic(aac)
            case .carried(let medium): latmOrG711 ? AudioPayloadFormat(medium: medium) : nil
            case .h264: nil
            }
        }
        let recorded = session.streams.indices.lazy.compactMap { index in sound(session.streams[index].format, latmOrG711: false).map { (index, $0) } }.first
            ?? session.streams.indices.lazy.compactMap { index in sound(session.streams[index].format, latmOrG711: true).map { (index, $0) } }.first
        let audio = recorded.map { session.streams[$0.0] }
        var active = Active(session: session, mount: mount)
        active.recordedAudio = recorded?.0
        for (stream, isAudio) in [(video, false), (audio, true)] {
            guard let stream, stream.transport.lower == .udp, let ip = context.channel.remoteAddress?.ipAddress, let ports = stream.transport.clientPorts else { continue }
            for port in [ports.lowerBound, ports.upperBound] {
                guard let key = ServerCore.key(try? SocketAddress(ipAddress: ip, port: port)) else { continue }
                active.routeKeys.append(key)
                core.routes.withLock { $0[key] = .publisher(sink, sessionID: session.id, isAudio: isAudio) }
            }
        }
        let others = session.streams.filter { $0 != video && $0 != audio }.map { $0.format.medium(port: 0).summary }
        sink.begin(session: session.id, format: format, audio: recorded?.1, mediaNotRecorded: others)
        sessions[session.id] = active
    }

    private func handleInterleaved(channel: UInt8, payload: [UInt8]) {
        for active in sessions.values {
            guard let index = active.session.streams.firstIndex(where: { $0.transport.interleaved?.contains(Int(channel)) == true }),
                  let channels = active.session.streams[index].transport.interleaved else { continue }
            let isControl = Int(channel) == channels.upperBound
            let medium = active.session.streams[index].format.mediaType
            if case .ingest(let sink) = active.mount.kind {
                let isAudio: Bool
                switch active.session.streams[index].format {
                case .h264: isAudio = false
                case .mpeg4Generic, .carried:
                    guard index == active.recordedAudio else { return }  // (named in the report, not recorded)
                    isAudio = true
                }
                if isControl { sink.receiveRTCP(payload, session: active.session.id, isAudio: isAudio) } else {
                    sink.receiveRTP(payload, session: active.session.id, isAudio: isAudio)
                }
            } else if isControl {
                if index < active.subscribers.count { active.subscribers[index].touch() }
                let packets = payload.withUnsafeBytes { try? RTCPPacket.parse(compound: $0) } ?? []
                if medium == .video, packets.contains(where: { if case .pictureLossIndication = $0 { true } else { false } }) {
                    core.counts.withLock { $0.pictureLossIndications += 1 }
                    active.mount.requestKeyframe()
                }
            }
            return
        }
    }

    // MARK: Endings

    /// Ends a session: its stream stops, its routes go, a publisher's receiver hears of it.
    private func end(_ id: String, timedOut: Bool) {
        guard let active = sessions.removeValue(forKey: id) else { return }
        active.player?.stop()
        for subscriber in active.subscribers { active.fanOut?.remove(subscriber.id) }
        if !active.subscribers.isEmpty { core.unsubscribed(active.subscribers, timedOut: timedOut) }
        guard case .ingest(let sink) = active.mount.kind else {
            for key in active.routeKeys { core.routes.withLock { _ = $0.removeValue(forKey: key) } }
            return
        }
        sink.end(session: id)
        // A publisher's last packets come over UDP and may still wait in the socket when its
        // TEARDOWN came over TCP (ffmpeg sends the picture and sound it held back just before):
        // its routes stay while the sink takes them (it ends 250 ms on), then go, unless
        // another session has them by then.
        let keys = active.routeKeys, core = core
        Task {
            try? await Task.sleep(for: .milliseconds(500))
            core.routes.withLock { routes in
                for key in keys {
                    if case .publisher(_, let owner, _)? = routes[key], owner == id { routes.removeValue(forKey: key) }
                }
            }
        }
    }

    private func checkTimeouts(context: ChannelHandlerContext) {
        let limit = Int64(core.options.sessionTimeout) * 1_000_000_000
        let sinceRequest = (NIODeadline.now() - lastRequest).nanoseconds
        var timedOut = false
        for (id, active) in sessions {
            var idle = active.subscribers.map(\.idleNanoseconds).min() ?? sinceRequest
            // A publisher is alive while its packets come: ffmpeg and cameras send no request
            // while they record (RFC 2326 §12.37 counts its RTCP as a sign of life too).
            if case .ingest(let sink) = active.mount.kind, let quiet = sink.secondsSinceArrival(session: id) {
                idle = min(idle, Int64(quiet * 1_000_000_000))
            }
            if idle > limit {
                end(id, timedOut: true)
                timedOut = true
            }
        }
        if timedOut, sessions.isEmpty {
            context.close(promise: nil)
        } else if sessions.isEmpty, sinceRequest > Int64(core.options.idleConnectionTimeout) * 1_000_000_000 {
            context.close(promise: nil)
        }
    }
}

extension ServerCore {
    /// The server's UDP port pair, once bound (the state machine answers it in `server_port`).
    var serverPorts: ClosedRange<Int> {
        guard let port = udp.withLock({ $0?.rtp.localAddress?.port }) else { return 0...1 }
        return port...(port + 1)
    }
}
