import NIOSSL

/// Which server certificates a client trusts over TLS (`rtsps://`).
public enum TLSTrust: Sendable, Hashable {
    /// The system's trust store, the certificate's name checked against the host.
    case system
    /// The certificates (PEM, one or more) in this file, the certificate's name checked against
    /// the host (a private authority, or a server's self-signed certificate).
    case certificates(file: String)
    /// Any certificate, unchecked: the connection is encrypted but the server not known (as
    /// `curl --insecure`; for tests and trusted networks).
    case anyCertificate

    /// The client's TLS configuration (TLS 1.2 or later); a file that cannot be read is an error
    /// naming it.
    func clientConfiguration() throws(StreamingError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        switch self {
        case .system: break
        case .certificates(let file):
            let certificates: [NIOSSLCertificate]
            do { certificates = try NIOSSLCertificate.fromPEMFile(file) } catch {
                throw .credentials("\(file): not a readable PEM certificate file", underlying: error)
            }
            guard !certificates.isEmpty else { throw .invalidOption("\(file): no certificate in it") }
            configuration.trustRoots = .certificates(certificates)
        case .anyCertificate:
            configuration.certificateVerification = .none
        }
        return configuration
    }

    /// A client context (made once per connection: a reloaded file is read again).
    func context() throws(StreamingError) -> NIOSSLContext {
        do { return try NIOSSLContext(configuration: try clientConfiguration()) } catch let error as StreamingError { throw error } catch {
            throw .credentials("the TLS client's settings", underlying: error)
        }
    }
}
