import ArgumentParser
import FoundationEssentials
import H264Kit
import SystemIO
#if canImport(Glibc)
import Glibc
#endif

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Encoding speed, bit rate and PSNR per x264 preset, beside the x264 CLI.",
        discussion: """
            Encodes a Y4M file, or a built-in synthetic 1080p source, with the compression session at each preset \
            (CRF 23 unless --crf). When the x264 CLI is on the PATH it encodes the same input with the same settings \
            and threads, and the two are shown side by side with the ratio of their speeds. Frames per second count \
            from the first frame to the last, as x264 reports its own; runs alternate between the two and the median \
            is shown. PSNR is what ffmpeg's psnr filter calls "average": the mean squared error over every Y, U and V \
            sample of every frame, each output decoded with libavcodec and compared with the input.
            """
    )

    @Argument(help: "A .y4m file (default: a synthetic 1920x1080 source at 25 fps, written to a temporary file).")
    var input: String?

    @Option(help: ArgumentHelp("Comma-separated x264 presets.", valueName: "list"))
    var presets = "ultrafast,veryfast,medium"

    @Option(help: "Encoder threads for both (default: x264's choice).")
    var threads: Int?

    @Option(help: "Constant quality (x264 CRF).")
    var crf: Double = 23

    @Option(help: "Frames to encode (default: all of the input; 120 of the synthetic source).")
    var frames: Int?

    @Option(help: "Runs per preset and encoder; the median speed is reported.")
    var runs = 3

    @Flag(help: "Do not run the x264 CLI.")
    var noX264 = false

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func validate() throws {
        if runs < 1 { throw ValidationError("--runs \(runs): expected at least 1") }
        if let frames, frames < 1 { throw ValidationError("--frames \(frames): expected a positive count") }
        if let threads, threads < 0 { throw ValidationError("--threads \(threads): expected 0 (automatic) or more") }
        if let input, !input.hasSuffix(".y4m") { throw ValidationError("\(input): bench reads Y4M (the x264 CLI is given the same file)") }
        for preset in presetList where !EncoderSettings.presets.contains(preset) {
            throw ValidationError("--presets: unknown preset \(preset) (\(EncoderSettings.presets.joined(separator: ", ")))")
        }
    }

    private var presetList: [String] { presets.split(separator: ",").map { String($0.filter { $0 != " " }) } }

    mutating func run() throws {
        let directory = try TemporaryDirectory(prefix: "h264kit-bench")
        var path = directory.path + "/synthetic-1080p.y4m"
        if let input {
            path = input
        } else {
            if !json { printError("writing \(frames ?? 120) frames of a synthetic 1920x1080 source to \(directory.path)") }
            try TestPattern(width: 1920, height: 1080).writeY4M(to: path, frames: frames ?? 120, frameRate: FrameRate(25, 1))
        }
        let probe = try Y4MReader(path: path)
        let x264 = noX264 ? nil : which("x264")
        if x264 == nil && !noX264 && !json { printError("x264 CLI not found on the PATH: h264kit only") }
        var report = Report(input: input ?? "synthetic 1920x1080", width: probe.width, height: probe.height, pixelFormat: probe.format.name,
                            frameRate: probe.frameRate.description, crf: crf, threads: threads, runs: runs, results: [])
        for preset in presetList {
            var ours: [Double] = [], theirs: [Double] = []
            var encoded: (bytes: [UInt8], frames: Int) = ([], 0)
            let x264Output = directory.path + "/x264-\(preset).264"
            // Which goes first alternates, so that neither always meets a cold cache.
            for run in 0..<runs {
                if run % 2 == 1, let x264 { theirs.append(try runX264(x264, input: path, preset: preset, output: x264Output)) }
                let result = try encode(path, preset: preset)
                ours.append(Double(result.frames) / result.seconds)
                encoded = (result.bytes, result.frames)
                if run % 2 == 0, let x264 { theirs.append(try runX264(x264, input: path, preset: preset, output: x264Output)) }
            }
            let duration = Double(encoded.frames) * probe.frameDuration.seconds
            let quality = try PSNRMeter.measuring(annexB: encoded.bytes, against: Y4MReader(path: path), frames: encoded.frames)
            var result = PresetResult(preset: preset, frames: encoded.frames, framesPerSecond: median(ours),
                                      megabitsPerSecond: Double(encoded.bytes.count * 8) / duration / 1e6, psnr: quality.average, psnrY: quality.luma)
            if x264 != nil {
                let bytes = try readWholeFile(x264Output)
                let reference = try PSNRMeter.measuring(annexB: bytes, against: Y4MReader(path: path), frames: encoded.frames)
                result.x264 = ToolResult(framesPerSecond: median(theirs), megabitsPerSecond: Double(bytes.count * 8) / duration / 1e6,
                                         psnr: reference.average, psnrY: reference.luma)
                result.speedRatio = result.framesPerSecond / median(theirs)
                result.identicalToX264 = bytes == encoded.bytes
            }
            if !json { printRow(result, first: report.results.isEmpty) }
            report.results.append(result)
        }
        if json { try printJSON(report) }
    }

    /// One encode of `path` at `preset`, Annex-B as the x264 CLI writes it, timed from the first
    /// picture to the last frame out.
    private func encode(_ path: String, preset: String) throws -> (seconds: Double, bytes: [UInt8], frames: Int) {
        let source = try Y4MReader(path: path)
        var settings = EncoderSettings(width: source.width, height: source.height, pixelFormat: source.format, frameRate: source.frameRate,
                                       preset: preset, rateControl: .constantQuality(crf))
        settings.threads = threads
        settings.annexB = true
        settings.repeatParameterSets = true
        settings.sampleAspectRatio = source.sampleAspectRatio
        let collector = Collector()
        let session = try CompressionSession(configuration: .init(settings: settings), outputHandler: { collector.take($0) })
        let clock = HostClock(), start = clock.currentTime
        var count = 0
        while frames.map({ count < $0 }) ?? true, let picture = try source.next() {
            try session.encode(picture, presentationTime: source.frameDuration * Int64(count))
            count += 1
        }
        session.finish()
        guard count > 0 else { throw ToolError("\(path): no frames") }
        return ((clock.currentTime - start).seconds, collector.bytes, count)
    }

    /// Runs the x264 CLI with the same settings; returns the frames per second it reports.
    private func runX264(_ x264: String, input: String, preset: String, output: String) throws -> Double {
        var arguments = ["--preset", preset, "--crf", "\(crf)", "--no-progress", "-o", output]
        if let threads { arguments += ["--threads", "\(threads)"] }
        if let frames { arguments += ["--frames", "\(frames)"] }
        arguments.append(input)
        let result = try spawn(x264, arguments)
        guard result.status == 0 else { throw ToolError("x264 failed (exit \(result.status)): \(result.stderr)") }
        // "encoded 120 frames, 23.97 fps, 4565.50 kb/s"
        guard let line = result.stderr.split(separator: "\n").last(where: { $0.hasPrefix("encoded ") }),
              let words = Optional(line.split(separator: " ")), let unit = words.firstIndex(of: "fps,"), unit > 0, let fps = Double(words[unit - 1])
        else { throw ToolError("x264 printed no \"encoded N frames, F fps\" line: \(result.stderr)") }
        return fps
    }

    private func printRow(_ r: PresetResult, first: Bool) {
        func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        if first {
            print("preset     " + pad("fps", 9) + pad("Mbit/s", 9) + pad("PSNR", 8) + (r.x264 != nil ? pad("x264 fps", 10) + pad("Mbit/s", 9) + pad("PSNR", 8) + pad("speed", 8) + "  same bytes" : ""))
        }
        var line = r.preset + String(repeating: " ", count: max(0, 10 - r.preset.count)) + pad(fixed(r.framesPerSecond, 1), 10) + pad(fixed(r.megabitsPerSecond, 2), 9) + pad(fixed(r.psnr, 2), 8)
        if let x = r.x264, let ratio = r.speedRatio {
            line += pad(fixed(x.framesPerSecond, 1), 10) + pad(fixed(x.megabitsPerSecond, 2), 9) + pad(fixed(x.psnr, 2), 8) + pad(fixed(ratio, 3) + "x", 8)
            line += r.identicalToX264 == true ? "  yes" : "  no"
        }
        print(line)
    }

    struct Report: Encodable {
        var input: String
        var width: Int
        var height: Int
        var pixelFormat: String
        var frameRate: String
        var crf: Double
        var threads: Int?
        var runs: Int
        var results: [PresetResult]
    }

    struct PresetResult: Encodable {
        var preset: String
        var frames: Int
        var framesPerSecond: Double
        var megabitsPerSecond: Double
        /// ffmpeg's psnr filter "average" (all planes), and luma alone; dB.
        var psnr: Double
        var psnrY: Double
        var x264: ToolResult?
        /// h264kit frames/s over the x264 CLI's.
        var speedRatio: Double?
        var identicalToX264: Bool?
    }

    struct ToolResult: Encodable {
        var framesPerSecond: Double
        var megabitsPerSecond: Double
        var psnr: Double
        var psnrY: Double
    }
}

/// The encoded frames, gathered (the session is synchronous: one thread calls this).
private final class Collector: @unchecked Sendable {
    var bytes: [UInt8] = []
    func take(_ frame: CompressedFrame) {
        frame.sampleBuffer.data.forEachSegment { bytes.append(contentsOf: $0) }
    }
}

/// The full path of `program` on the PATH, or nil.
func which(_ program: String) -> String? {
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return paths.map { "\($0)/\(program)" }.first { access($0, X_OK) == 0 }
}

/// Runs a program to completion with standard output discarded; returns its status and what it
/// printed on standard error.
func spawn(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
    let directory = try TemporaryDirectory(prefix: "h264kit-spawn")
    let errorPath = directory.path + "/stderr"
    let status: Int32
    do { status = try ChildProcess.run([executable] + arguments, standardError: errorPath) } catch { throw ToolError("\(error)") }
    return (status, String(decoding: (try? readWholeFile(errorPath)) ?? [], as: UTF8.self))
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
