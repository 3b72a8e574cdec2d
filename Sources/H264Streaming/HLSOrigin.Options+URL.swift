extension HLSOrigin.Options {
    /// Options for the multivariant playlist at `url`, `http://HOST[:PORT]/PATH.m3u8` (port 80
    /// when none is given, `[…]` around an IPv6 host), the rest at their defaults.
    public init(url: String) throws(StreamingError) {
        self.init()
        guard url.lowercased().hasPrefix("http://") else { throw .invalidOption("\(url): an origin's URL is http://HOST:PORT/PATH.m3u8") }
        let rest = url.dropFirst("http://".count)
        guard let slash = rest.firstIndex(of: "/") else { throw .invalidOption("\(url): give the playlist's path, http://HOST:PORT/PATH.m3u8") }
        let authority = rest[..<slash]
        var host = Substring(authority)
        port = 80
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
