/// The client side of an RTSP session that plays (RFC 2326): `OPTIONS`, `DESCRIBE`, `SETUP` of
/// the first H.264 video medium, `PLAY`, then keep-alives and `TEARDOWN`, as a pure state
/// machine: responses in, the next request out. The connection around it owns the sockets.
/// Made with ``audioTransports``, it sets up the description's first AAC medium (RFC 3640 or
/// RFC 6416 LATM with its configuration in the description) too,
/// in the same session, after the picture; the other media are not set up, and
/// ``Setup/mediaNotSetUp`` names them, for the caller to say so.
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
        /// The sound set up beside the picture (its first AAC medium), when the session was
        /// made with transports for it.
        public var audio: MediumSetup?
        /// The description's other media, not set up (``SessionDescription/Media/summary``).
        public var mediaNotSetUp: [String] = []
    }

    /// The sound's medium as set up.
    public struct MediumSetup: Sendable, Hashable {
        /// Its payload format (RFC 3640 `mpeg4-generic` or RFC 6416 `MP4A-LATM`).
        public var format: AudioPayloadFormat
        /// The transport the server answered for it.
        public var transport: RTSPTransport
        /// Its control URL.
        public var controlURL: String
        /// The sequence number of its first packet (`RTP-Info`), when given.
        public var firstSequenceNumber: UInt16?
        /// The RTP timestamp of its first sample (`RTP-Info`), when given.
        public var firstTimestamp: UInt32?
    }

    private enum State: Sendable, Hashable { case options, describe, setup, setupAudio, play, playing, done }

    /// The address played.
    public let url: RTSPURL
    /// The transports to ask for, in order of preference.
    public let transports: [RTSPTransport]
    /// The sound's transport beside each of ``transports`` (the same lower transport: the next
    /// UDP port pair, the next interleaved channels); empty: the sound is not set up.
    public let audioTransports: [RTSPTransport]
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
    private var audio: (format: AudioPayloadFormat, summary: String)?
    private var answeredAudio: RTSPTransport?

    /// A session to play `url`, offering `transports` in that order (a UDP transport with
    /// client ports, then TCP interleaved, say).
    public init(url: RTSPURL, transports: [RTSPTransport], audioTransports: [RTSPTransport] = [], userAgent: String = "H264Kit") {
        self.url = url
        self.transports = transports
        self.audioTransports = audioTransports
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
        if state == .setupAudio, !(200..<300).contains(status), status != 401 {
            // The sound refused: the picture plays alone, the sound named as not set up.
            if let audio { mediaNotSetUp.append(audio.summary) }
            audio = nil
            state = .play
            return .send(request("PLAY", contentBase, headers: [("Range", "npt=0.000-")]))
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
                if found == nil, medium.type == "video", let parsed = try? H264PayloadFormat(medium: medium) {
                    found = parsed
                } else if audio == nil, !audioTransports.isEmpty, let parsed = AudioPayloadFormat(medium: medium), parsed.isReceivable {
                    audio = (parsed, medium.summary)
                } else {
                    mediaNotSetUp.append(medium.summary)
                }
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
            if let audio, transportIndex < audioTransports.count {
                state = .setupAudio
                return .send(request("SETUP", resolved(audio.format.control), headers: [("Transport", audioTransports[transportIndex].description)]))
            }
            if let audio { mediaNotSetUp.append(audio.summary) }
            audio = nil
            state = .play
            return .send(request("PLAY", contentBase, headers: [("Range", "npt=0.000-")]))
        case .setupAudio:
            guard let transportHeader = response["Transport"], let transport = try RTSPTransport.parse(header: transportHeader).first,
                  transport.lower == audioTransports[transportIndex].lower else {
                throw NetworkError(.invalidDescription, "\(url): SETUP of the sound answered without a Transport header of \(audioTransports[transportIndex].lower)")
            }
            answeredAudio = transport
            state = .play
            return .send(request("PLAY", contentBase, headers: [("Range", "npt=0.000-")]))
        case .play:
            state = .playing
            guard let format, let sessionID, let answered else { throw NetworkError(.invalidDescription, "\(url): PLAY before SETUP") }
            var setup = self.setup(sessionID: sessionID, answered: answered, format: format)
            // RTP-Info (RFC 2326 §12.33): an entry per medium, named by its URL.
            let entries = (response["RTP-Info"] ?? "").split(separator: ",").map { entry in
                var fields: (url: String?, seq: UInt16?, time: UInt32?) = (nil, nil, nil)
                for field in entry.split(separator: ";") {
                    let pair = field.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
                    guard pair.count == 2 else { continue }
                    switch pair[0].lowercased() {
                    case "url": fields.url = String(pair[1])
                    case "seq": fields.seq = UInt16(pair[1])
                    case "rtptime": fields.time = UInt32(pair[1])
                    default: break
                    }
                }
                return fields
            }
            func entry(for control: String) -> (url: String?, seq: UInt16?, time: UInt32?)? {
                entries.first { $0.url.map { control.hasSuffix($0) || $0.hasSuffix(control) || $0 == control } ?? false }
            }
            if let video = entry(for: controlURL) ?? (setup.audio == nil ? entries.first : nil) {
                setup.firstSequenceNumber = video.seq
                setup.firstTimestamp = video.time
            }
            if let control = setup.audio?.controlURL, let sound = entry(for: control) {
                setup.audio?.firstSequenceNumber = sound.seq
                setup.audio?.firstTimestamp = sound.time
            }
            return .playing(setup)
        case .playing, .done:
            // A response to a keep-alive (or after the teardown).
            guard let format, let sessionID, let answered else { throw NetworkError(.invalidDescription, "\(url): a response with no session playing") }
            return .playing(setup(sessionID: sessionID, answered: answered, format: format))
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

    private var controlURL: String { resolved(format?.control) }

    /// A medium's control URL against the content base.
    private func resolved(_ control: String?) -> String {
        guard let base = try? RTSPURL(parsing: contentBase) else { return contentBase }
        return base.resolving(control: control)
    }

    /// What plays, as set up.
    private func setup(sessionID: String, answered: RTSPTransport, format: H264PayloadFormat) -> Setup {
        var setup = Setup(sessionID: sessionID, timeout: timeout, transport: answered, format: format, controlURL: controlURL, mediaNotSetUp: mediaNotSetUp)
        if let audio, let answeredAudio {
            setup.audio = MediumSetup(format: audio.format, transport: answeredAudio, controlURL: resolved(audio.format.control))
        }
        return setup
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
