/// The server side of one RTSP connection (RFC 2326) as a pure state machine: a request in, its
/// response and what the server must do out (start sending to a session, stop, accept a
/// publisher's stream). No sockets, no clocks: the server around it owns those.
///
/// It serves each path either for playing (`OPTIONS`, `DESCRIBE`, `SETUP`, `PLAY`, `PAUSE`,
/// `TEARDOWN`, `GET_PARAMETER`/`SET_PARAMETER` as keep-alives) or for recording what a publisher
/// sends (`ANNOUNCE` with an SDP, `SETUP` with `mode=record`, `RECORD`), as OBS and ffmpeg publish
/// to a server. A resource with several media (video and AAC) is set up medium by medium, each
/// `SETUP` naming one by its `control` URL and adding it to the session (RFC 2326 §10.4), and
/// played (or paused, or torn down) as one by the aggregate URL. Each medium of a session is
/// RTP/AVP over UDP (the client's port pair) or interleaved in the connection (RTP/AVP/TCP, its
/// own channel pair), with its own SSRC, first sequence number and first RTP timestamp. Every bad request gets its 4xx and the connection goes on; with an
/// ``RTSPAuthenticator`` every request but `OPTIONS` must carry valid credentials (401 with the
/// challenges otherwise).
public struct RTSPServerConnection: Sendable {
    /// The server's settings, shared by its connections.
    public struct Configuration: Sendable {
        /// When set, requests must authenticate (Digest or Basic).
        public var authenticator: RTSPAuthenticator?
        /// Seconds a session lives without a request or RTCP packet from its client (the
        /// `timeout` of the `Session` header; the server enforces it).
        public var sessionTimeout: Int
        /// The UDP port pair the server sends RTP and RTCP from (and reads RTCP and recorded RTP on).
        public var serverPorts: ClosedRange<Int>
        /// The `Server` header.
        public var serverName: String
        /// The transports offered: UDP, TCP interleaved, or both (a `SETUP` asking for another
        /// is answered 461, and a client falls back to the other).
        public var transports: Set<RTSPTransport.Lower>
        /// When set, only request URLs whose path begins with a valid token of this key are
        /// answered (``URLSigningKey``, scoped to the presentation: a URL signed for
        /// `rtsp://host/cam` opens `/cam` and its tracks); any other gets 403. `OPTIONS` needs
        /// none. The time a token is checked at is the `now` given to ``respond(to:now:resource:)``.
        public var accessKey: URLSigningKey?

        /// Settings.
        public init(authenticator: RTSPAuthenticator? = nil, sessionTimeout: Int = 60, serverPorts: ClosedRange<Int>, serverName: String = "H264Kit",
                    transports: Set<RTSPTransport.Lower> = [.udp, .tcp]) {
            self.authenticator = authenticator
            self.sessionTimeout = sessionTimeout
            self.serverPorts = serverPorts
            self.serverName = serverName
            self.transports = transports
        }
    }

    /// What the server has at a path.
    public enum Resource: Sendable, Hashable {
        /// A stream of one medium to play, described by this payload format (its `control`
        /// names the medium).
        case playable(H264PayloadFormat)
        /// A stream of several media to play, in the order the session description lists them;
        /// each format's `control` names its medium (distinct, as `trackID=0`, `trackID=1`).
        case playableMedia([RTPPayloadFormat])
        /// A path a publisher may `ANNOUNCE` and `RECORD` to.
        case recordable

        /// The media of a playable resource.
        var media: [RTPPayloadFormat]? {
            switch self {
            case .playable(let format): [.h264(format)]
            case .playableMedia(let media): media.isEmpty ? nil : media
            case .recordable: nil
            }
        }
    }

    /// One medium of a session, as its `SETUP` answered it.
    public struct Stream: Sendable, Hashable {
        /// The payload format: the resource's medium when playing, the publisher's `ANNOUNCE`
        /// when recording.
        public var format: RTPPayloadFormat
        /// The transport answered: client ports or interleaved channels, server ports, SSRC.
        public var transport: RTSPTransport
        /// The synchronization source of the medium (the server's when playing).
        public var ssrc: UInt32
        /// The sequence number of the first RTP packet sent (announced in `RTP-Info`).
        public var initialSequenceNumber: UInt16
        /// The RTP timestamp of the first sample sent (announced in `RTP-Info`).
        public var initialTimestamp: UInt32
    }

