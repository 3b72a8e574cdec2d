import ArgumentParser
import H264Kit

/// Which certificates an `rtsps://` source may present (the system's trust store by default).
struct TLSClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp("rtsps://: trust the certificates in this PEM file (a private authority, a self-signed server) instead of the system's.", valueName: "FILE"))
    var cacert: String?

    @Flag(help: "rtsps://: accept any certificate (encrypted, but the server is not checked).")
    var insecure = false

    func validate() throws {
        if cacert != nil, insecure { throw ValidationError("--cacert or --insecure, not both") }
    }

    /// The trust these options ask for.
    var trust: TLSTrust {
        if insecure { return .anyCertificate }
        return cacert.map { .certificates(file: $0) } ?? .system
    }
}
