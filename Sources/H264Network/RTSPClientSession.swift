/// The client side of an RTSP session that plays (RFC 2326): `OPTIONS`, `DESCRIBE`, `SETUP` of
/// the first H.264 video medium, `PLAY`, then keep-alives and `TEARDOWN`, as a pure state
/// machine: responses in, the next request out. The connection around it owns the sockets.
/// The description's other media (a camera's sound) are not set up; ``Setup/mediaNotSetUp``
/// names them, for the caller to say so.
///
/// A 401 is answered once with the credentials (Digest when offered, else Basic), and every
/// later request carries them. Transports are offered in the order given: when the server
/// refuses one (461), the next is asked for, which is how a client falls back from UDP to TCP
/// interleaved.
public struct RTSPClientSession: Sendable {
    /// What to do next.
    public enum Step: Sendable, Hashable {
        /// Send this request and give the response to ``receive(_:)``.
        case send(RTSPMessage)
        /// The stream plays: receive it as the answered transport says.
        case playing(Setup)
    }

    /// The stream set up.
    public struct Setup: Sendable, Hashable {
        /// The session identifier.
        public var sessionID: String
        /// Seconds without a request after which the server drops the session.
        public var timeout: Int
        /// The transport the server answered (ports or interleaved channels, its SSRC).
        public var transport: RTSPTransport
        /// The medium's payload format from the session description.
        public var format: H264PayloadFormat
        /// The medium's control URL.
        public var controlURL: String
        /// The sequence number and RTP timestamp of the first packet (`RTP-Info`), when given.
        public var firstSequenceNumber: UInt16?
        /// The RTP timestamp of the first sample (`RTP-Info`), when given.
        public var firstTimestamp: UInt32?
        /// The description's other media, not set up (``SessionDescription/Media/summary``):
        /// a camera's sound, which this session does not play yet.
        public var mediaNotSetUp: [String] = []
    }

    private enum State: Sendable, Hashable { case options, describe, setup, play, playing, done }

    /// The address played.
    public let url: RTSPURL
    /// The transports to ask for, in order of preference.
    public let transports: [RTSPTransport]
    /// The `User-Agent` header.
    public let userAgent: String
    private var state = State.options
    private var sequence = 0
    private var pending: RTSPMessage?
    private var challenges: [String]?
    private var triedCredentials = false
    private var nonceCount = 0
    private var transportIndex = 0
    private var contentBase: String
    private var format: H264PayloadFormat?
    private var sessionID: String?
    private var timeout = 60
    private var answered: RTSPTransport?
    private var mediaNotSetUp: [String] = []

    /// A session to play `url`, offering `transports` in that order (a UDP transport with
    /// client ports, then TCP interleaved, say).
    public init(url: RTSPURL, transports: [RTSPTransport], userAgent: String = "H264Kit") {
        self.url = url
        self.transports = transports
        self.userAgent = userAgent
        contentBase = url.description
    }

    /// The first request.
    public mutating func start() -> RTSPMessage {
        state = .options
        return request("OPTIONS", url.description)
    }

