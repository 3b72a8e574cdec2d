import H264Network
import MediaCore
import Testing

/// The RTSP state machines driven request by request, with no sockets: the server's answers
/// and events, the client's requests, authentication (RFC 2617's own example), URLs.
@Suite("RTSP state machines")
struct RTSPSessionTests {
    static let format: H264PayloadFormat = {
        var format = H264PayloadFormat(formatDescription: try! VideoFormatDescription(
            sequenceParameterSets: [[0x67, 0x42, 0xC0, 0x1E, 0xDA, 0x02, 0x80, 0xBF, 0xE5, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xF0, 0x3C, 0x58, 0xBA, 0x80]],
            pictureParameterSets: [[0x68, 0xCE, 0x0F, 0x2C, 0x80]]))
        format.control = "trackID=0"
        return format
    }()

    /// AAC-LC, 48 kHz stereo, as the second medium of `/av`.
    static let audioFormat = MPEG4GenericPayloadFormat(formatDescription: try! AudioFormatDescription(aacConfiguration: [0x11, 0x90]), payloadType: 97,
                                                       control: "trackID=1")

    static func resource(_ path: String) -> RTSPServerConnection.Resource? {
        switch path {
        case "/live": .playable(format)
        case "/av": .playableMedia([.h264(format), .mpeg4Generic(audioFormat)])
        case "/publish": .recordable
        default: nil
        }
    }

    static func request(_ method: String, _ url: String, _ sequence: Int, _ headers: [(name: String, value: String)] = [], body: String = "") -> RTSPMessage {
        RTSPMessage(.request(method: method, url: url), headers: [("CSeq", String(sequence))] + headers, body: Array(body.utf8))
    }

    static func status(_ message: RTSPMessage) -> Int {
        if case .response(let status, _) = message.startLine { return status }
        return 0
    }