    /// One client's session.
    public struct Session: Sendable, Hashable {
        /// The `Session` identifier.
        public var id: String
        /// The resource's path (`/live`).
        public var path: String
        /// The media set up, in the order of their `SETUP`s (never empty).
        public internal(set) var streams: [Stream]
        /// Whether the client publishes (`mode=record`) rather than plays.
        public var isRecording: Bool

        /// The first medium's transport.
        public var transport: RTSPTransport { streams[0].transport }
        /// The first medium's synchronization source.
        public var ssrc: UInt32 { streams[0].ssrc }
        /// The first medium's first sequence number.
        public var initialSequenceNumber: UInt16 { streams[0].initialSequenceNumber }
        /// The first medium's first RTP timestamp.
        public var initialTimestamp: UInt32 { streams[0].initialTimestamp }
        /// The H.264 medium's payload format, if one is set up.
        public var format: H264PayloadFormat? {
            for stream in streams { if case .h264(let format) = stream.format { return format } }
            return nil
        }
    }

    /// What the server must do besides sending the response.
    public enum Event: Sendable, Hashable {
        /// Start (or resume) sending the stream to this session; `from` is the `Range` start in
        /// seconds when the client asked for one.
        case play(Session, from: Double?)
        /// Stop sending to this session, keeping it.
        case pause(Session)
        /// Accept the publisher's RTP for this session.
        case record(Session)
        /// The session is over (TEARDOWN): stop and forget it.
        case teardown(Session)
    }

    /// The methods answered (the `Public` header of `OPTIONS`).
    public static let methods = ["OPTIONS", "DESCRIBE", "SETUP", "PLAY", "PAUSE", "TEARDOWN", "GET_PARAMETER", "SET_PARAMETER", "ANNOUNCE", "RECORD"]
    /// The most sessions one connection may hold (each a SETUP of a new session).
    public static let maximumSessions = 16

    private enum State: Sendable, Hashable { case ready, playing, recording }
    private struct SessionState: Sendable, Hashable {
        var session: Session
        var state: State
        /// It has played (or recorded): its media are fixed from then on.
        var started = false
    }

    /// The server's settings.
    public let configuration: Configuration
    private var sessions: [String: SessionState] = [:]
    /// What publishers announced, by path: the media this server records (H.264, AAC).
    private var announced: [String: [RTPPayloadFormat]] = [:]
    private var usedChannels: Set<Int> = []
    private var random: RandomSource

    /// Requests answered with a 4xx or 5xx.
    public private(set) var errorsAnswered = 0

    /// A connection's machine; `seed` makes the identifiers repeatable (tests), nil uses the
    /// system's random numbers.
    public init(configuration: Configuration, seed: UInt64? = nil) {
        self.configuration = configuration
        random = RandomSource(seed: seed)
    }

    /// The sessions of this connection.
    public var activeSessions: [Session] { sessions.values.map(\.session).sorted { $0.id < $1.id } }

    /// Answers `request`; `resource` looks up what the server has at a path (`/live`). With an
    /// ``Configuration/accessKey``, use ``respond(to:now:resource:)``: here no time is known,
    /// so every token counts as expired.
    public mutating func respond(to request: RTSPMessage, resource: (String) -> Resource?) -> (response: RTSPMessage, event: Event?) {
        respond(to: request, now: .max, resource: resource)
    }

