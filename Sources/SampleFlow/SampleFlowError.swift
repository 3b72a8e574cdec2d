public import H264Bitstream
import ISOBMFF
import MPEGTS
public import MediaCore
public import SystemIO

/// Why moving samples from a source to a sink failed, with the error underneath and where it
/// happened: the input, the sample, the byte.
///
/// Each case carries the typed error of the layer that found the problem, never its words
/// alone: a bitstream error with its byte offset and NAL unit, a container error with its box
/// path, a system error with the operation, the file and `errno`.
public enum SampleFlowError: Error, Sendable, CustomStringConvertible {
    /// An Annex-B stream that could not be read as H.264; `input` names it ("stdin" for
    /// standard input), the bitstream error says where in it.
    case bitstream(BitstreamError, input: String)
    /// A movie that could not be read or written (the error names the file, the box, the byte).
    case container(ContainerError)
    /// A file that could not be opened, read, written or put in place.
    case file(SystemError)
    /// Sample `index` (from 0, decoding order; decoded at `decodeTime`) could not be taken by
    /// the output, for the reason underneath.
    indirect case sample(index: Int, decodeTime: MediaTime, underlying: SampleFlowError)
    /// An input with no sample to give: `input` names it, `reason` says what it holds instead.
    case noSamples(input: String, reason: String)
    /// A split's index (`index.json`) that could not be read or written: which, why, and the
    /// JSON coder's error when it had one.
    case splitIndex(path: String, reason: String, underlying: (any Error)?)
    /// An option out of its range; the text names it.
    case invalidOption(String)
    /// The calling task was cancelled (a job that leaves nothing when stopped early).
    case cancelled

    /// What went wrong and where, as the tool prints it.
    public var description: String {
        switch self {
        case .bitstream(let error, let input): "\(input): \(error.description)"
        case .container(let error): error.description
        case .file(let error): error.description
        case .sample(let index, let decodeTime, let underlying):
            "sample \(index) (decoded at \(decodeTime.isNumeric ? "\(decodeTime.seconds) s" : decodeTime.description)): \(underlying.description)"
        case .noSamples(let input, let reason): "\(input): \(reason)"
        case .splitIndex(let path, let reason, let underlying): "\(path): \(reason)" + (underlying.map { ": " + String(describing: $0) } ?? "")
        case .invalidOption(let text): text
        case .cancelled: "cancelled"
        }
    }

    /// The bitstream error underneath, if any (through the sample that failed).
    public var bitstreamError: BitstreamError? {
        switch self {
        case .bitstream(let error, _): error
        case .sample(_, _, let underlying): underlying.bitstreamError
        default: nil
        }
    }

    /// The system error underneath, if any: a file's, or a container's I/O failure.
    public var systemError: SystemError? {
        switch self {
        case .file(let error): error
        case .container(let error): error.systemError
        case .sample(_, _, let underlying): underlying.systemError
        default: nil
        }
    }
}