    @Test("a client's whole session: OPTIONS, DESCRIBE, SETUP over UDP, PLAY, PAUSE, PLAY, TEARDOWN")
    func playingSession() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 7)
        let options = server.respond(to: Self.request("OPTIONS", "rtsp://127.0.0.1:8554/live", 1), resource: Self.resource)
        #expect(Self.status(options.response) == 200 && options.response["Public"]?.contains("DESCRIBE") == true && options.response["CSeq"] == "1")
        let describe = server.respond(to: Self.request("DESCRIBE", "rtsp://127.0.0.1:8554/live", 2), resource: Self.resource)
        #expect(Self.status(describe.response) == 200 && describe.response["Content-Type"] == "application/sdp")
        #expect(describe.response["Content-Base"] == "rtsp://127.0.0.1:8554/live/")
        let sdp = try SessionDescription(parsing: String(decoding: describe.response.body, as: UTF8.self))
        let medium = try #require(sdp.media.first)
        let format = try H264PayloadFormat(medium: medium)
        #expect(format == Self.format && format.control == "trackID=0")

        let setup = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/live/trackID=0", 3, [("Transport", "RTP/AVP;unicast;client_port=5000-5001")]),
                                   resource: Self.resource)
        #expect(Self.status(setup.response) == 200 && setup.event == nil)
        let session = try #require(server.activeSessions.first)
        #expect(setup.response["Session"] == "\(session.id);timeout=60")
        let transportHeader = try #require(setup.response["Transport"])
        let transport = try #require(try RTSPTransport.parse(header: transportHeader).first)
        #expect(transport.lower == .udp && transport.clientPorts == 5000...5001 && transport.serverPorts == 6970...6971 && transport.ssrc == session.ssrc)

        let play = server.respond(to: Self.request("PLAY", "rtsp://127.0.0.1:8554/live/", 4, [("Session", session.id), ("Range", "npt=0.000-")]), resource: Self.resource)
        #expect(Self.status(play.response) == 200 && play.event == .play(session, from: 0))
        #expect(play.response["RTP-Info"] == "url=rtsp://127.0.0.1:8554/live/trackID=0;seq=\(session.initialSequenceNumber);rtptime=\(session.initialTimestamp)")
        let again = server.respond(to: Self.request("PLAY", "rtsp://127.0.0.1:8554/live/", 5, [("Session", session.id)]), resource: Self.resource)
        #expect(Self.status(again.response) == 200 && again.event == nil)  // already playing
        let pause = server.respond(to: Self.request("PAUSE", "rtsp://127.0.0.1:8554/live/", 6, [("Session", session.id)]), resource: Self.resource)
        #expect(pause.event == .pause(session))
        let keepAlive = server.respond(to: Self.request("GET_PARAMETER", "rtsp://127.0.0.1:8554/live/", 7, [("Session", session.id)]), resource: Self.resource)
        #expect(Self.status(keepAlive.response) == 200 && keepAlive.event == nil)
        let teardown = server.respond(to: Self.request("TEARDOWN", "rtsp://127.0.0.1:8554/live/", 8, [("Session", session.id)]), resource: Self.resource)
        #expect(teardown.event == .teardown(session) && server.activeSessions.isEmpty)
        #expect(server.errorsAnswered == 0)
    }

    @Test("two media (H.264 and AAC): both described, each set up by its control into one session with its own SSRC, numbers and channels, played, paused and torn down as one; the aggregate URL refused for SETUP, an unknown control 404")
    func twoMedia() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 11)
        let describe = server.respond(to: Self.request("DESCRIBE", "rtsp://127.0.0.1:8554/av", 1), resource: Self.resource)
        let sdp = try SessionDescription(parsing: String(decoding: describe.response.body, as: UTF8.self))
        #expect(sdp.media.map(\.type) == ["video", "audio"])
        #expect(try H264PayloadFormat(medium: sdp.media[0]) == Self.format && MPEG4GenericPayloadFormat(medium: sdp.media[1]) == Self.audioFormat)
        let aggregate = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/av", 2, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")]),
                                       resource: Self.resource)
        #expect(Self.status(aggregate.response) == 459)
        let unknown = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/av/trackID=7", 3, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")]),
                                     resource: Self.resource)
        #expect(Self.status(unknown.response) == 404)
        let video = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/av/trackID=0", 4, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")]),
                                   resource: Self.resource)
        let id = try #require(server.activeSessions.first?.id)
        #expect(Self.status(video.response) == 200)
        // The second medium, in the same session; its client asks for the channels taken already.
        let audio = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/av/trackID=1", 5, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1"), ("Session", id)]),
                                   resource: Self.resource)
        #expect(Self.status(audio.response) == 200 && server.activeSessions.count == 1)
        let session = try #require(server.activeSessions.first)
        #expect(session.streams.map(\.format) == [.h264(Self.format), .mpeg4Generic(Self.audioFormat)])
        #expect(session.streams.map(\.transport.interleaved) == [0...1, 2...3])
        #expect(session.streams[0].ssrc != session.streams[1].ssrc && session.format == Self.format)
        #expect(try RTSPTransport.parse(header: audio.response["Transport"] ?? "").first?.ssrc == session.streams[1].ssrc)
        // The same medium again replaces its transport, keeping its identifiers.
        let again = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/av/trackID=1", 6, [("Transport", "RTP/AVP/TCP;unicast;interleaved=6-7"), ("Session", id)]),
                                   resource: Self.resource)
        let replaced = try #require(server.activeSessions.first)
        #expect(Self.status(again.response) == 200 && replaced.streams.count == 2 && replaced.streams[1].transport.interleaved == 6...7)
        #expect(replaced.streams[1].ssrc == session.streams[1].ssrc && replaced.streams[1].initialSequenceNumber == session.streams[1].initialSequenceNumber)

        let play = server.respond(to: Self.request("PLAY", "rtsp://127.0.0.1:8554/av/", 7, [("Session", id)]), resource: Self.resource)
        #expect(Self.status(play.response) == 200 && play.event == .play(replaced, from: nil))
        let info = replaced.streams.map { "url=rtsp://127.0.0.1:8554/av/trackID=\($0 == replaced.streams[0] ? 0 : 1);seq=\($0.initialSequenceNumber);rtptime=\($0.initialTimestamp)" }
        #expect(play.response["RTP-Info"] == info.joined(separator: ","))
        let pause = server.respond(to: Self.request("PAUSE", "rtsp://127.0.0.1:8554/av/", 8, [("Session", id)]), resource: Self.resource)
        #expect(pause.event == .pause(replaced))
        let teardown = server.respond(to: Self.request("TEARDOWN", "rtsp://127.0.0.1:8554/av/", 9, [("Session", id)]), resource: Self.resource)
        #expect(teardown.event == .teardown(replaced) && server.activeSessions.isEmpty)
        // Every channel is free again.
        let next = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/av/trackID=0", 10, [("Transport", "RTP/AVP/TCP;unicast;interleaved=6-7")]),
                                  resource: Self.resource)
        #expect(try RTSPTransport.parse(header: next.response["Transport"] ?? "").first?.interleaved == 6...7)
    }

    @Test("with an access key: a signed URL's session runs (Content-Base and RTP-Info keep the token, so every later URL carries it); no token, an expired one or another presentation's is 403; OPTIONS needs none")
    func signedURLs() throws {
        let key = try URLSigningKey(secret: Array("the RTSP test's secret key".utf8))
        var configuration = RTSPServerConnection.Configuration(serverPorts: 6970...6971)
        configuration.accessKey = key
        var server = RTSPServerConnection(configuration: configuration, seed: 12)
        let signed = try key.signedURL("rtsp://127.0.0.1:8554/av", expires: 1000)
        let token = String(signed.dropFirst("rtsp://127.0.0.1:8554".count).dropLast("/av".count))
        #expect(token.hasPrefix("/token.1000."))
        func respond(_ method: String, _ url: String, _ sequence: Int, _ headers: [(name: String, value: String)] = [], now: Int = 500) -> (response: RTSPMessage, event: RTSPServerConnection.Event?) {
            server.respond(to: Self.request(method, url, sequence, headers), now: now, resource: Self.resource)
        }
        #expect(Self.status(respond("OPTIONS", "rtsp://127.0.0.1:8554/av", 1).response) == 200)
        for refused in ["rtsp://127.0.0.1:8554/av", "rtsp://127.0.0.1:8554" + token + "/live", "rtsp://127.0.0.1:8554/token.1000.00/av"] {
            #expect(Self.status(respond("DESCRIBE", refused, 2).response) == 403, "\(refused)")
        }
        #expect(Self.status(respond("DESCRIBE", signed, 3, now: 1001).response) == 403)
        // The whole play, as FFmpeg asks it: every URL from the Content-Base.
        let describe = respond("DESCRIBE", signed, 4)
        #expect(Self.status(describe.response) == 200 && describe.response["Content-Base"] == signed + "/")
        let video = respond("SETUP", signed + "/trackID=0", 5, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")])
        let id = try #require(server.activeSessions.first?.id)
        let audio = respond("SETUP", signed + "/trackID=1", 6, [("Transport", "RTP/AVP/TCP;unicast;interleaved=2-3"), ("Session", id)])
        #expect(Self.status(video.response) == 200 && Self.status(audio.response) == 200 && server.activeSessions.first?.path == "/av")
        #expect(Self.status(respond("SETUP", "rtsp://127.0.0.1:8554/av/trackID=1", 7, [("Transport", "RTP/AVP/TCP;unicast;interleaved=2-3"), ("Session", id)]).response) == 403)
        let play = respond("PLAY", signed + "/", 8, [("Session", id)])
        let session = try #require(server.activeSessions.first)
        #expect(Self.status(play.response) == 200 && play.event == .play(session, from: nil))
        let info = session.streams.map { "url=\(signed)/trackID=\($0 == session.streams[0] ? 0 : 1);seq=\($0.initialSequenceNumber);rtptime=\($0.initialTimestamp)" }
        #expect(play.response["RTP-Info"] == info.joined(separator: ","))
        #expect(respond("TEARDOWN", signed, 9, [("Session", id)]).event == .teardown(session))
        // Without a time (the old call), every token counts as expired.
        #expect(Self.status(server.respond(to: Self.request("DESCRIBE", signed, 10), resource: Self.resource).response) == 403)
    }

    @Test("two media set up sound first are listed in the description's order; a SETUP after PLAY (or after PAUSE) is 455; PLAY on a medium's URL, with a slash or a query, names every medium by the aggregate URL")
    func twoMediaOrderAndLateSetup() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 13)
        _ = server.respond(to: Self.request("SETUP", "rtsp://h/av/trackID=1", 1, [("Transport", "RTP/AVP;unicast;client_port=5002-5003")]), resource: Self.resource)
        let id = try #require(server.activeSessions.first?.id)
        _ = server.respond(to: Self.request("SETUP", "rtsp://h/av/trackID=0", 2, [("Transport", "RTP/AVP;unicast;client_port=5000-5001"), ("Session", id)]),
                           resource: Self.resource)
        let session = try #require(server.activeSessions.first)
        #expect(session.streams.map(\.format.mediaType) == [.video, .audio] && session.transport.clientPorts == 5000...5001)
        let play = server.respond(to: Self.request("PLAY", "rtsp://h/av/trackID=0/?x=1", 3, [("Session", id)]), resource: Self.resource)
        let urls = play.response["RTP-Info"]?.split(separator: ",").map { $0.split(separator: ";").first.map(String.init) ?? "" }
        #expect(urls == ["url=rtsp://h/av/trackID=0", "url=rtsp://h/av/trackID=1"])
        for method in ["PLAY", "PAUSE"] {
            if method == "PAUSE" { _ = server.respond(to: Self.request("PAUSE", "rtsp://h/av", 4, [("Session", id)]), resource: Self.resource) }
            let late = server.respond(to: Self.request("SETUP", "rtsp://h/av/trackID=1", 5, [("Transport", "RTP/AVP/TCP;unicast;interleaved=4-5"), ("Session", id)]),
                                      resource: Self.resource)
            #expect(Self.status(late.response) == 455, "after \(method)")
        }
        #expect(server.activeSessions.first == session)
    }

    @Test("a publisher announcing video, AAC and a medium not recorded (PCMA): each SETUP finds its own medium, the video keeps its transport")
    func publisherWithSeveralMedia() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 17)
        let sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video 0 RTP/AVP 96\r\n"
            + "a=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\na=control:streamid=0\r\n"
            + "m=audio 0 RTP/AVP 8\r\na=rtpmap:8 PCMA/8000\r\na=control:streamid=1\r\n"
            + "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 MPEG4-GENERIC/48000/2\r\na=fmtp:97 profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config=1190\r\n"
            + "a=control:streamid=2\r\n"
        let announce = server.respond(to: Self.request("ANNOUNCE", "rtsp://h/publish", 1, [("Content-Type", "application/sdp")], body: sdp), resource: Self.resource)
        #expect(Self.status(announce.response) == 200)
        var id: String?
        for (index, channels) in [(0, "0-1"), (1, "2-3"), (2, "4-5")] {
            let setup = server.respond(to: Self.request("SETUP", "rtsp://h/publish/streamid=\(index)", 2 + index,
                                                        [("Transport", "RTP/AVP/TCP;unicast;interleaved=\(channels);mode=record")] + (id.map { [("Session", $0)] } ?? [])),
                                       resource: Self.resource)
            #expect(Self.status(setup.response) == 200)
            id = server.activeSessions.first?.id
        }
        let session = try #require(server.activeSessions.first)
        #expect(session.streams.count == 3 && session.format?.packetizationMode == 1)
        #expect(session.streams.map(\.transport.interleaved) == [0...1, 2...3, 4...5])
        #expect(session.streams[0].format.mediaType == .video && session.streams[1].format.payloadType == 8 && session.streams[1].format.clockRate == 8000)
        if case .mpeg4Generic = session.streams[2].format {} else { Issue.record("the AAC medium read as \(session.streams[2].format)") }
    }

    @Test("a UDP offer that names interleaved channels is answered without them, and holds none (found by FuzzRTSP: a TCP session was then given the same channels)")
    func udpOfferNamingChannels() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 5)
        let udp = server.respond(to: Self.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RTP/AVP;unicast;client_port=5000-5001;interleaved=0-1")]),
                                 resource: Self.resource)
        let answered = try #require(try RTSPTransport.parse(header: udp.response["Transport"] ?? "").first)
        #expect(answered.lower == .udp && answered.interleaved == nil && server.activeSessions.first?.transport.interleaved == nil)
        let tcp = server.respond(to: Self.request("SETUP", "rtsp://h/av/trackID=0", 2, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")]), resource: Self.resource)
        #expect(try RTSPTransport.parse(header: tcp.response["Transport"] ?? "").first?.interleaved == 0...1)
    }

    @Test("a PLAY whose Range starts past any time (1e16 s, 0x1p70, 1e308 hours, inf, nan) is refused with 457 (it trapped converting to milliseconds, taking the server down); 24 hours plays",
          arguments: ["npt=1e16-", "npt=0x1p70-", "npt=1e308:0:0-", "npt=inf-", "npt=nan-", "npt=1000000001-"])
    func hostileRangeIsRefused(_ range: String) throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 9)
        _ = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/live/trackID=0", 1, [("Transport", "RTP/AVP;unicast;client_port=5000-5001")]), resource: Self.resource)
        let session = try #require(server.activeSessions.first)
        let refused = server.respond(to: Self.request("PLAY", "rtsp://127.0.0.1:8554/live/", 2, [("Session", session.id), ("Range", range)]), resource: Self.resource)
        #expect(Self.status(refused.response) == 457 && refused.event == nil, "\(range)")
        let day = server.respond(to: Self.request("PLAY", "rtsp://127.0.0.1:8554/live/", 3, [("Session", session.id), ("Range", "npt=24:00:00-")]), resource: Self.resource)
        #expect(Self.status(day.response) == 200 && day.response["Range"] == "npt=86400.000-" && day.event == .play(session, from: 86400))
    }

    @Test("TCP interleaved: channels assigned as asked, or the next free pair")
    func interleavedChannels() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 1)
        let first = server.respond(to: Self.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")]), resource: Self.resource)
        #expect(try RTSPTransport.parse(header: first.response["Transport"] ?? "").first?.interleaved == 0...1)
        let second = server.respond(to: Self.request("SETUP", "rtsp://h/live/trackID=0", 2, [("Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")]), resource: Self.resource)
        #expect(try RTSPTransport.parse(header: second.response["Transport"] ?? "").first?.interleaved == 2...3)
    }

    @Test("bad requests: the right 4xx or 5xx, counted, and the connection goes on", arguments: rtspRefusals)
    func refusals(_ refusal: RTSPRefusal) {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971))
        let answer = server.respond(to: refusal.request, resource: Self.resource)
        #expect(Self.status(answer.response) == refusal.status && answer.event == nil)
        #expect(server.errorsAnswered == 1)
        let options = server.respond(to: Self.request("OPTIONS", "*", 9), resource: Self.resource)
        #expect(Self.status(options.response) == 200)
    }

    @Test("a publisher: ANNOUNCE with ffmpeg's SDP, SETUP with mode=record over UDP, RECORD, TEARDOWN")
    func recordingSession() throws {
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 3)
        let sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\na=tool:libavformat 59.27.100\r\nm=video 0 RTP/AVP 96\r\n"
            + "a=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\na=control:streamid=0\r\n"
        let announce = server.respond(to: Self.request("ANNOUNCE", "rtsp://127.0.0.1:8554/publish", 1, [("Content-Type", "application/sdp")], body: sdp),
                                      resource: Self.resource)
        #expect(Self.status(announce.response) == 200)
        let setup = server.respond(to: Self.request("SETUP", "rtsp://127.0.0.1:8554/publish/streamid=0", 2,
                                                    [("Transport", "RTP/AVP/UDP;unicast;client_port=20000-20001;mode=record")]), resource: Self.resource)
        #expect(Self.status(setup.response) == 200)
        let session = try #require(server.activeSessions.first)
        #expect(session.isRecording && session.path == "/publish" && session.format?.packetizationMode == 1)
        let play = server.respond(to: Self.request("PLAY", "rtsp://127.0.0.1:8554/publish", 3, [("Session", session.id)]), resource: Self.resource)
        #expect(Self.status(play.response) == 455)
        let record = server.respond(to: Self.request("RECORD", "rtsp://127.0.0.1:8554/publish", 4, [("Session", session.id)]), resource: Self.resource)
        #expect(Self.status(record.response) == 200 && record.event == .record(session))
        let teardown = server.respond(to: Self.request("TEARDOWN", "rtsp://127.0.0.1:8554/publish", 5, [("Session", session.id)]), resource: Self.resource)
        #expect(teardown.event == .teardown(session))
    }

    @Test("authentication: RFC 2617's own Digest example; Basic; the server's challenge answered by the client's credentials")
    func authentication() throws {
        // RFC 2617 §3.5: Mufasa / Circle Of Life, qop=auth.
        let credentials = RTSPCredentials(user: "Mufasa", password: "Circle Of Life")
        let header = try credentials.authorization(method: "GET", uri: "/dir/index.html",
                                                   challenges: ["Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""],
                                                   count: 1, clientNonce: "0a4f113b")
        #expect(header.contains("response=\"6629fae49393a05397450978507c4ef1\""))
        let authenticator = RTSPAuthenticator(credentials: credentials, realm: "testrealm@host.com", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093")
        #expect(authenticator.accepts(header, method: "GET"))
        #expect(!authenticator.accepts(header, method: "POST"))
        #expect(authenticator.accepts("Basic TXVmYXNhOkNpcmNsZSBPZiBMaWZl", method: "PLAY"))
        #expect(!authenticator.accepts("Basic TXVmYXNhOnNpbWJh", method: "PLAY"))
        #expect(!authenticator.accepts(nil, method: "PLAY") && !authenticator.accepts("Digest garbage", method: "PLAY"))

        var server = RTSPServerConnection(configuration: .init(authenticator: RTSPAuthenticator(credentials: .init(user: "u", password: "p")), serverPorts: 6970...6971))
        let refused = server.respond(to: Self.request("DESCRIBE", "rtsp://h/live", 1), resource: Self.resource)
        #expect(Self.status(refused.response) == 401)
        let challenges = refused.response.headers.filter { $0.name == "WWW-Authenticate" }.map(\.value)
        #expect(challenges.count == 2 && challenges[0].hasPrefix("Digest ") && challenges[1].hasPrefix("Basic "))
        let answer = try RTSPCredentials(user: "u", password: "p").authorization(method: "DESCRIBE", uri: "rtsp://h/live", challenges: challenges)
        let accepted = server.respond(to: Self.request("DESCRIBE", "rtsp://h/live", 2, [("Authorization", answer)]), resource: Self.resource)
        #expect(Self.status(accepted.response) == 200)
        let options = server.respond(to: Self.request("OPTIONS", "rtsp://h/live", 3), resource: Self.resource)
        #expect(Self.status(options.response) == 200)  // OPTIONS needs no credentials
        // The Digest answer names its resource: a SETUP of a track under the aggregate it names
        // is good (live555 answers from its base URL); the same answer for another path, or for a
        // DESCRIBE of the track, is not.
        let setupAnswer = try RTSPCredentials(user: "u", password: "p").authorization(method: "SETUP", uri: "rtsp://h/live/", challenges: challenges)
        let track = server.respond(to: Self.request("SETUP", "rtsp://h/live/trackID=0", 4, [("Authorization", setupAnswer), ("Transport", "RTP/AVP;unicast;client_port=5000-5001")]),
                                   resource: Self.resource)
        #expect(Self.status(track.response) == 200)
        let other = server.respond(to: Self.request("DESCRIBE", "rtsp://h/private", 5, [("Authorization", answer)]), resource: Self.resource)
        #expect(Self.status(other.response) == 401)
        let trackDescribe = server.respond(to: Self.request("DESCRIBE", "rtsp://h/live/trackID=0", 6, [("Authorization", answer)]), resource: Self.resource)
        #expect(Self.status(trackDescribe.response) == 401)
    }

    @Test("a client session used out of order (a response after a teardown before DESCRIBE; no transports to offer) throws, never traps (found in review: a force unwrap and an index)")
    func clientSessionMisuse() throws {
        let url = try RTSPURL(parsing: "rtsp://127.0.0.1:8554/live")
        var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 11)
        var early = RTSPClientSession(url: url, transports: [RTSPTransport(lower: .tcp, interleaved: 0...1)])
        _ = early.start()
        let teardown = early.teardown()
        let ok = RTSPMessage(.response(status: 200, reason: "OK"), headers: [("CSeq", teardown["CSeq"] ?? "")])
        #expect(throws: NetworkError.self) { _ = try early.receive(ok) }
        var none = RTSPClientSession(url: url, transports: [])
        let first = server.respond(to: none.start(), resource: Self.resource)
        guard case .send(let describe) = try none.receive(first.response) else { Issue.record("no DESCRIBE after OPTIONS"); return }
        let described = server.respond(to: describe, resource: Self.resource)
        #expect(throws: NetworkError.self) { _ = try none.receive(described.response) }
    }

    @Test("the client's requests in order; a 401 answered once with credentials; 461 for UDP moves to TCP")
    func clientSession() throws {
        let url = try RTSPURL(parsing: "rtsp://u:p@127.0.0.1:8554/live")
        var client = RTSPClientSession(url: url, transports: [RTSPTransport(lower: .udp, clientPorts: 5000...5001), RTSPTransport(lower: .tcp, interleaved: 0...1)])
        var server = RTSPServerConnection(configuration: .init(authenticator: RTSPAuthenticator(credentials: .init(user: "u", password: "p")), serverPorts: 6970...6971,
                                                               transports: [.tcp]), seed: 5)
        var request = client.start()
        var methods: [String] = []
        var statuses: [Int] = []
        var setup: RTSPClientSession.Setup?
        for _ in 0..<12 {
            if case .request(let method, _) = request.startLine { methods.append(method) }
            let answer = server.respond(to: request, resource: Self.resource)
            statuses.append(Self.status(answer.response))
            switch try client.receive(answer.response) {
            case .send(let next): request = next
            case .playing(let playing): setup = playing
            }
            if setup != nil { break }
        }
        #expect(methods == ["OPTIONS", "DESCRIBE", "DESCRIBE", "SETUP", "SETUP", "PLAY"])
        #expect(statuses == [200, 401, 200, 461, 200, 200])
        let playing = try #require(setup)
        #expect(playing.transport.lower == .tcp && playing.transport.interleaved == 0...1 && playing.format == Self.format)
        #expect(playing.controlURL == "rtsp://127.0.0.1:8554/live/trackID=0" && playing.firstSequenceNumber != nil && playing.timeout == 60)
        #expect(playing.mediaNotSetUp == [], "a description of video alone leaves nothing out")
        // UDP alone, refused: a typed outcome (the RTSP client's cue to try TCP), not words to match.
        var udpOnly = RTSPClientSession(url: try RTSPURL(parsing: "rtsp://127.0.0.1:8554/live"), transports: [RTSPTransport(lower: .udp, clientPorts: 5000...5001)])
        var tcpServer = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971, transports: [.tcp]), seed: 5)
        var step = udpOnly.start()
        #expect {
            for _ in 0..<5 {
                guard case .send(let request) = try udpOnly.receive(tcpServer.respond(to: step, resource: Self.resource).response) else { return }
                step = request
            }
        } throws: { ($0 as? NetworkError)?.code == .transportRefused }
        // Wrong credentials: a second 401 is an error.
        var wrong = RTSPClientSession(url: try RTSPURL(parsing: "rtsp://u:x@h/live"), transports: [RTSPTransport(lower: .tcp, interleaved: 0...1)])
        var strict = RTSPServerConnection(configuration: .init(authenticator: RTSPAuthenticator(credentials: .init(user: "u", password: "p")), serverPorts: 6970...6971))
        var next = wrong.start()
        #expect(throws: NetworkError.self) {
            for _ in 0..<5 {
                guard case .send(let request) = try wrong.receive(strict.respond(to: next, resource: Self.resource).response) else { return }
                next = request
            }
        }
    }

    @Test("RTSP URLs", arguments: rtspURLCases)
    func rtspURLs(_ url: RTSPURLCase) throws {
        guard let host = url.host else {
            #expect(throws: NetworkError.self) { _ = try RTSPURL(parsing: url.text) }
            return
        }
        let parsed = try RTSPURL(parsing: url.text)
        #expect(parsed.host == host && parsed.port == url.port && parsed.path == url.path && parsed.credentials?.user == url.user)
        if url.user != nil { #expect(parsed.credentials?.password == "p@ss" && !parsed.description.contains("p@ss")) }
    }

    @Test("low latency: a stream that reorders nothing has each access unit handed on at once, its duration the smallest step yet; the default waits one")
    func lowLatencyBuilder() throws {
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xDA, 0x02, 0x80, 0xBF, 0xE5, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xF0, 0x3C, 0x58, 0xBA, 0x80]
        let pps: [UInt8] = [0x68, 0xCE, 0x0F, 0x2C, 0x80]
        let units = [0, 3000, 6000, 7500, 10_500].enumerated().map { index, time in
            H264Depacketizer.AccessUnit(timestamp: UInt32(time), extendedTimestamp: Int64(time),
                                        nalUnits: index == 0 ? [sps, pps, [0x65, 0x88, 0x11]] : [[0x41, 0x9A, 0x22]], isIDR: index == 0)
        }
        var immediate = RTPSampleBufferBuilder(options: .init(isLowLatency: true))
        var waiting = RTPSampleBufferBuilder()
        var durations: [Int64] = []
        for unit in units {
            let now = try immediate.append(unit)
            #expect(now.count == 1 && now[0].decodeTime == now[0].presentationTime)
            durations += now.map(\.duration.value)
            #expect(try waiting.append(unit).count <= 1)
        }
        #expect(durations == [1, 3000, 3000, 1500, 1500])
        #expect(waiting.finish().count >= 1 && immediate.finish().isEmpty)
    }

    @Test("the receiving session asks for a picture after a loss, once per interval, and reports reception")
    func pictureLossIndication() throws {
        var packetizer = try H264Packetizer(configuration: .init(ssrc: 0x1234))
        var session = RTPReceivingSession(configuration: .init(ssrc: 0xABCD, reportInterval: 1, pictureLossInterval: 0.2, maximumReorderDelay: 0.05))
        func send(_ units: [[UInt8]], frame: Int, at arrival: Double, dropping: Int? = nil) -> [SampleBuffer] {
            var samples: [SampleBuffer] = []
            for (index, packet) in ((try? packetizer.packets(nalUnits: units, timestamp: UInt32(frame * 3600))) ?? []).enumerated() where index != dropping {
                samples += packet.bytes.withUnsafeBytes { session.receiveRTP($0, arrival: arrival) }
            }
            return samples
        }
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xDA, 0x02, 0x80, 0xBF, 0xE5, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xF0, 0x3C, 0x58, 0xBA, 0x80]
        let pps: [UInt8] = [0x68, 0xCE, 0x0F, 0x2C, 0x80]
        let idr: [UInt8] = [0x65, 0x88] + [UInt8](repeating: 0x11, count: 3000)
        let p: [UInt8] = [0x41, 0x9A] + [UInt8](repeating: 0x22, count: 3000)
        var samples = send([sps, pps, idr], frame: 0, at: 0.00)
        samples += send([p], frame: 1, at: 0.04)
        let firstFeedback = session.feedback(now: 0.05)
        let report = try RTCPPacket.parse(compound: try #require(firstFeedback))
        #expect(report.count == 1)  // a receiver report, no PLI
        #expect(send([p], frame: 2, at: 0.08, dropping: 1).isEmpty)  // a fragment lost: held behind the gap
        #expect(send([p], frame: 3, at: 0.12).isEmpty)
        #expect(session.feedback(now: 0.12) == nil)  // the missing packet may still come
        #expect(session.expire(now: 0.14).isEmpty)  // awaited 60 ms: lost; frames 2 and 3 are not whole or not decodable
        let lossFeedback = session.feedback(now: 0.14)
        let afterLoss = try RTCPPacket.parse(compound: try #require(lossFeedback))
        #expect(afterLoss.contains(.pictureLossIndication(senderSSRC: 0xABCD, mediaSSRC: 0x1234)))
        guard case .receiverReport(let block) = afterLoss[0] else { Issue.record("no receiver report first"); return }
        #expect(block.reports.first?.ssrc == 0x1234 && block.reports.first?.cumulativeLost == 1)
        #expect(session.feedback(now: 0.2) == nil)  // not again within the interval
        samples += send([sps, pps, idr], frame: 4, at: 0.36)  // the IDR asked for: decoding resumes
        #expect(session.feedback(now: 0.4) == nil && session.pictureLossIndications == 1)
        #expect(session.depacketizer.statistics.accessUnitsDropped == 1 && session.depacketizer.statistics.accessUnitsSkipped == 1)
        samples += session.finish()
        #expect(samples.map { $0.presentationTime.converted(toTimescale: 25, rounding: .halfAwayFromZero).value } == [0, 1, 4])
    }

    @Test("a BYE read before the last packets (they come on the other socket) does not end the stream until the sender's reported packets are in, or the linger passes")
    func goodbyeBeforeTheLastPackets() throws {
        var packetizer = try H264Packetizer(configuration: .init(ssrc: 0x1234))
        var session = RTPReceivingSession(configuration: .init(ssrc: 0xABCD))
        let idr: [UInt8] = [0x65, 0x88] + [UInt8](repeating: 0x11, count: 3000)
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xDA, 0x02, 0x80, 0xBF, 0xE5, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xF0, 0x3C, 0x58, 0xBA, 0x80]
        let pps: [UInt8] = [0x68, 0xCE, 0x0F, 0x2C, 0x80]
        let frames = try (0..<4).map { try packetizer.packets(nalUnits: [sps, pps, idr], timestamp: UInt32($0 * 3600)) }
        for packet in frames[0] + frames[1] { _ = session.receiveRTP(packet.bytes, arrival: 0) }
        func goodbye(from ssrc: UInt32, packets: Int) -> [UInt8] {
            RTCPPacket.serialize([.senderReport(.init(ssrc: ssrc, ntpTimestamp: 0, rtpTimestamp: 0, packetCount: UInt32(packets), octetCount: 0)),
                                  .goodbye(.init(sources: [ssrc]))])
        }
        // Another source's BYE is not the stream's.
        _ = goodbye(from: 0x9999, packets: 1).withUnsafeBytes { session.receiveRTCP($0, arrival: 0.1) }
        #expect(!session.senderSaidGoodbye && !session.isOver(quiet: 10))
        // The sender's: it counted every packet of four frames; two have come.
        let events = goodbye(from: 0x1234, packets: frames.joined().count).withUnsafeBytes { session.receiveRTCP($0, arrival: 0.1) }
        #expect(events.goodbye && session.senderSaidGoodbye && !session.hasEveryReportedPacket)
        #expect(!session.isOver(quiet: 0.5))
        #expect(session.isOver(quiet: 1.01))  // the linger: a tail lost on the way never comes
        for packet in frames[2] + frames[3] { _ = session.receiveRTP(packet.bytes, arrival: 0.6) }
        #expect(session.hasEveryReportedPacket && !session.isOver(quiet: 0.05) && session.isOver(quiet: 0.11))
    }
}

