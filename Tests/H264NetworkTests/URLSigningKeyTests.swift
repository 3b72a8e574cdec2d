import Foundation
import H264Network
import TestSupport
import Testing

@Suite("Signed URLs: HMAC-SHA256 over a scope and an expiry, the token first in the path")
struct URLSigningKeyTests {
    let secret = Array("0123456789abcdef-a test secret".utf8)
    var key: URLSigningKey { get throws { try URLSigningKey(secret: secret) } }

    @Test("the signature is HMAC-SHA256 of the label, the expiry and the scope (Python's hmac as the oracle)", .requires(.python3))
    func signatureIsPythonsHMAC() throws {
        let token = try key.token(scope: "/live/", expires: 1_800_000_000)
        let script = "import hmac, hashlib, sys; print(hmac.new(sys.argv[1].encode(), b'h264kit-url-v1\\n1800000000\\n/live/', hashlib.sha256).hexdigest())"
        let python = try run("python3", ["-c", script, String(decoding: secret, as: UTF8.self)])
        #expect(python.status == 0)
        #expect(token == "token.1800000000." + python.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("a signed playlist URL opens its folder until it expires, nothing else")
    func directoryScope() throws {
        let key = try key
        let signed = try key.signedURL("http://127.0.0.1:8080/live/index.m3u8", expires: 2000)
        let tokenPath = try #require(signed.split(separator: "/", omittingEmptySubsequences: true).dropFirst(2).first)
        #expect(signed == "http://127.0.0.1:8080/\(tokenPath)/live/index.m3u8")
        let token = "/" + tokenPath
        // Every file beside the playlist, as a player resolves them (segments, parts, other renditions), and under it.
        for file in ["/live/index.m3u8", "/live/index-video.m3u8", "/live/segment-00001.m4s", "/live/init-audio.mp4", "/live/index.mpd", "/live/sub/index.m3u8"] {
            #expect(key.check(token + file, now: 1999) == .allowed(path: file))
            #expect(key.check(token + file, now: 2000) == .allowed(path: file))
            #expect(key.check(token + file, now: 2001) == .denied(.expired))
        }
        // Not a folder beside it or above it; not without the token.
        for other in ["/live2/index.m3u8", "/index.m3u8", "/liv", "/", "/other/live/index.m3u8"] {
            #expect(key.check(token + other, now: 1000) == .denied(.wrongSignature), "\(other)")
        }
        #expect(key.check("/live/index.m3u8", now: 1000) == .denied(.noToken))
    }

    @Test("an RTSP URL opens its presentation and its tracks; a scope of / opens everything")
    func pathAndPrefixScopes() throws {
        let key = try key
        let signed = try key.signedURL("rtsp://127.0.0.1:8554/cam?x=1", expires: 50)
        #expect(signed.hasSuffix("/cam?x=1"))
        let path = String(signed.dropFirst("rtsp://127.0.0.1:8554".count).prefix { $0 != "?" })
        let token = String(path.dropLast("/cam".count))
        #expect(key.check(token + "/cam", now: 10) == .allowed(path: "/cam"))
        #expect(key.check(token + "/cam/", now: 10) == .allowed(path: "/cam/"))
        #expect(key.check(token + "/cam/trackID=1", now: 10) == .allowed(path: "/cam/trackID=1"))
        #expect(key.check(token + "/camera", now: 10) == .denied(.wrongSignature))
        #expect(key.check(token, now: 10) == .denied(.wrongSignature))

        let everything = try key.signedPath("/live/index.m3u8", scope: .prefix("/"), expires: 50)
        let whole = String(everything.dropLast("/live/index.m3u8".count))
        for file in ["/a.m3u8", "/live/index.m3u8", "/x/y/z.m4s"] { #expect(key.check(whole + file, now: 10) == .allowed(path: file)) }
        #expect(throws: NetworkError.self) { try key.signedPath("/live/index.m3u8", scope: .prefix("/other/"), expires: 50) }
        #expect(throws: NetworkError.self) { try key.signedPath("/live/index.m3u8", scope: .prefix("/live"), expires: 50) }
    }

    @Test("another key, a changed expiry or a changed digit is a wrong signature; junk is malformed, never a crash")
    func tamperingAndJunk() throws {
        let key = try key
        let other = try URLSigningKey(secret: Array("another secret, 16 bytes or more".utf8))
        let path = try key.signedPath("/live/index.m3u8", expires: 3000)
        #expect(other.check(path, now: 0) == .denied(.wrongSignature))
        let parts = path.split(separator: "/")[0].split(separator: ".")
        let later = "/token.3001.\(parts[2])/live/index.m3u8"
        #expect(key.check(later, now: 0) == .denied(.wrongSignature))
        var digits = Array(parts[2])
        digits[10] = digits[10] == "0" ? "1" : "0"
        #expect(key.check("/token.3000.\(String(digits))/live/index.m3u8", now: 0) == .denied(.wrongSignature))
        // Upper-case hex is the same signature.
        #expect(key.check("/token.3000.\(parts[2].uppercased())/live/index.m3u8", now: 0) == .allowed(path: "/live/index.m3u8"))
        let junk = ["/token.", "/token..", "/token.1.", "/token.x.\(parts[2])/a", "/token.3000.\(parts[2].dropLast())/a", "/token.3000.\(parts[2])0/a",
                    "/token.999999999999.\(parts[2])/a", "/token.3000.\(String(repeating: "g", count: 64))/a", "/token.3000", "/token.-1.\(parts[2])/a",
                    "/token.3000.\(parts[2])" + String(repeating: "/a", count: 40), "/token.3000.\(parts[2])/" + String(repeating: "a", count: 5000)]
        for path in junk { #expect(key.check(path, now: 0) == .denied(.malformed), "\(path.prefix(80))") }
        #expect(key.check("/tokens/x", now: 0) == .denied(.noToken))
        #expect(key.check("", now: 0) == .denied(.noToken))
    }

    @Test("secrets: at least 16 bytes; a secret file of base64 text or raw bytes; the key's description hides it")
    func secrets() throws {
        #expect(throws: NetworkError.self) { try URLSigningKey(secret: Array("fifteen bytes!!".utf8)) }
        #expect(throws: NetworkError.self) { try URLSigningKey(secret: [UInt8](repeating: 1, count: 4097)) }
        let raw = try URLSigningKey(secretFileContents: secret)
        let base64 = try URLSigningKey(secretFileContents: Array((Data(secret).base64EncodedString() + "\n").utf8))
        let path = try key.signedPath("/live/index.m3u8", expires: 10)
        #expect(raw.check(path, now: 0) == .allowed(path: "/live/index.m3u8"))
        #expect(base64.check(path, now: 0) == .allowed(path: "/live/index.m3u8"))
        #expect(throws: NetworkError.self) { try URLSigningKey(secretFileContents: Array("c2hvcnQ=\n".utf8)) }
        #expect(!String(describing: raw).contains("test secret"))
        #expect(throws: NetworkError.self) { try raw.signedPath("live/index.m3u8", expires: 10) }
        #expect(throws: NetworkError.self) { try raw.signedPath("/live/index.m3u8?x", expires: 10) }
        #expect(throws: NetworkError.self) { try raw.signedPath(path, expires: 10) }
        #expect(throws: NetworkError.self) { try raw.signedURL("index.m3u8", expires: 10) }
        #expect(throws: NetworkError.self) { try raw.token(scope: "/live/", expires: -1) }
    }
}
