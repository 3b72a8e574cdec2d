/// Where RTP goes or comes from: `rtp://HOST:PORT` (RTCP on PORT + 1, RFC 3550 §11), or
/// `rtp://@:PORT` to listen on every address.
public struct RTPDestination: Sendable, Hashable, CustomStringConvertible {
    /// The host (an address or name; empty with `@`: every local address).
    public var host: String
    /// The RTP port; RTCP uses the next one.
    public var port: Int

    /// A destination.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `rtp://HOST:PORT`, `rtp://[IPv6]:PORT` or `rtp://@:PORT`; query parameters are ignored.
    public init(parsing url: String) throws(NetworkError) {
        guard url.lowercased().hasPrefix("rtp://") else { throw NetworkError(.invalidDescription, "\(url): expected rtp://HOST:PORT") }
        var rest = url.dropFirst(6)
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.hasPrefix("@") { rest = rest.dropFirst() }
        let hostPart: Substring
        let portPart: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]"), rest[rest.index(after: close)...].hasPrefix(":") else {
                throw NetworkError(.invalidDescription, "\(url): expected rtp://[IPv6]:PORT")
            }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            portPart = rest[rest.index(close, offsetBy: 2)...]
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw NetworkError(.invalidDescription, "\(url): no port (rtp://HOST:PORT)") }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        guard let port = Int(portPart), (1...65534).contains(port) else {
            throw NetworkError(.invalidDescription, "\(url): port '\(portPart)' is not 1–65534 (RTCP takes the next one)")
        }
        host = String(hostPart)
        self.port = port
    }

    /// `rtp://HOST:PORT`.
    public var description: String { "rtp://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// The session description a sender to this destination announces for `format` (RFC 6184
    /// §8.2.1): one video medium on the port, the connection address the host.
    public func sessionDescription(for format: H264PayloadFormat, name: String = "H264Kit") -> SessionDescription {
        sessionDescription(video: format, audio: nil, name: name)
    }

    /// The session description a sender of video and audio to this destination announces:
    /// the video medium on the port, the audio (RFC 3640 AAC) on the port `audioPortOffset`
    /// above it (2, ffmpeg's layout, as `RTPSender` sends; give 0 when there is no video).
    public func sessionDescription(video: H264PayloadFormat?, audio: MPEG4GenericPayloadFormat?, audioPortOffset: Int = 2,
                                   name: String = "H264Kit") -> SessionDescription {
        sessionDescription(video: video, sound: audio.map { .mpeg4Generic($0) }, audioPortOffset: audioPortOffset, name: name)
    }

    /// The session description a sender of video and a sound of any payload format it sends
    /// (AAC as RFC 3640, G.711 as PCMU or PCMA) announces, laid out as
    /// ``sessionDescription(video:audio:audioPortOffset:name:)``.
    public func sessionDescription(video: H264PayloadFormat?, sound: AudioPayloadFormat?, audioPortOffset: Int = 2,
                                   name: String = "H264Kit") -> SessionDescription {
        let family = host.contains(":") ? "IP6" : "IP4"
        let media = [video?.medium(port: port), sound?.medium(port: port + audioPortOffset)].compactMap { $0 }
        return SessionDescription(origin: "- 0 0 IN \(family) \(host.isEmpty ? "0.0.0.0" : host)", name: name,
                                  connection: "IN \(family) \(host.isEmpty ? "0.0.0.0" : host)", media: media)
    }
}
