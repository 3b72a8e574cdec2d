extension HLSOrigin.Options {
    /// Options for the multivariant playlist at `url`, `http://HOST[:PORT]/PATH.m3u8` (port 80
    /// when none is given, `[…]` around an IPv6 host), or `https://…` (port 443) with `tls`'s
    /// certificate and key (HTTP/2 and HTTP/1.1 by ALPN), the rest at their defaults.
    public init(url: String, tls: TLSFiles? = nil) throws(StreamingError) {
        self.init()
        let secure = url.lowercased().hasPrefix("https://")
        guard secure || url.lowercased().hasPrefix("http://") else { throw .invalidOption("\(url): an origin's URL is http(s)://HOST:PORT/PATH.m3u8") }
        if secure {
            guard let tls else { throw .invalidOption("\(url): https:// needs a certificate and its key (PEM files)") }
            transport = .tls(tls)
        } else if tls != nil {
            throw .invalidOption("\(url): a certificate is for https://")
        }
        let rest = url.dropFirst(secure ? "https://".count : "http://".count)
        guard let slash = rest.firstIndex(of: "/") else { throw .invalidOption("\(url): give the playlist's path, \(secure ? "https" : "http")://HOST:PORT/PATH.m3u8") }
        let authority = rest[..<slash]
        var host = Substring(authority)
        port = secure ? 443 : 80
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            host = authority[..<colon]
            guard let number = Int(authority[authority.index(after: colon)...]), (0...65535).contains(number) else {
                throw .invalidOption("\(url): a port of 0-65535")
            }
            port = number
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { throw .invalidOption("\(url): no host") }
        self.host = String(host)
        path = String(rest[slash...])
        guard path.lowercased().hasSuffix(".m3u8") else { throw .invalidOption("\(url): the path is the playlist's, PATH.m3u8") }
    }
}
