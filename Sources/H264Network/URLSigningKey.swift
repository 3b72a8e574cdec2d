import Crypto

/// A secret that signs URLs for a while, and tells the servers which requests carry a valid
/// signature: nginx's `secure_link` and a CDN's token authentication, for the HLS/DASH origin
/// and the RTSP server.
///
/// A signed URL carries its token as its path's first segment,
/// `/token.<expires>.<signature>/live/index.m3u8`: `expires` is the last second (Unix time) it
/// is good for, `signature` the HMAC-SHA256 (hexadecimal) of the expiry and a *scope*, a path
/// prefix ending in `/`. Because the token is part of the path, a player resolving the
/// playlist's relative URIs (segments, parts, the initialization section, the other
/// renditions' playlists, an MPD's segment template) carries it on by itself: a player needs
/// only the first URL, and every viewer gets the same bytes of a playlist (nothing is rewritten
/// per request). The scope a URL is signed for is its folder (``Scope/directory``: an HLS
/// playlist and every file beside it) or the path itself and what is under it
/// (``Scope/path``: an RTSP presentation and its tracks' control URLs); a token for `/` opens
/// the whole server.
///
/// Checking a request's path (``check(_:now:)``) takes at most one HMAC per folder of the path
/// (a path deeper than ``maximumDepth`` folders is refused), compares in constant time, and
/// keeps nothing. The secret never leaves the key: the key's description does not show it.
public struct URLSigningKey: Sendable, CustomStringConvertible {
    /// The fewest secret bytes accepted: 16 (128 bits).
    public static let minimumSecretSize = 16
    /// The most secret bytes accepted: 4096.
    public static let maximumSecretSize = 4096
    /// The most `/` a path may have: a deeper one is not signed, and is ``URLAccess/Denial/malformed`` when checked.
    public static let maximumDepth = 16
    /// The most bytes a checked path may have.
    public static let maximumPathSize = 2048
    /// The first path segment's prefix that marks a token.
    public static let tokenPrefix = "token."

    /// Which requests a signed URL opens.
    public enum Scope: Sendable, Hashable {
        /// The URL's folder and everything in it (`/live/index.m3u8` opens `/live/…`): for a
        /// playlist and the files beside it.
        case directory
        /// The URL's path and everything under it (`rtsp://host/cam` opens `/cam` and
        /// `/cam/…`): for an RTSP presentation and its tracks.
        case path
        /// This path prefix, which must end in `/` and be the URL's folder or one above it
        /// (`/` opens the whole server).
        case prefix(String)
    }

    private let key: SymmetricKey

    /// A key of `secret`'s bytes; throws when there are fewer than ``minimumSecretSize`` or
    /// more than ``maximumSecretSize``.
    public init(secret: some Collection<UInt8>) throws(NetworkError) {
        guard secret.count >= Self.minimumSecretSize else {
            throw NetworkError(.invalidKey, "a secret of \(secret.count) bytes: at least \(Self.minimumSecretSize)")
        }
        guard secret.count <= Self.maximumSecretSize else {
            throw NetworkError(.invalidKey, "a secret of \(secret.count) bytes: at most \(Self.maximumSecretSize)")
        }
        key = SymmetricKey(data: Array(secret))
    }

    /// A key from a secret file's bytes: base64 text (white space around it ignored) when it
    /// decodes to at least ``minimumSecretSize`` bytes, otherwise the raw bytes as they are.
    public init(secretFileContents contents: [UInt8]) throws(NetworkError) {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let start = contents.firstIndex { !isSpace($0) } ?? contents.endIndex
        let end = contents.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? start
        let text = contents[start..<max(start, end)]
        if text.count <= 2 * Self.maximumSecretSize, let decoded = Base64.decode(String(decoding: text, as: UTF8.self)), decoded.count >= Self.minimumSecretSize {
            try self.init(secret: decoded)
        } else {
            try self.init(secret: contents)
        }
    }

    /// Says what the key is, never its secret.
    public var description: String { "URLSigningKey(\(key.bitCount) bits)" }

    /// The token (`token.<expires>.<signature>`) that opens `scope` (a path prefix ending in
    /// `/`) until `expires` (Unix time, seconds).
    public func token(scope: String, expires: Int) throws(NetworkError) -> String {
        try Self.checkScope(scope)
        guard expires >= 0, expires <= 99_999_999_999 else { throw NetworkError(.invalidKey, "an expiry of \(expires): 0 to 99999999999 (Unix time)") }
        return Self.tokenPrefix + String(expires) + "." + Self.hex(signature(scope: scope, expires: expires))
    }

    /// `path` with the token that opens `scope` until `expires` put in front of it.
    public func signedPath(_ path: String, scope: Scope = .directory, expires: Int) throws(NetworkError) -> String {
        guard path.hasPrefix("/"), path.utf8.count <= Self.maximumPathSize else { throw NetworkError(.invalidKey, "\(path): an absolute path of at most \(Self.maximumPathSize) bytes") }
        guard path.firstIndex(where: { $0 == "?" || $0 == "#" }) == nil else { throw NetworkError(.invalidKey, "\(path): a path without a query or fragment") }
        if let first = path.split(separator: "/").first, first.hasPrefix(Self.tokenPrefix) { throw NetworkError(.invalidKey, "\(path): signed already") }
        guard path.utf8.count(where: { $0 == UInt8(ascii: "/") }) <= Self.maximumDepth else { throw NetworkError(.invalidKey, "\(path): more than \(Self.maximumDepth) folders deep") }
        let folder = String(path[...(path.lastIndex(of: "/") ?? path.startIndex)])
        let prefix: String
        switch scope {
        case .directory: prefix = folder
        case .path: prefix = path.hasSuffix("/") ? path : path + "/"
        case .prefix(let given):
            guard given.hasSuffix("/"), folder.hasPrefix(given) else { throw NetworkError(.invalidKey, "scope \(given): a folder (ending in /) that holds \(path)") }
            prefix = given
        }
        return "/" + (try token(scope: prefix, expires: expires)) + path
    }

