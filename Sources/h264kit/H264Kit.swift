import ArgumentParser
import FoundationEssentials
import H264Kit
import SystemIO
import SystemPackage

@main
struct H264KitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "h264kit",
        abstract: "Inspect, mux, demux, decode and encode H.264 video.",
        version: "0.2.0",
        subcommands: [Inspect.self, Mux.self, Demux.self, Decode.self, Encode.self, Transcode.self, Split.self, Concat.self, PackageCommand.self, SDP.self, Stream.self, Receive.self, PreviewCommand.self, Bench.self, TimecodeCommand.self, Sign.self]
    )

    /// The tool's entry point: SIGPIPE ignored first, so that a reader closing the tool's
    /// output pipe (`| head`) ends a run with a write error and a message, not the signal.
    static func main() async {
        ignoreBrokenPipeSignal()
        Interruption.shared.install()
        await main(nil)
    }
}

/// A failure the tool reports as it is and exits 1 for.
struct ToolError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    init(_ error: some Error) { message = "\(error)" }
    var description: String { message }
}

/// A value as sorted, indented JSON: what every `--json` prints and every report file holds.
func jsonBytes(_ value: some Encodable) throws -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    return Array(try encoder.encode(value))
}

/// Prints a value as JSON.
func printJSON(_ value: some Encodable) throws { print(String(decoding: try jsonBytes(value), as: UTF8.self)) }

/// Writes a line to standard error.
func printError(_ text: String) { writeToStandardError(text.hasSuffix("\n") ? text : text + "\n") }

/// Parses a rate option ("30000/1001", "25", "29.97") for `validate()`.
func parseRate(_ text: String?, _ option: String) throws -> FrameRate? {
    guard let text else { return nil }
    guard let rate = FrameRate(parsing: text), rate.numerator > 0 else { throw ValidationError("\(option) \(text): expected a rate such as 25, 30000/1001 or 29.97") }
    return rate
}

/// The limits on untrusted input (ffmpeg's -max_pixels), raised for inputs that need more.
struct LimitOptions: ParsableArguments {
    @Option(name: .customLong("max-pixels"), help: "Refuse pictures of more pixels (width × height; default: H.264 level 6.2's largest frame).")
    var maxPixels = PictureLimits.h264MaximumPixels
    @Option(name: .customLong("max-samples"), help: "Refuse a movie whose index holds more samples.")
    var maxSamples = MovieReader.Limits().maximumSamples
    var pictures: PictureLimits { PictureLimits(maximumPixels: maxPixels) }
    var movie: MovieReader.Limits { MovieReader.Limits(maximumSamples: maxSamples) }
    /// A media source's options (for sending as it is, not decoding) with these limits.
    var mediaSource: MediaSource.Options {
        var options = MediaSource.Options()
        options.movieLimits = movie
        return options
    }
    /// These limits as command-line arguments.
    var arguments: [String] { ["--max-pixels", String(maxPixels), "--max-samples", String(maxSamples)] }
}

/// What a remux does with pictures of damaged transport stream packets (as ffmpeg -c copy, it
/// keeps them for a decoder to conceal, and says so).
struct DamageOptions: ParsableArguments {
    @Flag(help: "For a transport stream input: leave out the pictures of damaged PES packets (lost or flagged transport packets), counted, instead of keeping them for a decoder to conceal.")
    var dropDamaged = false
    /// `options` with this choice.
    func applied(to options: MediaSource.Options) -> MediaSource.Options {
        var options = options
        options.transportStream.keepsDamagedPESPackets = !dropDamaged
        return options
    }
}

/// A one-line progress report on a terminal's standard error, at most four times a second;
/// silent in a pipe.
final class Progress {
    let enabled = ProcessEnvironment.isTerminal(.standardError)
    private let clock = HostClock()
    private var lastUpdate: Int64 = 0
    private var shown = false

    /// A bar for `done` of `total` (bytes, or samples) and a note.
    func update(done: Int, total: Int?, unit: String, note: @autoclosure () -> String) {
        guard enabled, tick() else { return }
        var line = ""
        if let total, total > 0 {
            let percent = min(100, done * 100 / total)
            line = "[" + String(repeating: "#", count: percent / 5) + String(repeating: ".", count: 20 - percent / 5) + "] \(percent)% "
        }
        writeToStandardError("\r\u{1B}[K" + line + (unit == "MB" ? "\(done >> 20) MB" : "\(done) \(unit)") + ", " + note())
        shown = true
    }

    /// A line of its own.
    func update(line: String) {
        guard enabled, tick() else { return }
        writeToStandardError("\r\u{1B}[K" + line)
        shown = true
    }

    private func tick() -> Bool {
        let now = clock.currentTime.value  // nanoseconds
        guard now - lastUpdate > 250_000_000 else { return false }
        lastUpdate = now
        return true
    }

    func clear() {
        if shown { writeToStandardError("\r\u{1B}[K"); shown = false }
    }
}

/// Prints a sample reader's warnings, naming the option that settles each.
func printWarnings(_ warnings: [SampleBufferReader.Warning], name: String) {
    for warning in warnings {
        switch warning {
        case .assumedFrameRate(let rate):
            printError("\(name): warning: the stream has no VUI timing; assuming \(rate) fps (set the rate with --fps, e.g. --fps 30000/1001)")
        case .frameRateOverridden(let stream, let given):
            printError("\(name): warning: the stream's VUI timing says \(stream) fps; --fps \(given) overrides it")
        default:
            printError("\(name): warning: \(warning)")
        }
    }
}

/// Writes `bytes` to `path` atomically (a temporary file renamed into place), naming the path on failure.
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    do {
        let file = try OutputFile(path: path)
        try file.write(bytes)
        try file.commit()
    } catch {
        throw ToolError("\(path): \(error)")
    }
}