    /// The next step after `response` (to the last request sent); an error when the server
    /// refuses, or answers what cannot be played.
    public mutating func receive(_ response: RTSPMessage) throws(NetworkError) -> Step {
        guard case .response(let status, let reason) = response.startLine else {
            throw NetworkError(.invalidDescription, "the server sent a request where a response was due")
        }
        if let sent = pending?.sequenceNumber, let got = response.sequenceNumber, sent != got {
            throw NetworkError(.invalidDescription, "a response with CSeq \(got) to request \(sent)")
        }
        if status == 401, let pending, !triedCredentials || response.headers.contains(where: { $0.name.lowercased() == "www-authenticate" && $0.value.lowercased().contains("stale=true") }) {
            guard url.credentials != nil else { throw NetworkError(.unsupported, "\(url): 401 \(reason): the server wants credentials (rtsp://USER:PASSWORD@HOST/PATH)") }
            challenges = response.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
            triedCredentials = true
            guard case .request(let method, let target) = pending.startLine else { throw NetworkError(.unsupported, "401 to no request") }
            return .send(request(method, target, headers: pending.headers.filter { !["cseq", "authorization"].contains($0.name.lowercased()) }, body: pending.body))
        }
        if status == 461, state == .setup {
            guard transportIndex + 1 < transports.count else {
                throw NetworkError(.transportRefused, "\(url): the server refused \(transports[transportIndex].lower) (\(status) \(reason))")
            }
            transportIndex += 1
            return .send(setupRequest())
        }
        guard (200..<300).contains(status) else {
            throw NetworkError(status == 401 ? .unsupported : .source, "\(url): the server answered \(pendingMethod) with \(status) \(reason)"
                               + (response.body.isEmpty ? "" : ": " + String(decoding: response.body.prefix(200), as: UTF8.self).trimmingSpaces()))
        }
        switch state {
        case .options:
            state = .describe
            return .send(request("DESCRIBE", url.description, headers: [("Accept", "application/sdp")]))
        case .describe:
            let description: SessionDescription
            do { description = try SessionDescription(parsing: String(decoding: response.body, as: UTF8.self)) } catch {
                throw NetworkError(.invalidDescription, "\(url): DESCRIBE: the session description does not parse", cause: error)
            }
            var found: H264PayloadFormat?
            for medium in description.media {
                if found == nil, medium.type == "video", let parsed = try? H264PayloadFormat(medium: medium) { found = parsed } else { mediaNotSetUp.append(medium.summary) }
            }
            guard let found else { throw NetworkError(.unsupported, "\(url): the session description has no H.264 video medium") }
            guard !transports.isEmpty else { throw NetworkError(.unsupported, "\(url): no transport to ask for (the session was made with none)") }
            format = found
            if let base = response["Content-Base"] ?? response["Content-Location"] { contentBase = base }
            state = .setup
            return .send(setupRequest())
        case .setup:
            guard let header = response["Session"] else { throw NetworkError(.invalidDescription, "\(url): SETUP answered without a Session header") }
            let parts = header.split(separator: ";").map { $0.trimmingSpaces() }
            sessionID = parts.first.map(String.init)
            if let value = parts.dropFirst().first(where: { $0.lowercased().hasPrefix("timeout=") }), let seconds = Int(value.dropFirst(8)), seconds > 0 {
                timeout = min(seconds, 3600)
            }
            guard let transportHeader = response["Transport"], let transport = try RTSPTransport.parse(header: transportHeader).first else {
                throw NetworkError(.invalidDescription, "\(url): SETUP answered without a Transport header")
            }
            guard transport.lower == transports[transportIndex].lower else {
                throw NetworkError(.unsupported, "\(url): asked for \(transports[transportIndex]), the server answered \(transport)")
            }
            answered = transport
            state = .play
            return .send(request("PLAY", contentBase, headers: [("Range", "npt=0.000-")]))
        case .play:
            state = .playing
            guard let format, let sessionID, let answered else { throw NetworkError(.invalidDescription, "\(url): PLAY before SETUP") }
            var setup = Setup(sessionID: sessionID, timeout: timeout, transport: answered, format: format, controlURL: controlURL, mediaNotSetUp: mediaNotSetUp)
            if let info = response["RTP-Info"] {
                for field in info.split(separator: ",").first?.split(separator: ";") ?? [] {
                    let pair = field.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
                    guard pair.count == 2 else { continue }
                    if pair[0].lowercased() == "seq" { setup.firstSequenceNumber = UInt16(pair[1]) }
                    if pair[0].lowercased() == "rtptime" { setup.firstTimestamp = UInt32(pair[1]) }
                }
            }
            return .playing(setup)
        case .playing, .done:
            // A response to a keep-alive (or after the teardown).
            guard let format, let sessionID, let answered else { throw NetworkError(.invalidDescription, "\(url): a response with no session playing") }
            return .playing(Setup(sessionID: sessionID, timeout: timeout, transport: answered, format: format, controlURL: controlURL, mediaNotSetUp: mediaNotSetUp))
        }
    }

    /// A keep-alive for a playing session (`GET_PARAMETER`, which GStreamer's and ffmpeg's
    /// clients send too); send one every half ``Setup/timeout``. Its response needs no
    /// ``receive(_:)``.
    public mutating func keepAlive() -> RTSPMessage {
        request("GET_PARAMETER", contentBase)
    }

    /// The closing `TEARDOWN`.
    public mutating func teardown() -> RTSPMessage {
        state = .done
        return request("TEARDOWN", contentBase)
    }

    private var controlURL: String {
        guard let base = try? RTSPURL(parsing: contentBase) else { return contentBase }
        return base.resolving(control: format?.control)
    }

    private var pendingMethod: String {
        if case .request(let method, _)? = pending?.startLine { return method }
        return "a request"
    }

    private mutating func setupRequest() -> RTSPMessage {
        request("SETUP", controlURL, headers: [("Transport", transports[transportIndex].description)])
    }

    private mutating func request(_ method: String, _ target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) -> RTSPMessage {
        sequence += 1
        var all: [(name: String, value: String)] = [("CSeq", String(sequence)), ("User-Agent", userAgent)]
        if let sessionID, method != "OPTIONS" || state == .playing { all.append(("Session", sessionID)) }
        if let challenges, let credentials = url.credentials {
            nonceCount += 1
            if let authorization = try? credentials.authorization(method: method, uri: target, challenges: challenges, count: nonceCount) {
                all.append(("Authorization", authorization))
            }
        }
        all += headers.filter { $0.name.lowercased() != "session" }
        let message = RTSPMessage(.request(method: method, url: target), headers: all, body: body)
        if method != "GET_PARAMETER" { pending = message }
        return message
    }
}