    /// `url` (`scheme://authority/path`, a query kept after the path) signed until `expires`:
    /// scoped to its folder for HTTP(S), to its path for RTSP(S), unless `scope` says otherwise.
    public func signedURL(_ url: String, scope: Scope? = nil, expires: Int) throws(NetworkError) -> String {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { throw NetworkError(.invalidKey, "\(url): a URL (scheme://host/path)") }
        let scheme = url[..<colon].lowercased()
        let rest = url[url.index(colon, offsetBy: 3)...]
        let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
        guard pathStart > rest.startIndex else { throw NetworkError(.invalidKey, "\(url): no host") }
        let after = rest[pathStart...]
        let queryStart = after.firstIndex { $0 == "?" || $0 == "#" } ?? after.endIndex
        let path = after.isEmpty ? "/" : String(after[..<queryStart])
        let chosen = scope ?? (scheme.hasPrefix("rtsp") ? .path : .directory)
        return url[..<pathStart] + (try signedPath(path, scope: chosen, expires: expires)) + after[queryStart...]
    }

    /// Whether a request for `path` (as it came, the token first) may be answered at Unix time
    /// `now`: allowed with the path the token opens (the token taken off), or denied and why.
    public func check(_ path: String, now: Int) -> URLAccess {
        guard path.hasPrefix("/" + Self.tokenPrefix) else { return .denied(.noToken) }
        guard path.utf8.count <= Self.maximumPathSize + 100 else { return .denied(.malformed) }
        let afterSlash = path.utf8.index(after: path.utf8.startIndex)
        let tokenEnd = path.utf8[afterSlash...].firstIndex(of: UInt8(ascii: "/")) ?? path.utf8.endIndex
        let token = path.utf8[afterSlash..<tokenEnd].dropFirst(Self.tokenPrefix.utf8.count)
        let rest = tokenEnd == path.utf8.endIndex ? "/" : String(path[tokenEnd...])
        guard let dot = token.firstIndex(of: UInt8(ascii: ".")) else { return .denied(.malformed) }
        let digits = token[..<dot], hexDigits = token[token.index(after: dot)...]
        guard (1...11).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }), hexDigits.count == 64,
              let expires = Int(String(decoding: digits, as: UTF8.self)), let given = Self.bytes(hex: hexDigits)
        else { return .denied(.malformed) }
        guard rest.utf8.count(where: { $0 == UInt8(ascii: "/") }) <= Self.maximumDepth else { return .denied(.malformed) }
        // The scopes that may hold `rest`: itself as a presentation, then each folder up to `/`.
        var scopes: [String] = []
        if !rest.hasSuffix("/") { scopes.append(rest + "/") }
        var folder = rest[...]
        while let slash = folder.lastIndex(of: "/") {
            scopes.append(String(folder[...slash]))
            folder = folder[..<slash]
        }
        for scope in scopes {
            let message = Self.message(scope: scope, expires: expires)
            if HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: message, using: key) {
                return now <= expires ? .allowed(path: rest) : .denied(.expired)
            }
        }
        return .denied(.wrongSignature)
    }

    private func signature(scope: String, expires: Int) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Self.message(scope: scope, expires: expires), using: key))
    }

    /// What is signed: a label, the expiry and the scope, one a line.
    private static func message(scope: String, expires: Int) -> [UInt8] {
        Array("h264kit-url-v1\n\(expires)\n\(scope)".utf8)
    }

    private static func checkScope(_ scope: String) throws(NetworkError) {
        guard scope.hasPrefix("/"), scope.hasSuffix("/"), scope.utf8.count <= maximumPathSize else {
            throw NetworkError(.invalidKey, "scope \(scope): a path prefix that begins and ends with /")
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    private static func bytes(hex: Substring.UTF8View.SubSequence) -> [UInt8]? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x61...0x66: digit - 0x61 + 10
            case 0x41...0x46: digit - 0x41 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index != hex.endIndex {
            let next = hex.index(after: index)
            guard next != hex.endIndex, let high = value(hex[index]), let low = value(hex[next]) else { return nil }
            out.append(high << 4 | low)
            index = hex.index(after: next)
        }
        return out
    }
}

/// Whether a request's path carries a valid token (``URLSigningKey/check(_:now:)``).
public enum URLAccess: Sendable, Hashable {
    /// Valid and not expired: `path` is the request's path with the token taken off.
    case allowed(path: String)
    /// Not to be answered (403), and why.
    case denied(Denial)

    /// Why a request is refused.
    public enum Denial: Sendable, Hashable, CustomStringConvertible {
        /// The path does not begin with a token.
        case noToken
        /// A token that does not parse (its expiry, its signature's length or digits), or a
        /// path too long or too deep.
        case malformed
        /// A signature made with another key, or for another scope or expiry.
        case wrongSignature
        /// A valid signature whose time has passed.
        case expired

        /// The reason in words.
        public var description: String {
            switch self {
            case .noToken: "no token"
            case .malformed: "a malformed token"
            case .wrongSignature: "a wrong signature"
            case .expired: "an expired token"
            }
        }
    }
}
