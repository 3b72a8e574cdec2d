import MediaCore
/// A user name and password for RTSP, which authenticates as HTTP does (RFC 2326 §D.2; RFC 2617
/// Basic and Digest with MD5).
public struct RTSPCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Credentials.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// `USER:PASSWORD` as `--user` takes it (the first colon separates them).
    public init(parsing text: String) throws(NetworkError) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            throw NetworkError(.invalidDescription, "credentials \"\(text.prefix(40))\": USER:PASSWORD")
        }
        self.init(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
    }

    /// The user name only: a password is never printed.
    public var description: String { "\(user):***" }

    /// The `Authorization` header value answering a server's challenges (its `WWW-Authenticate`
    /// header values) for `method` on `uri`: Digest when offered (RFC 2617 §3.2.2, with
    /// `qop=auth` when the server asks for it), else Basic (§2).
    ///
    /// - Parameters:
    ///   - method: the request's method (`DESCRIBE`, `SETUP`, ...).
    ///   - uri: the request's URI, as in its request line.
    ///   - challenges: the server's `WWW-Authenticate` header values.
    ///   - count: how many times this nonce has been used, this one included (`nc`).
    ///   - clientNonce: the client nonce when the server asks for `qop=auth`.
    public func authorization(method: String, uri: String, challenges: [String], count: Int = 1, clientNonce: String = "0a4f113b") throws(NetworkError) -> String {
        let parsed = challenges.compactMap { RTSPAuthenticationChallenge(parsing: $0) }
        if let digest = parsed.first(where: { $0.scheme == "digest" }) {
            guard let realm = digest.parameters["realm"], let nonce = digest.parameters["nonce"] else {
                throw NetworkError(.invalidDescription, "WWW-Authenticate: a Digest challenge without realm or nonce")
            }
            if let algorithm = digest.parameters["algorithm"], algorithm.lowercased() != "md5" {
                throw NetworkError(.unsupported, "WWW-Authenticate: digest algorithm \(algorithm.prefix(20)) (only MD5)")
            }
            let ha1 = MD5.hex("\(user):\(realm):\(password)")
            let ha2 = MD5.hex("\(method):\(uri)")
            var fields = ["username=\"\(user)\"", "realm=\"\(realm)\"", "nonce=\"\(nonce)\"", "uri=\"\(uri)\""]
            let qops = digest.parameters["qop"].map { $0.split(separator: ",").map { $0.trimmingSpaces().lowercased() } } ?? []
            if qops.contains("auth") {
                let nc = String(String(count, radix: 16).suffix(8)).leftPadded(to: 8)
                let response = MD5.hex("\(ha1):\(nonce):\(nc):\(clientNonce):auth:\(ha2)")
                fields += ["qop=auth", "nc=\(nc)", "cnonce=\"\(clientNonce)\"", "response=\"\(response)\""]
            } else {
                fields.append("response=\"\(MD5.hex("\(ha1):\(nonce):\(ha2)"))\"")
            }
            if let opaque = digest.parameters["opaque"] { fields.append("opaque=\"\(opaque)\"") }
            return "Digest " + fields.joined(separator: ", ")
        }
        if parsed.contains(where: { $0.scheme == "basic" }) { return basicAuthorization }
        throw NetworkError(.unsupported, "WWW-Authenticate: no Basic or Digest challenge in \(challenges.joined(separator: "; ").prefix(120))")
    }

    /// `Basic base64(user:password)`.
    var basicAuthorization: String { "Basic " + Base64.encode(Array("\(user):\(password)".utf8)) }
}

/// One challenge or credentials header: a scheme and its `name=value` parameters (RFC 2617 §1.2),
/// values unquoted.
struct RTSPAuthenticationChallenge {
    /// The scheme, lowercased: `basic`, `digest`.
    var scheme: String
    /// The parameters by lowercased name; for Basic credentials the token is under `token`.
    var parameters: [String: String]