    /// Answers `request` at Unix time `now` (the time an ``Configuration/accessKey``'s tokens
    /// are checked at); `resource` looks up what the server has at a path (`/live`).
    public mutating func respond(to request: RTSPMessage, now: Int, resource: (String) -> Resource?) -> (response: RTSPMessage, event: Event?) {
        guard case .request(let method, let given) = request.startLine else {
            return (reply(400, "Bad Request", to: request), nil)
        }
        guard request.sequenceNumber != nil else { return (reply(400, "Bad Request", to: request, note: "no CSeq"), nil) }
        if method != "OPTIONS", let authenticator = configuration.authenticator, !authenticator.accepts(request["Authorization"], method: method, url: given) {
            var response = reply(401, "Unauthorized", to: request)
            for challenge in authenticator.challenges { response.headers.append(("WWW-Authenticate", challenge)) }
            return (response, nil)
        }
        // A signed URL: its token taken off for the lookups, kept in the URLs the client is
        // told (Content-Base, RTP-Info), so that its next requests carry it too.
        var url = given, token = ""
        if method != "OPTIONS", let key = configuration.accessKey {
            let (prefix, path, rest) = Self.split(given)
            switch key.check(path, now: now) {
            case .allowed(let opened):
                url = prefix + opened + rest
                token = String(path.dropLast(opened.count))
            case .denied(let why):
                return (reply(403, "Forbidden", to: request, note: why.description), nil)
            }
        }
        let path = Self.normalizedPath(url)
        switch method {
        case "OPTIONS":
            var response = reply(200, "OK", to: request)
            response.headers.append(("Public", Self.methods.joined(separator: ", ")))
            return (response, nil)
        case "DESCRIBE":
            guard let media = resource(path)?.media else { return (reply(404, "Not Found", to: request), nil) }
            let base = given.hasSuffix("/") ? given : given + "/"
            let description = SessionDescription(origin: "- \(random.next() >> 33) 1 IN IP4 0.0.0.0", name: configuration.serverName, connection: "IN IP4 0.0.0.0",
                                                 attributes: ["tool:\(configuration.serverName)", "range:npt=0-", "control:*"],
                                                 media: media.map { $0.medium(port: 0) })
            var response = reply(200, "OK", to: request)
            response.headers += [("Content-Base", base), ("Content-Type", "application/sdp")]
            response.body = Array(description.text.utf8)
            return (response, nil)
        case "ANNOUNCE":
            guard resource(path) == .recordable else { return (reply(resource(path) == nil ? 404 : 405, resource(path) == nil ? "Not Found" : "Method Not Allowed", to: request), nil) }
            guard request["Content-Type"]?.lowercased().hasPrefix("application/sdp") ?? false else {
                return (reply(415, "Unsupported Media Type", to: request, note: "ANNOUNCE takes application/sdp"), nil)
            }
            do {
                let description = try SessionDescription(parsing: String(decoding: request.body, as: UTF8.self))
                guard let medium = description.media.first(where: { $0.type == "video" }) else {
                    return (reply(415, "Unsupported Media Type", to: request, note: "no video medium"), nil)
                }
                // Every medium, so that each SETUP finds its own: the video (recorded), AAC
                // (`mpeg4-generic`) read, and any other carried as it is.
                let video = try H264PayloadFormat(medium: medium)
                announced[path] = description.media.map { other in
                    if other == medium { return .h264(video) }
                    if let audio = try? MPEG4GenericPayloadFormat(medium: other) { return .mpeg4Generic(audio) }
                    return .carried(other)
                }
            } catch {
                return (reply(415, "Unsupported Media Type", to: request, note: error.description), nil)
            }
            return (reply(200, "OK", to: request), nil)
        case "SETUP":
            return setup(request, url: url, path: path, resource: resource)
        case "PLAY", "PAUSE", "RECORD", "TEARDOWN", "GET_PARAMETER", "SET_PARAMETER":
            return sessionRequest(request, url: url, token: token, method: method)
        default:
            var response = reply(501, "Not Implemented", to: request)
            response.headers.append(("Public", Self.methods.joined(separator: ", ")))
            return (response, nil)
        }
    }

    /// The response to a request that could not be parsed (the parser's error): 400 or 413,
    /// after which the server closes the connection.
    public mutating func response(toUnparsable error: NetworkError) -> RTSPMessage {
        errorsAnswered += 1
        let tooLarge = error.code == .tooLarge
        return RTSPMessage(.response(status: tooLarge ? 413 : 400, reason: tooLarge ? "Request Entity Too Large" : "Bad Request"),
                           headers: [("Server", configuration.serverName), ("Connection", "close")])
    }

    /// Ends every session (the connection closed): what the server must stop.
    public mutating func closeAll() -> [Session] {
        let all = activeSessions
        sessions.removeAll()
        return all
    }

