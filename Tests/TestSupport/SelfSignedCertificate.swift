import Foundation

/// A self-signed certificate for 127.0.0.1 (EC P-256, two days) and its key, made by OpenSSL:
/// what the TLS tests serve, and trust (curl's `--cacert`, Chromium by the key's hash).
public struct SelfSignedCertificate: Sendable {
    /// The certificate's PEM file.
    public let certificate: String
    /// The private key's PEM file.
    public let privateKey: String

    /// Makes `name`.pem and `name`-key.pem in `directory`.
    public init(in directory: String, name: String = "cert") throws {
        certificate = directory + "/\(name).pem"
        privateKey = directory + "/\(name)-key.pem"
        let made = try run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                                       "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", privateKey, "-out", certificate])
        guard made.status == 0 else { throw TestFailure("openssl: \(made.stderrText)") }
    }

    /// The hash Chromium's `--ignore-certificate-errors-spki-list` takes: the SHA-256 of the
    /// public key (DER), base64.
    public func publicKeyHash() throws -> String {
        let hash = try run("sh", ["-c", "openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64", "sh", certificate])
        let text = hash.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard hash.status == 0, text.count == 44 else { throw TestFailure("openssl (the key's hash): \(hash.stderrText)") }
        return text
    }

    /// The Chromium flag that trusts this certificate.
    public func chromiumTrust() throws -> String { "--ignore-certificate-errors-spki-list=\(try publicKeyHash())" }
}
