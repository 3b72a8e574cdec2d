/// An RTSP address (RFC 2326 §3.2): `rtsp://[USER:PASSWORD@]HOST[:PORT]/PATH`.
public struct RTSPURL: Sendable, Hashable, CustomStringConvertible {
    /// The default RTSP port.
    public static let defaultPort = 554

    /// The host: a name, an IPv4 address, or an IPv6 address (without brackets).
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The path, from its first `/` (at least `/`), query included.
    public var path: String
    /// The user and password of the address's user information, percent-decoded.
    public var credentials: RTSPCredentials?

    /// An address.
    public init(host: String, port: Int = RTSPURL.defaultPort, path: String = "/", credentials: RTSPCredentials? = nil) {
        self.host = host
        self.port = port
        self.path = path.hasPrefix("/") ? path : "/" + path
        self.credentials = credentials
    }

    /// Parses `rtsp://HOST:PORT/PATH`, `rtsp://[IPv6]:PORT/PATH`, with user information or not.
    public init(parsing url: String) throws(NetworkError) {
        guard url.count <= 2048 else { throw NetworkError(.tooLarge, "an RTSP URL of \(url.count) characters (at most 2048)") }
        guard url.lowercased().hasPrefix("rtsp://") else { throw NetworkError(.invalidDescription, "\(url.prefix(80)): expected rtsp://HOST[:PORT]/PATH") }
        var rest = url.dropFirst(7)
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        var credentials: RTSPCredentials?
        if let at = authority.lastIndex(of: "@") {
            let information = authority[..<at]
            authority = authority[authority.index(after: at)...]
            let colon = information.firstIndex(of: ":") ?? information.endIndex
            let user = try Self.percentDecoded(information[..<colon], url)
            let password = colon == information.endIndex ? "" : try Self.percentDecoded(information[information.index(after: colon)...], url)
            credentials = RTSPCredentials(user: user, password: password)
        }
        let hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw NetworkError(.invalidDescription, "\(url.prefix(80)): an IPv6 host without its ']'") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw NetworkError(.invalidDescription, "\(url.prefix(80)): expected ':PORT' after the IPv6 host") }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        } else {
            hostPart = authority
        }
        guard !hostPart.isEmpty else { throw NetworkError(.invalidDescription, "\(url.prefix(80)): no host") }
        var port = Self.defaultPort
        if let portPart {
            guard let number = Int(portPart), (1...65535).contains(number) else {
                throw NetworkError(.invalidDescription, "\(url.prefix(80)): port '\(portPart.prefix(10))' is not 1-65535")
            }
            port = number
        }
        self.init(host: String(hostPart), port: port, path: rest.isEmpty ? "/" : String(rest), credentials: credentials)
    }

    /// `rtsp://HOST:PORT/PATH`, without the credentials (they go in `Authorization` headers).
    public var description: String { "rtsp://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)" }

    /// The address of a medium's `a=control` attribute relative to this one (RFC 2326 §C.1.1):
    /// an absolute URL as it is, `*` this address, anything else appended after a `/`.
    public func resolving(control: String?) -> String {
        guard let control, control != "*" else { return description }
        if control.lowercased().hasPrefix("rtsp://") { return control }
        return description.hasSuffix("/") ? description + control : description + "/" + control
    }

    private static func percentDecoded(_ text: Substring, _ url: String) throws(NetworkError) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(), let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else {
                    throw NetworkError(.invalidDescription, "\(url.prefix(80)): a bad %-escape in the user information")
                }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
