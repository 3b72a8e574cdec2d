import ArgumentParser
import H264Kit
import SystemIO

/// Who may connect to a server the tool runs, and by what: a certificate for TLS and a secret
/// that signs URLs (`stream` to `https://` or `rtsp(s)://`, `preview --https`).
struct AccessOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Answer only URLs signed with this secret (base64 text, or at least 16 raw bytes; `h264kit sign`), 403 to any other; the URL printed is signed.", valueName: "FILE"))
    var secretFile: String?

    @Option(help: ArgumentHelp("--secret-file: how long the printed URL is good for.", valueName: "seconds"))
    var expiresIn = 3600

    @Option(help: ArgumentHelp("TLS: the certificate chain (PEM: the server's certificate first); SIGHUP reads it again.", valueName: "FILE"))
    var cert: String?

    @Option(help: ArgumentHelp("TLS: the certificate's private key (PEM, unencrypted).", valueName: "FILE"))
    var key: String?

    /// The certificate and key, when both are given.
    var tlsFiles: TLSFiles? { cert.flatMap { cert in key.map { TLSFiles(certificateChain: cert, privateKey: $0) } } }

    /// Whether a certificate or key was given.
    var givesCertificate: Bool { cert != nil || key != nil }

    func validate() throws {
        guard expiresIn > 0, expiresIn <= 10 * 365 * 86_400 else { throw ValidationError("--expires-in \(expiresIn): 1 s to ten years") }
        if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together") }
    }

    /// The key read from ``secretFile``, if given.
    func accessKey() throws -> URLSigningKey? { try secretFile.map(URLSigningKey.init(secretFile:)) }

    /// The Unix time a URL signed now expires at.
    var expiry: Int { Int(WallClock.seconds) + expiresIn }

    /// SIGHUP calls `reload` (a renewed certificate, as nginx reads it) and says what came of it,
    /// while the result is kept; `nil` without a certificate.
    func reloadingOnHangup(_ reload: @escaping @Sendable () throws -> Void) -> HangupSignal? {
        tlsFiles.map { files in
            HangupSignal {
                do {
                    try reload()
                    printError("reloaded \(files.certificateChain) and \(files.privateKey)")
                } catch {
                    printError("warning: the certificate in use stays: \(error)")
                }
            }
        }
    }
}