struct RTSPRefusal: Sendable, CustomTestStringConvertible {
    var name: String
    var request: RTSPMessage
    var status: Int
    var testDescription: String { name }
}

let rtspRefusals: [RTSPRefusal] = [
    RTSPRefusal(name: "no CSeq", request: RTSPMessage(.request(method: "OPTIONS", url: "*")), status: 400),
    RTSPRefusal(name: "unknown path", request: RTSPSessionTests.request("DESCRIBE", "rtsp://h/nothing", 1), status: 404),
    RTSPRefusal(name: "unknown method", request: RTSPSessionTests.request("FROBNICATE", "rtsp://h/live", 1), status: 501),
    RTSPRefusal(name: "PLAY without a session", request: RTSPSessionTests.request("PLAY", "rtsp://h/live", 1), status: 454),
    RTSPRefusal(name: "PLAY of an unknown session", request: RTSPSessionTests.request("PLAY", "rtsp://h/live", 1, [("Session", "DEADBEEF")]), status: 454),
    RTSPRefusal(name: "SETUP without Transport", request: RTSPSessionTests.request("SETUP", "rtsp://h/live/trackID=0", 1), status: 461),
    RTSPRefusal(name: "SETUP multicast", request: RTSPSessionTests.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RTP/AVP;multicast")]), status: 461),
    RTSPRefusal(name: "SETUP UDP without client ports", request: RTSPSessionTests.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RTP/AVP;unicast")]), status: 461),
    RTSPRefusal(name: "SETUP of RAW/RAW/UDP", request: RTSPSessionTests.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RAW/RAW/UDP;unicast")]), status: 461),
    RTSPRefusal(name: "SETUP with a bad port range", request: RTSPSessionTests.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RTP/AVP;unicast;client_port=99999")]), status: 400),
    RTSPRefusal(name: "SETUP to record a playable path", request: RTSPSessionTests.request("SETUP", "rtsp://h/live/trackID=0", 1, [("Transport", "RTP/AVP/TCP;interleaved=0-1;mode=record")]), status: 461),
    RTSPRefusal(name: "ANNOUNCE to a playable path", request: RTSPSessionTests.request("ANNOUNCE", "rtsp://h/live", 1, [("Content-Type", "application/sdp")]), status: 405),
    RTSPRefusal(name: "ANNOUNCE without an SDP", request: RTSPSessionTests.request("ANNOUNCE", "rtsp://h/publish", 1, [("Content-Type", "text/plain")]), status: 415),
    RTSPRefusal(name: "ANNOUNCE of a bad SDP", request: RTSPSessionTests.request("ANNOUNCE", "rtsp://h/publish", 1, [("Content-Type", "application/sdp")], body: "v=1\r\n"), status: 415),
    RTSPRefusal(name: "SETUP to record before ANNOUNCE", request: RTSPSessionTests.request("SETUP", "rtsp://h/publish", 1, [("Transport", "RTP/AVP/TCP;interleaved=0-1;mode=record")]), status: 455),
]

struct RTSPURLCase: Sendable, CustomTestStringConvertible {
    var text: String
    var host: String?
    var port = 554
    var path = "/"
    var user: String?
    var testDescription: String { text }
}

let rtspURLCases: [RTSPURLCase] = [
    RTSPURLCase(text: "rtsp://127.0.0.1:8554/live", host: "127.0.0.1", port: 8554, path: "/live"),
    RTSPURLCase(text: "rtsp://camera.local/stream1?x=1", host: "camera.local", path: "/stream1?x=1"),
    RTSPURLCase(text: "RTSP://[::1]:8554/a/b", host: "::1", port: 8554, path: "/a/b"),
    RTSPURLCase(text: "rtsp://admin:p%40ss@127.0.0.2:554/h264", host: "127.0.0.2", path: "/h264", user: "admin"),
    RTSPURLCase(text: "rtsp://host:0/x", host: nil),
    RTSPURLCase(text: "rtsp://:554/x", host: nil),
    RTSPURLCase(text: "rtsp://[::1/x", host: nil),
    RTSPURLCase(text: "http://host/x", host: nil),
    RTSPURLCase(text: "rtsp://u:%zz@h/x", host: nil),
]
