/// An RTSP address (RFC 2326 §3.2): `rtsp://[USER:PASSWORD@]HOST[:PORT]/PATH`, or `rtsps://`
/// for RTSP over TLS (RFC 7826 §19.2).
public struct RTSPURL: Sendable, Hashable, CustomStringConvertible {
    /// The default RTSP port.
    public static let defaultPort = 554
    /// The default port of RTSP over TLS (`rtsps://`, RFC 7826 §19.2).
    public static let defaultSecurePort = 322

    /// The host: a name, an IPv4 address, or an IPv6 address (without brackets).
    public var host: String
    /// The TCP port.
    public var port: Int
    /// The path, from its first `/` (at least `/`), query included.
    public var path: String
    /// The user and password of the address's user information, percent-decoded.
    public var credentials: RTSPCredentials?
    /// Whether the connection is TLS (`rtsps://`).
    public var isSecure: Bool

    /// An address (`rtsps://` when `isSecure`).
    public init(host: String, port: Int? = nil, path: String = "/", credentials: RTSPCredentials? = nil, isSecure: Bool = false) {
        self.host = host
        self.port = port ?? (isSecure ? Self.defaultSecurePort : Self.defaultPort)
        self.path = path.hasPrefix("/") ? path : "/" + path
        self.credentials = credentials
        self.isSecure = isSecure
    }

    /// The scheme: `rtsps` over TLS, else `rtsp`.
    public var scheme: String { isSecure ? "rtsps" : "rtsp" }

    /// Whether `url` begins with `rtsp://` or `rtsps://` (any case).
    public static func hasScheme(_ url: String) -> Bool {
        let lowered = url.prefix(8).lowercased()
        return lowered.hasPrefix("rtsp://") || lowered.hasPrefix("rtsps://")
    }

    /// Parses `rtsp://HOST:PORT/PATH`, `rtsp://[IPv6]:PORT/PATH`, with user information or not;
    /// `rtsps://` likewise.
    public init(parsing url: String) throws(NetworkError) {
        guard url.count <= 2048 else { throw NetworkError(.tooLarge, "an RTSP URL of \(url.count) characters (at most 2048)") }
        let secure = url.prefix(8).lowercased() == "rtsps://"
        guard secure || url.lowercased().hasPrefix("rtsp://") else { throw NetworkError(.invalidDescription, "\(url.prefix(80)): expected rtsp://HOST[:PORT]/PATH or rtsps://") }
        var rest = url.dropFirst(secure ? 8 : 7)
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
        var port = secure ? Self.defaultSecurePort : Self.defaultPort
        if let portPart {
            guard let number = Int(portPart), (1...65535).contains(number) else {
                throw NetworkError(.invalidDescription, "\(url.prefix(80)): port '\(portPart.prefix(10))' is not 1-65535")
            }
            port = number
        }
        self.init(host: String(hostPart), port: port, path: rest.isEmpty ? "/" : String(rest), credentials: credentials, isSecure: secure)
    }

    /// `rtsp://HOST:PORT/PATH` (or `rtsps://`), without the credentials (they go in
    /// `Authorization` headers).
    public var description: String { "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)" }

    /// The address of a medium's `a=control` attribute relative to this one (RFC 2326 §C.1.1):
    /// an absolute URL as it is, `*` this address, anything else appended after a `/`.
    public func resolving(control: String?) -> String {
        guard let control, control != "*" else { return description }
        if Self.hasScheme(control) { return control }
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
