import ArgumentParser
import FoundationEssentials
import H264Bitstream
import H264Codec
import H264Session
import MediaCore
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
        let directory = try TemporaryDirectory()
        let path: String
        if let input {
            path = input
        } else {
            path = directory.path + "/synthetic-1080p.y4m"
            if !json { printError("writing \(frames ?? 120) frames of a synthetic 1920x1080 source to \(directory.path)") }
            try SyntheticSource.write(to: path, width: 1920, height: 1080, frames: frames ?? 120, frameRate: FrameRate(25, 1))
        }
        let probe = try VideoSource(path: path, size: nil, pixelFormat: nil, frameRate: nil)
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
            let quality = try psnr(of: encoded.bytes, against: path, frames: encoded.frames)
            var result = PresetResult(preset: preset, frames: encoded.frames, framesPerSecond: median(ours),
                                      megabitsPerSecond: Double(encoded.bytes.count * 8) / duration / 1e6, psnr: quality.average, psnrY: quality.y)
            if x264 != nil {
                let bytes = try readWholeFile(x264Output)
                let reference = try psnr(of: bytes, against: path, frames: encoded.frames)
                result.x264 = ToolResult(framesPerSecond: median(theirs), megabitsPerSecond: Double(bytes.count * 8) / duration / 1e6,
                                         psnr: reference.average, psnrY: reference.y)
                result.speedRatio = result.framesPerSecond / median(theirs)
                result.identicalToX264 = bytes == encoded.bytes
            }
            if !json { printRow(result, first: report.results.isEmpty) }
            report.results.append(result)
        }
        if json { try printJSON(report) }
    }

    // MARK: Encoding

    /// One encode of `path` at `preset`, timed from the first picture to the last frame out.
    private func encode(_ path: String, preset: String) throws -> (seconds: Double, bytes: [UInt8], frames: Int) {
        var source = try VideoSource(path: path, size: nil, pixelFormat: nil, frameRate: nil)
        var settings = EncoderSettings(width: source.width, height: source.height, pixelFormat: source.encodedFormat, frameRate: source.frameRate,
                                       preset: preset, rateControl: .constantQuality(crf))
        settings.threads = threads
        // What the x264 CLI writes to a .264 file: Annex-B, SPS/PPS before every keyframe.
        settings.annexB = true
        settings.repeatParameterSets = true
        settings.sampleAspectRatio = source.sampleAspectRatio
        let collector = Collector()
        let session: CompressionSession
        do {
            session = try CompressionSession(configuration: .init(settings: settings), outputHandler: { collector.take($0) })
        } catch {
            throw ToolError("\(path): cannot encode at \(preset): \(error)")
        }
        let clock = HostClock()
        let start = clock.currentTime
        var count = 0
        while frames.map({ count < $0 }) ?? true, let picture = try source.next() {
            do { try session.encode(picture, presentationTime: source.frameDuration * Int64(count)) } catch {
                throw ToolError("\(path): frame \(count): \(error)")
            }
            count += 1
        }
        session.finish()
        let seconds = (clock.currentTime - start).seconds
        guard count > 0 else { throw ToolError("\(path): no frames") }
        return (seconds, collector.bytes, count)
    }

    /// Runs the x264 CLI with the same settings; returns the frames per second it reports.
    private func runX264(_ x264: String, input: String, preset: String, output: String) throws -> Double {
        var arguments = ["x264", "--preset", preset, "--crf", "\(crf)", "--no-progress", "-o", output]
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

    // MARK: Quality

    /// PSNR of an Annex-B stream against the first `frames` pictures of the Y4M at `path`.
    private func psnr(of stream: [UInt8], against path: String, frames: Int) throws -> (average: Double, y: Double) {
        let (samples, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: FrameRate(25, 1)))
        guard let first = samples.first else { throw ToolError("the encoder produced no frames") }
        var decoder = try H264Decoder(formatDescription: first.formatDescription)
        var source = try VideoSource(path: path, size: nil, pixelFormat: nil, frameRate: nil)
        var error = SquaredError()
        var compared = 0
        func compare(_ picture: DecodedPicture) throws {
            guard compared < frames, let original = try source.next() else { return }
            error.add(original, picture.pixelBuffer)
            compared += 1
        }
        for (index, sample) in samples.enumerated() {
            while try !decoder.send(sample.data, timestamp: Int64(index)) {
                while let picture = try decoder.receive() { try compare(picture) }
            }
            while let picture = try decoder.receive() { try compare(picture) }
        }
        try decoder.sendEndOfStream()
        while let picture = try decoder.receive() { try compare(picture) }
        guard compared == frames else { throw ToolError("decoded \(compared) of \(frames) frames") }
        return (error.psnr(planes: nil), error.psnr(planes: 0..<1))
    }

    // MARK: Output

    private func printRow(_ r: PresetResult, first: Bool) {
        func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        func fixed(_ value: Double, _ digits: Int) -> String {
            guard value.isFinite else { return "inf" }
            let scale = Double([1, 10, 100, 1000][digits])
            let n = Int((value * scale).rounded())
            let whole = n / Int(scale), fraction = String(abs(n) % Int(scale))
            return digits == 0 ? "\(whole)" : "\(whole).\(String(repeating: "0", count: digits - fraction.count))\(fraction)"
        }
        if first {
            print("preset     " + pad("fps", 9) + pad("Mbit/s", 9) + pad("PSNR", 8) + (r.x264 != nil ? pad("x264 fps", 10) + pad("Mbit/s", 9) + pad("PSNR", 8) + pad("speed", 8) + "  same bytes" : ""))
        }
        var line = r.preset.padding(10) + pad(fixed(r.framesPerSecond, 1), 10) + pad(fixed(r.megabitsPerSecond, 2), 9) + pad(fixed(r.psnr, 2), 8)
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

/// Sums of squared differences per plane, over frames, for PSNR as ffmpeg's psnr filter reports
/// it: 10·log10(max² / MSE), the MSE taken over every sample of the planes counted.
struct SquaredError {
    private(set) var sums: [Double] = []
    private(set) var counts: [Int] = []
    private(set) var maximum = 255.0

    mutating func add(_ a: PixelBuffer, _ b: PixelBuffer) {
        precondition(a.format == b.format && a.width == b.width && a.height == b.height, "PSNR of pictures that differ in format or size")
        if sums.isEmpty {
            sums = Array(repeating: 0, count: a.planes.count)
            counts = Array(repeating: 0, count: a.planes.count)
            maximum = Double((1 << a.format.bitDepth) - 1)
        }
        let wide = a.format.bytesPerSample == 2
        for plane in a.planes.indices {
            let p = a.planes[plane], q = b.planes[plane]
            var sum: UInt64 = 0
            for row in 0..<p.height {
                let x = p.base + row * p.bytesPerRow, y = q.base + row * q.bytesPerRow
                var rowSum: UInt64 = 0
                if wide {
                    let u = x.assumingMemoryBound(to: UInt16.self), v = y.assumingMemoryBound(to: UInt16.self)
                    for i in 0..<(p.rowBytes / 2) { let d = Int64(u[i]) - Int64(v[i]); rowSum &+= UInt64(d * d) }
                } else {
                    let u = x.assumingMemoryBound(to: UInt8.self), v = y.assumingMemoryBound(to: UInt8.self)
                    var partial: UInt32 = 0  // 255² × a row of up to 16384 samples fits
                    for i in 0..<p.rowBytes { let d = Int32(u[i]) &- Int32(v[i]); partial &+= UInt32(d &* d) }
                    rowSum = UInt64(partial)
                }
                sum &+= rowSum
            }
            sums[plane] += Double(sum)
            counts[plane] += p.rowBytes / (wide ? 2 : 1) * p.height
        }
    }

    /// PSNR in dB over the given planes (all when nil); infinite when the pictures are identical.
    func psnr(planes: Range<Int>?) -> Double {
        let range = planes ?? sums.indices
        let total = range.reduce(0.0) { $0 + sums[$1] }, count = range.reduce(0) { $0 + counts[$1] }
        guard count > 0 else { return .nan }
        guard total > 0 else { return .infinity }
        return 10 * log10(maximum * maximum / (total / Double(count)))
    }
}

/// A moving test picture that keeps an encoder busy: a sliding diagonal gradient, a textured
/// square crossing it, colour ramps moving the other way, and a little deterministic noise.
enum SyntheticSource {
    static func write(to path: String, width: Int, height: Int, frames: Int, frameRate: FrameRate) throws {
        let output = try OutputFile(path: path)
        let header = "YUV4MPEG2 W\(width) H\(height) F\(frameRate.numerator):\(frameRate.denominator) Ip A1:1 C420jpeg\n"
        try output.write(Array(header.utf8))
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        var frame = [UInt8](repeating: 0, count: width * height + 2 * chromaWidth * chromaHeight)
        for t in 0..<frames {
            var seed = UInt32(truncatingIfNeeded: t &* 2_654_435_761) | 1
            let squareX = (100 + 9 * t) % max(1, width - 256), squareY = (200 + 4 * t) % max(1, height - 256)
            for y in 0..<height {
                let row = y * width
                let inSquareRow = y >= squareY && y < squareY + 256
                for x in 0..<width {
                    seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5
                    var value = (x + y + 3 * t) & 255
                    if inSquareRow && x >= squareX && x < squareX + 256 {
                        value = ((x - squareX) >> 4 ^ (y - squareY) >> 4) & 1 == 0 ? 40 : 215
                    }
                    frame[row + x] = UInt8(clamping: value + Int(seed & 7) - 3)
                }
            }
            let u = width * height, v = u + chromaWidth * chromaHeight
            for y in 0..<chromaHeight {
                for x in 0..<chromaWidth {
                    frame[u + y * chromaWidth + x] = UInt8(96 + ((x - t) & 63))
                    frame[v + y * chromaWidth + x] = UInt8(96 + ((y + 2 * t) & 63))
                }
            }
            try output.write(Array("FRAME\n".utf8))
            try output.write(frame)
        }
        try output.commit()
    }
}

/// A directory under $TMPDIR removed with everything in it when this goes away.
final class TemporaryDirectory {
    let path: String
    init() throws {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/h264kit-bench-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw ToolError("\(base): cannot create a temporary directory: \(errnoText())")
        }
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    deinit {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
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
    let directory = try TemporaryDirectory()
    let errorPath = directory.path + "/stderr"
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, nil, &argv, environ)
    guard result == 0 else { throw ToolError("\(executable): cannot start: \(errnoText(result))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw ToolError("\(executable): waitpid failed: \(errnoText())") }
    }
    let text = String(decoding: (try? readWholeFile(errorPath)) ?? [], as: UTF8.self)
    // WIFEXITED / WEXITSTATUS, which Swift does not import.
    let exited = status & 0x7F == 0
    return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), text)
}

/// A small file's bytes.
func readWholeFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ToolError("\(path): cannot open: \(errnoText())") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    try readChunks(fd: fd, name: path) { bytes += $0 }
    return bytes
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

extension String {
    fileprivate func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