    private mutating func setup(_ request: RTSPMessage, url: String, path: String, resource: (String) -> Resource?) -> (response: RTSPMessage, event: Event?) {
        // SETUP names the medium: the resource's path plus its control (`/live/trackID=0`), or
        // the resource itself (control `*`, one medium).
        var resourcePath = path
        var control: String?
        var found = resource(path)
        if found == nil, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            resourcePath = String(path[..<slash])
            control = String(path[path.index(after: slash)...])
            found = resource(resourcePath)
        }
        guard let found else { return (reply(404, "Not Found", to: request), nil) }
        guard let header = request["Transport"] else { return (reply(461, "Unsupported Transport", to: request, note: "no Transport header"), nil) }
        let offers: [RTSPTransport]
        do { offers = try RTSPTransport.parse(header: header) } catch {
            return (reply(error.code == .unsupported ? 461 : 400, error.code == .unsupported ? "Unsupported Transport" : "Bad Request", to: request, note: error.reason), nil)
        }
        let recording = found == .recordable
        let media: [RTPPayloadFormat]
        if recording {
            guard let publisher = announced[resourcePath] else { return (reply(455, "Method Not Valid in This State", to: request, note: "ANNOUNCE first"), nil) }
            media = publisher
        } else {
            media = found.media ?? []
        }
        let format: RTPPayloadFormat
        if media.count == 1 {
            format = media[0]  // (one medium: whatever control the URL ends in, as clients have it)
        } else if let control, let medium = media.first(where: { $0.control == control }) {
            format = medium
        } else if control == nil {
            return (reply(459, "Aggregate Operation Not Allowed", to: request, note: "SETUP each medium: \(media.compactMap(\.control).joined(separator: ", "))"), nil)
        } else {
            return (reply(404, "Not Found", to: request, note: "no medium \(control!) here"), nil)
        }
        guard var transport = offers.first(where: {
            !$0.isMulticast && configuration.transports.contains($0.lower) && ($0.lower == .tcp || $0.clientPorts != nil) && (recording || !$0.isRecord)
        }) else {
            return (reply(461, "Unsupported Transport", to: request, note: "unicast UDP with client_port, or TCP interleaved\(recording ? ", mode=record" : "")"), nil)
        }
        var existing: SessionState?
        if let id = request["Session"].map(Self.sessionID) {
            guard let state = sessions[id] else { return (reply(454, "Session Not Found", to: request), nil) }
            guard state.state == .ready, !state.started, state.session.path == resourcePath else {
                let note = state.state != .ready || state.started ? "SETUP goes before PLAY (or RECORD)" : "a session holds the media of one resource"
                return (reply(455, "Method Not Valid in This State", to: request, note: note), nil)
            }
            existing = state
        } else if sessions.count >= Self.maximumSessions {
            return (reply(453, "Not Enough Bandwidth", to: request, note: "at most \(Self.maximumSessions) sessions a connection"), nil)
        }
        // A medium set up again (a new transport) keeps its identifiers.
        let index = existing?.session.streams.firstIndex { $0.format == format }
        let previous = index.map { existing!.session.streams[$0] }
        if transport.lower == .tcp {
            if let channels = previous?.transport.interleaved { usedChannels.subtract([channels.lowerBound, channels.upperBound]) }
            if let asked = transport.interleaved, !usedChannels.contains(asked.lowerBound), !usedChannels.contains(asked.upperBound), asked.count == 2 {
                transport.interleaved = asked
            } else {
                guard let low = stride(from: 0, to: 254, by: 2).first(where: { !usedChannels.contains($0) && !usedChannels.contains($0 + 1) }) else {
                    if let channels = previous?.transport.interleaved { usedChannels.formUnion([channels.lowerBound, channels.upperBound]) }
                    return (reply(461, "Unsupported Transport", to: request, note: "no interleaved channels left"), nil)
                }
                transport.interleaved = low...(low + 1)
            }
            usedChannels.formUnion([transport.interleaved!.lowerBound, transport.interleaved!.upperBound])
            transport.clientPorts = nil
        } else {
            if let channels = previous?.transport.interleaved { usedChannels.subtract([channels.lowerBound, channels.upperBound]) }
            transport.serverPorts = configuration.serverPorts
            transport.interleaved = nil  // (a UDP offer naming channels names nothing)
        }
        let ssrc = previous?.ssrc ?? UInt32(truncatingIfNeeded: random.next())
        transport.ssrc = recording ? nil : ssrc
        transport.otherParameters = []
        let stream = Stream(format: format, transport: transport, ssrc: ssrc,
                            initialSequenceNumber: previous?.initialSequenceNumber ?? UInt16(truncatingIfNeeded: random.next()),
                            initialTimestamp: previous?.initialTimestamp ?? UInt32(truncatingIfNeeded: random.next()))
        var session = existing?.session
            ?? Session(id: String(random.next() & 0xFFFF_FFFF_FFFF, radix: 16).uppercased(), path: resourcePath, streams: [], isRecording: recording)
        if let index {
            session.streams[index] = stream
        } else {
            // In the order the description lists the media, whatever order they are set up in
            // (RTP-Info lists them so).
            let rank = { (format: RTPPayloadFormat) in media.firstIndex(of: format) ?? media.count }
            let place = session.streams.firstIndex { rank($0.format) > rank(format) } ?? session.streams.count
            session.streams.insert(stream, at: place)
        }
        sessions[session.id] = SessionState(session: session, state: .ready)
        var response = reply(200, "OK", to: request)
        response.headers += [("Transport", transport.description), ("Session", "\(session.id);timeout=\(configuration.sessionTimeout)")]
        return (response, nil)
    }

    /// A request of a session; `url` is the request's without its token, `token` that token's
    /// path segment (`/token.…`, or empty), put back into the URLs the answer names.
    private mutating func sessionRequest(_ request: RTSPMessage, url: String, token: String, method: String) -> (response: RTSPMessage, event: Event?) {
        guard let id = request["Session"].map(Self.sessionID) else {
            // A keep-alive without a session (GStreamer and ffmpeg send GET_PARAMETER so) is fine.
            if method == "GET_PARAMETER" || method == "SET_PARAMETER" { return (reply(200, "OK", to: request), nil) }
            return (reply(454, "Session Not Found", to: request, note: "no Session header"), nil)
        }
        guard var state = sessions[id] else { return (reply(454, "Session Not Found", to: request), nil) }
        var response = reply(200, "OK", to: request)
        response.headers.append(("Session", "\(id);timeout=\(configuration.sessionTimeout)"))
        var event: Event?
        switch method {
        case "PLAY":
            guard !state.session.isRecording else { return (reply(455, "Method Not Valid in This State", to: request, note: "a recording session"), nil) }
            var start: Double?
            if let range = request["Range"] {
                guard let parsed = Self.nptStart(range) else { return (reply(457, "Invalid Range", to: request), nil) }
                start = parsed
            }
            response.headers.append(("Range", "npt=\(Self.format(start ?? 0))-"))
            // The aggregate URL (a PLAY of one medium's URL names its resource all the same).
            var base = url
            if let query = base.firstIndex(of: "?") { base = String(base[..<query]) }
            while base.count > 1, base.hasSuffix("/") { base.removeLast() }
            if Self.normalizedPath(base) != state.session.path, let slash = base.lastIndex(of: "/") { base = String(base[..<slash]) }
            if !token.isEmpty {
                let (prefix, path, rest) = Self.split(base)
                base = prefix + token + path + rest
            }
            let info = state.session.streams.map { stream in
                let control = stream.format.control ?? "*"
                let trackURL = control == "*" || RTSPURL.hasScheme(control) ? base
                    : (base.hasSuffix(control) ? base : base + (base.hasSuffix("/") ? "" : "/") + control)
                return "url=\(trackURL);seq=\(stream.initialSequenceNumber);rtptime=\(stream.initialTimestamp)"
            }
            response.headers.append(("RTP-Info", info.joined(separator: ",")))
            if state.state != .playing { event = .play(state.session, from: start) }
            state.state = .playing
            state.started = true
        case "PAUSE":
            guard !state.session.isRecording else { return (reply(455, "Method Not Valid in This State", to: request), nil) }
            if state.state == .playing { event = .pause(state.session) }
            state.state = .ready
        case "RECORD":
            guard state.session.isRecording else { return (reply(455, "Method Not Valid in This State", to: request, note: "not set up with mode=record"), nil) }
            if state.state != .recording { event = .record(state.session) }
            state.state = .recording
            state.started = true
        case "TEARDOWN":
            sessions[id] = nil
            for stream in state.session.streams {
                if let channels = stream.transport.interleaved { usedChannels.subtract([channels.lowerBound, channels.upperBound]) }
            }
            return (response, .teardown(state.session))
        default:  // GET_PARAMETER, SET_PARAMETER: keep-alives
            break
        }
        sessions[id] = state
        return (response, event)
    }

    private mutating func reply(_ status: Int, _ reason: String, to request: RTSPMessage, note: String? = nil) -> RTSPMessage {
        if status >= 400 { errorsAnswered += 1 }
        var headers: [(name: String, value: String)] = []
        if let sequence = request.sequenceNumber { headers.append(("CSeq", String(sequence))) }
        headers.append(("Server", configuration.serverName))
        var body: [UInt8] = []
        if let note, status >= 400 {
            headers.append(("Content-Type", "text/plain"))
            body = Array((note.prefix(200) + "\r\n").utf8)
        }
        return RTSPMessage(.response(status: status, reason: reason), headers: headers, body: body)
    }

    /// The path a request URL names, as resources are looked up: `/live` from
    /// `rtsp://host:port/live/?x`, `/live/` or `live`; `*` for `*`.
    public static func normalizedPath(_ url: String) -> String {
        var rest = Substring(url)
        if rest.lowercased().hasPrefix("rtsp://") || rest.lowercased().hasPrefix("rtsps://") {
            rest = rest[rest.index(rest.startIndex, offsetBy: rest.lowercased().hasPrefix("rtsp://") ? 7 : 8)...]
            rest = rest[(rest.firstIndex(of: "/") ?? rest.endIndex)...]
        }
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        while rest.count > 1, rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.isEmpty { return "/" }
        return rest == "*" || rest.hasPrefix("/") ? String(rest) : "/" + rest
    }

    /// A request URL in three: `rtsp://host:port`, the path (`/` when none), and the query.
    static func split(_ url: String) -> (prefix: String, path: String, rest: String) {
        var prefix = Substring(""), rest = Substring(url)
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            let afterScheme = rest[rest.index(colon, offsetBy: 3)...]
            let pathStart = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
            prefix = rest[..<pathStart]
            rest = rest[pathStart...]
        }
        let queryStart = rest.firstIndex(of: "?") ?? rest.endIndex
        let path = rest[..<queryStart]
        return (String(prefix), path.isEmpty ? "/" : String(path), String(rest[queryStart...]))
    }

    /// The identifier of a `Session` header (`ABC123;timeout=60` → `ABC123`).
    static func sessionID(_ header: String) -> String {
        String(header.split(separator: ";", maxSplits: 1).first?.trimmingSpaces() ?? "")
    }

    /// The latest start a `Range` may ask for, seconds (about 31 years): past it, or not a
    /// finite number, a range is refused with 457, never computed with.
    static let maximumRangeStart = 1e9

    /// The start of `npt=12.5-` or `npt=now-` (nil start: now), nil when it is not an NPT range
    /// or its start is not a finite time of at most ``maximumRangeStart`` seconds.
    static func nptStart(_ range: String) -> Double? {
        let value = range.split(separator: ";").first?.trimmingSpaces() ?? ""
        guard value.lowercased().hasPrefix("npt=") else { return nil }
        let start = value.dropFirst(4).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).first?.trimmingSpaces() ?? ""
        if start.isEmpty || start == "now" { return 0 }
        let seconds: Double
        if let plain = Double(start) {
            seconds = plain
        } else {
            // hh:mm:ss(.fraction)
            let parts = start.split(separator: ":")
            guard parts.count == 3, let hours = Double(parts[0]), let minutes = Double(parts[1]), let rest = Double(parts[2]), hours >= 0, minutes >= 0, rest >= 0 else { return nil }
            seconds = hours * 3600 + minutes * 60 + rest
        }
        guard seconds.isFinite, seconds >= 0, seconds <= maximumRangeStart else { return nil }
        return seconds
    }

    /// `seconds` as NPT with milliseconds (`12.500`); a time past ``maximumRangeStart`` or not
    /// finite (never given: ``nptStart(_:)`` refuses them) is written as the limit, or 0.
    static func format(_ seconds: Double) -> String {
        let clamped = seconds.isFinite ? min(max(seconds, 0), maximumRangeStart) : 0
        let thousandths = Int((clamped * 1000).rounded())
        return "\(thousandths / 1000)." + String(thousandths % 1000).leftPadded(to: 3)
    }
}

/// Random numbers for identifiers: the system's, or a repeatable sequence (SplitMix64) for tests.
struct RandomSource: Sendable, Hashable {
    private var state: UInt64?

    init(seed: UInt64?) { state = seed }

    mutating func next() -> UInt64 {
        guard var value = state else {
            var generator = SystemRandomNumberGenerator()
            return generator.next()
        }
        value &+= 0x9E37_79B9_7F4A_7C15
        state = value
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
