public import H264Network
public import SampleFlow

/// Why sending, serving or receiving H.264 on the network failed, with the error underneath and
/// where it happened: the protocol's error (H264Network's, with its packet or line), the
/// socket's (what was done, with which address, SwiftNIO's error with its `errno`), the media
/// file's or the output's (SampleFlow's, with the file, the byte, the sample).
public enum StreamingError: Error, Sendable, CustomStringConvertible {
    /// A packet, session description, URL or RTSP exchange that broke its protocol.
    case network(NetworkError)
    /// A socket that could not be resolved, bound, connected, read or written: what was being
    /// done and with which address, and the socket layer's error when it gave one.
    case socket(String, underlying: (any Error)?)
    /// The peer went away or did not answer: what happened, with whom.
    case peer(String)
    /// The media to send could not be read.
    case source(SampleFlowError)
    /// What was received could not be written.
    case output(SampleFlowError)
    /// Nothing whole was received, so nothing was written: from where, and how it ended.
    case nothingReceived(String)
    /// The caller's handler for received samples threw this; receiving ended there.
    case handler(any Error)
    /// The sequence of samples being sent failed (pictures encoded live, say): its error.
    case samples(any Error)
    /// An option out of its range; the text names it.
    case invalidOption(String)
    /// A rendition of a ladder (named) could not be encoded: the encoder's or decoder's error.
    case rendition(String, underlying: any Error)
    /// A certificate, key or secret file that could not be read or used: which file and why,
    /// and the error underneath (the TLS library's, the system's, the key's).
    case credentials(String, underlying: (any Error)?)

    /// What went wrong and where, as the tool prints it.
    public var description: String {
        switch self {
        case .network(let error): error.description
        case .socket(let what, let underlying): what + (underlying.map { ": " + String(describing: $0) } ?? "")
        case .peer(let text): text
        case .source(let error): error.description
        case .output(let error): error.description
        case .nothingReceived(let text): text
        case .handler(let error): String(describing: error)
        case .samples(let error): String(describing: error)
        case .invalidOption(let text): text
        case .rendition(let name, let underlying): "rendition \(name): " + String(describing: underlying)
        case .credentials(let what, let underlying): what + (underlying.map { ": " + String(describing: $0) } ?? "")
        }
    }
}

extension StreamingError {
    /// An error of a sequence of samples being sent, as this module's: SampleFlow's (a file
    /// read) as ``source(_:)``, this module's as itself, a protocol's as ``network(_:)``, any
    /// other (a live encoder's) as ``samples(_:)``, kept whole.
    package static func sending(_ error: any Error) -> StreamingError {
        switch error {
        case let error as StreamingError: error
        case let error as SampleFlowError: .source(error)
        case let error as NetworkError: .network(error)
        default: .samples(error)
        }
    }

    /// A protocol state machine's or parser's work, its error as this module's.
    package static func network<T>(_ body: () throws(NetworkError) -> T) throws(StreamingError) -> T {
        do { return try body() } catch { throw .network(error) }
    }
}