    /// Parses `Digest realm="x", nonce="y"` or `Basic dXNlcjpwYXNz`; nil when it is not of that form.
    init?(parsing text: String) {
        let trimmed = text.trimmingSpaces()
        let scheme = trimmed.prefix { $0 != " " }
        guard !scheme.isEmpty, trimmed.count <= 4096 else { return nil }
        self.scheme = scheme.lowercased()
        parameters = [:]
        var rest = Substring(trimmed.dropFirst(scheme.count)).trimmingSpaces()
        if self.scheme == "basic" {
            parameters["token"] = String(rest)
            return
        }
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let name = rest[..<equals].trimmingSpaces().lowercased()
            rest = rest[rest.index(after: equals)...].trimmingSpaces()
            var value = ""
            if rest.first == "\"" {
                // A quoted string; a backslash quotes the next character.
                var index = rest.index(after: rest.startIndex)
                var closed = false
                while index < rest.endIndex {
                    let character = rest[index]
                    if character == "\\" {
                        index = rest.index(after: index)
                        if index < rest.endIndex { value.append(rest[index]) }
                    } else if character == "\"" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                    if index < rest.endIndex { index = rest.index(after: index) }
                }
                guard closed else { return nil }
                rest = rest[rest.index(after: index)...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = String(rest[..<end].trimmingSpaces())
                rest = rest[end...]
            }
            parameters[name] = value
            rest = rest.trimmingSpaces()
            if rest.first == "," { rest = rest.dropFirst().trimmingSpaces() }
        }
    }
}

/// The server's side of RTSP authentication: the challenges a 401 carries, and the check of a
/// request's `Authorization` header (Digest with MD5, or Basic).
///
/// The nonce is fixed for the authenticator's life (RFC 2617 leaves its lifetime to the
/// server); a client answers it with a digest of the password, never the password itself.
/// Basic is offered too, as most servers do, because some clients know only Basic.
public struct RTSPAuthenticator: Sendable {
    /// The accepted user and password.
    public let credentials: RTSPCredentials
    /// The protection space named in the challenges.
    public let realm: String
    /// The server nonce of the Digest challenge.
    public let nonce: String
    /// Whether Basic credentials are accepted (and offered).
    public let acceptsBasic: Bool

    /// An authenticator for `credentials`; `nonce` defaults to 16 random bytes in hexadecimal.
    public init(credentials: RTSPCredentials, realm: String = "H264Kit", nonce: String? = nil, acceptsBasic: Bool = true) {
        self.credentials = credentials
        self.realm = realm
        var generator = SystemRandomNumberGenerator()
        self.nonce = nonce ?? (0..<16).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16).leftPadded(to: 2) }.joined()
        self.acceptsBasic = acceptsBasic
    }

    /// The `WWW-Authenticate` header values of a 401 response, Digest first.
    public var challenges: [String] {
        ["Digest realm=\"\(realm)\", nonce=\"\(nonce)\", algorithm=MD5"] + (acceptsBasic ? ["Basic realm=\"\(realm)\""] : [])
    }

    /// Whether `authorization` (the request's `Authorization` header) proves the credentials for
    /// a request of `method`; with `url` (the request's), a Digest answer must also name that
    /// resource (RFC 2617 §3.2.2.5: its `uri` is the request's path; for a SETUP, also the
    /// aggregate path the track is under), so one captured for another resource is refused.
    /// (The nonce lasts as long as the authenticator: an answer captured for a resource can be
    /// replayed for it; Basic, when accepted, is a password in the clear.)
    public func accepts(_ authorization: String?, method: String, url: String? = nil) -> Bool {
        guard let authorization, let parsed = RTSPAuthenticationChallenge(parsing: authorization) else { return false }
        switch parsed.scheme {
        case "basic":
            return acceptsBasic && parsed.parameters["token"] == credentials.basicAuthorization.dropFirst("Basic ".count).description
        case "digest":
            let p = parsed.parameters
            guard p["username"] == credentials.user, p["realm"] == realm, p["nonce"] == nonce, let uri = p["uri"], let response = p["response"] else { return false }
            if let url {
                // The request's own resource; for a SETUP, the aggregate its track is under (live555
                // answers from its base URL); `*` only for the keep-alives.
                let named = RTSPServerConnection.normalizedPath(uri), requested = RTSPServerConnection.normalizedPath(url)
                let matches = named == requested
                    || (method == "SETUP" && named != "/" && named != "*" && requested.hasPrefix(named + "/"))
                    || (named == "*" && ["GET_PARAMETER", "SET_PARAMETER"].contains(method))
                guard matches else { return false }
            }
            let ha1 = MD5.hex("\(credentials.user):\(realm):\(credentials.password)")
            let ha2 = MD5.hex("\(method):\(uri)")
            let expected: String
            if let qop = p["qop"] {
                guard qop.lowercased() == "auth", let nc = p["nc"], let cnonce = p["cnonce"] else { return false }
                expected = MD5.hex("\(ha1):\(nonce):\(nc):\(cnonce):auth:\(ha2)")
            } else {
                expected = MD5.hex("\(ha1):\(nonce):\(ha2)")
            }
            return response.lowercased() == expected
        default:
            return false
        }
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
