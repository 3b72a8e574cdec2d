import ArgumentParser
import H264Kit
import MediaProbe
import SystemIO

struct Bench: InterruptibleCommand {
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

    func work() throws {
        let directory = try TemporaryDirectory(prefix: "h264kit-bench")
        var path = directory.path + "/synthetic-1080p.y4m"
        if let input {
            path = input
        } else {
            if !json { printError("writing \(frames ?? 120) frames of a synthetic 1920x1080 source to \(directory.path)") }
            try TestPattern(width: 1920, height: 1080).writeY4M(to: path, frames: frames ?? 120, frameRate: FrameRate(25, 1))
        }
        let x264 = noX264 ? nil : EncoderBenchmark.executable(named: "x264")
        if x264 == nil && !noX264 && !json { printError("x264 CLI not found on the PATH: h264kit only") }
        let benchmark = EncoderBenchmark(options: .init(presets: presetList, crf: crf, threads: threads, frames: frames, runs: runs, x264: x264))
        var first = true
        let report: EncoderBenchmark.Report
        do {
            report = try benchmark.run(path: path, name: input ?? "synthetic 1920x1080") { result in
                if !json { printRow(result, first: first) }
                first = false
            }
        } catch {
            throw ToolError(error)
        }
        if json { try printJSON(report) }
    }

    private func printRow(_ r: EncoderBenchmark.PresetResult, first: Bool) {
        func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        if first {
            print("preset     " + pad("fps", 9) + pad("Mbit/s", 9) + pad("PSNR", 8) + (r.x264 != nil ? pad("x264 fps", 10) + pad("Mbit/s", 9) + pad("PSNR", 8) + pad("speed", 8) + "  same bytes" : ""))
        }
        var line = r.preset + String(repeating: " ", count: max(0, 10 - r.preset.count)) + pad(decimalText(r.framesPerSecond, 1), 10) + pad(decimalText(r.megabitsPerSecond, 2), 9) + pad(decimalText(r.psnr, 2), 8)
        if let x = r.x264, let ratio = r.speedRatio {
            line += pad(decimalText(x.framesPerSecond, 1), 10) + pad(decimalText(x.megabitsPerSecond, 2), 9) + pad(decimalText(x.psnr, 2), 8) + pad(decimalText(ratio, 3) + "x", 8)
            line += r.identicalToX264 == true ? "  yes" : "  no"
        }
        print(line)
    }
}
