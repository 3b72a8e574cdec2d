// An RTSP connection's bytes through the message parser, whole and in chunks the input chooses
// (the same elements, or an error both ways); messages written back parse to themselves; every
// Transport header through the transport parser; every request through the server's state
// machine (with credentials or not: each answer a response that parses, its CSeq echoed) and
// every response through the client's; authentication headers and URLs through their parsers;
// the bytes, and every request URL's query, as a low-latency HLS request's delivery directives;
// the bytes and every request URL's path as a signed URL's path (URLSigningKey.check: never a
// trap, never allowed without the key's token), and signed again then checked (allowed, the
// path given back).
import FuzzSupport
import H264Network

/// A payload format to serve at /live (Constrained Baseline 320x240).
let format = try! H264PayloadFormat(medium: .init(type: "video", port: 0, formats: ["96"], attributes: [
    "rtpmap:96 H264/90000", "fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0LAHtoCgL/lhAAAAwAEAAADAPA8WLqA,aM4PLIA=", "control:trackID=0",
]))

/// AAC-LC 48 kHz stereo, the second medium of /av.
let audio = try! MPEG4GenericPayloadFormat(medium: .init(type: "audio", port: 0, formats: ["97"], attributes: [
    "rtpmap:97 mpeg4-generic/48000/2", "fmtp:97 streamtype=5; profile-level-id=41; mode=AAC-hbr; config=1190; sizelength=13; indexlength=3; indexdeltalength=3",
    "control:trackID=1",
]))

@_cdecl("FuzzRTSP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let chunk = Int(choice.byte()) + 1
        let withCredentials = choice.byte() & 1 == 0
        let bytes = [UInt8](choice.rest)
        checkDirectives(Substring(decoding: bytes.prefix(4096), as: UTF8.self))
        checkSignedPath(String(decoding: bytes.prefix(4096), as: UTF8.self))
        var whole = RTSPMessageParser()
        let all = try? whole.append(bytes)
        var pieces = RTSPMessageParser()
        var chunked: [RTSPMessageParser.Element]? = []
        var index = 0
        while index < bytes.count {
            guard let elements = try? pieces.append(bytes[index..<min(bytes.count, index + chunk)]) else { chunked = nil; break }
            chunked! += elements
            index += chunk
        }
        fuzzCheck((all == nil) == (chunked == nil), "an error \(all == nil ? "at once" : "in \(chunk)-byte pieces") only")
        if let all, let chunked { fuzzCheck(all == chunked, "\(all.count) elements at once, \(chunked.count) in \(chunk)-byte pieces") }
        let authenticator = RTSPAuthenticator(credentials: .init(user: "u", password: "p"), nonce: "abc")
        var server = RTSPServerConnection(configuration: .init(authenticator: withCredentials ? authenticator : nil, serverPorts: 6970...6971), seed: 1)
        var client = RTSPClientSession(url: RTSPURL(host: "h", path: "/live", credentials: .init(user: "u", password: "p")),
                                       transports: [RTSPTransport(lower: .udp, clientPorts: 5000...5001), RTSPTransport(lower: .tcp, interleaved: 0...1)],
                                       audioTransports: [RTSPTransport(lower: .udp, clientPorts: 5002...5003), RTSPTransport(lower: .tcp, interleaved: 2...3)])
        _ = client.start()
        for element in all ?? [] {
            guard case .message(let message) = element else { continue }
            if let transport = message["Transport"], let offers = try? RTSPTransport.parse(header: transport) {
                for offer in offers {
                    let again = try? RTSPTransport.parse(header: offer.description)
                    fuzzCheck(again?.first == offer || offer.otherParameters.contains { $0.contains(",") || $0.contains(";") }, "a transport changed across description and parse: \(offer)")
                }
            }
            switch message.startLine {
            case .request(let method, let url):
                _ = try? RTSPURL(parsing: url)
                if let query = url.split(separator: "?", maxSplits: 1).dropFirst().first { checkDirectives(query) }
                checkSignedPath(String(url.prefix { $0 != "?" }))
                let (response, _) = server.respond(to: message) { path in
                    path == "/live" ? .playable(format) : path == "/av" ? .playableMedia([.h264(format), .mpeg4Generic(audio)]) : path == "/publish" ? .recordable : nil
                }
                // Every session holds one medium or more, each once, and no two media share
                // an interleaved channel.
                var channels: [Int] = []
                for session in server.activeSessions {
                    fuzzCheck(!session.streams.isEmpty && Set(session.streams.map(\.format)).count == session.streams.count, "a session's media: \(session.streams.count)")
                    for stream in session.streams { if let pair = stream.transport.interleaved { channels += [pair.lowerBound, pair.upperBound] } }
                }
                fuzzCheck(Set(channels).count == channels.count, "interleaved channels given twice: \(channels)")
                guard case .response(let status, _) = response.startLine else { fuzzCheck(false, "a request answered with a request"); return }
                fuzzCheck((100...599).contains(status), "status \(status)")
                if let sequence = message.sequenceNumber { fuzzCheck(response["CSeq"] == String(sequence), "CSeq not echoed") }
                var parser = RTSPMessageParser()
                let parsed = try? parser.append(response.bytes)
                guard case .message(var back)? = parsed?.first, parsed?.count == 1 else { fuzzCheck(false, "a response that does not parse back"); return }
                back.headers.removeAll { $0.name.lowercased() == "content-length" }  // added by `bytes` for a body
                fuzzCheck(back == response, "a response that does not parse back to itself")
                if let authorization = message["Authorization"] { _ = authenticator.accepts(authorization, method: method) }
            case .response:
                _ = try? client.receive(message)
                let challenges = message.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value)
                if !challenges.isEmpty { _ = try? RTSPCredentials(user: "u", password: "p").authorization(method: "DESCRIBE", uri: "rtsp://h/x", challenges: challenges) }
            }
            let writable = !message.headers.contains { $0.value.contains("\r") || $0.name.contains("\r") || $0.name.isEmpty }
            guard writable else { continue }
            var parser = RTSPMessageParser()
            let again = try? parser.append(message.bytes)
            fuzzCheck(again == [.message(message)], "a message changed across bytes and parse")
        }
    }
}

/// `_HLS_msn`/`_HLS_part`/`_HLS_skip`: never a part without its segment, never a negative number.
/// The key the signed paths are checked with.
let signingKey = try! URLSigningKey(secret: Array("the fuzz target's own secret".utf8))

/// `path` as a request's path: a random one is never allowed (it would need the key's HMAC);
/// signed with the key, it is allowed and given back as it was.
func checkSignedPath(_ path: String) {
    let verdict = signingKey.check(path, now: 1_000)
    if case .allowed = verdict { fuzzCheck(false, "a path allowed without being signed: \(path.prefix(200))") }
    if let signed = try? signingKey.signedPath(path, expires: 2_000) {
        fuzzCheck(signingKey.check(signed, now: 1_000) == .allowed(path: path), "a signed path refused: \(path.prefix(200))")
        fuzzCheck(signingKey.check(signed, now: 2_001) == .denied(.expired), "a signed path not expired: \(path.prefix(200))")
    }
}

func checkDirectives(_ query: Substring) {
    guard let directives = HLSDeliveryDirectives(query: query) else { return }
    fuzzCheck(directives.part == nil || directives.mediaSequence != nil, "a part without its segment")
    fuzzCheck((directives.mediaSequence ?? 0) >= 0 && (directives.part ?? 0) >= 0, "a negative directive")
}
