import NIOSSL

/// How a server speaks HTTP: HTTP/1.1 in the clear, TLS with HTTP/2 and HTTP/1.1 offered by
/// ALPN, or HTTP/2 in the clear for a proxy in front that knows it (h2c, prior knowledge).
public enum HTTPTransport: Sendable, Hashable {
    /// HTTP/1.1 without TLS (`http://`).
    case cleartext
    /// HTTP/2 without TLS, with prior knowledge (`curl --http2-prior-knowledge`, a CDN's
    /// cleartext HTTP/2 to its origin); an HTTP/1.1 client is not understood.
    case cleartextHTTP2
    /// TLS with this certificate and key (`https://`): HTTP/2 (`h2`) and HTTP/1.1 offered by
    /// ALPN, h2 first, as browsers expect.
    case tls(TLSFiles)

    /// The URL scheme: `https` with TLS, else `http`.
    public var scheme: String {
        if case .tls = self { return "https" }
        return "http"
    }
}

/// A server's certificate chain and private key, PEM files.
public struct TLSFiles: Sendable, Hashable {
    /// The certificate chain's PEM file: the server's certificate first, then any intermediates.
    public var certificateChain: String
    /// The private key's PEM file (unencrypted).
    public var privateKey: String

    /// The files at these paths.
    public init(certificateChain: String, privateKey: String) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }

    /// The server's TLS configuration from the files (TLS 1.2 or later): an unreadable or
    /// malformed file is an error that names it (``TLSContextStore`` checks that the key is
    /// the certificate's).
    func serverConfiguration() throws(StreamingError) -> TLSConfiguration {
        let certificates: [NIOSSLCertificate]
        do { certificates = try NIOSSLCertificate.fromPEMFile(certificateChain) } catch {
            throw .credentials("\(certificateChain): not a readable PEM certificate chain", underlying: error)
        }
        guard !certificates.isEmpty else { throw .invalidOption("\(certificateChain): no certificate in it") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: privateKey, format: .pem) } catch {
            throw .credentials("\(privateKey): not a readable, unencrypted PEM private key", underlying: error)
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: certificates.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}
