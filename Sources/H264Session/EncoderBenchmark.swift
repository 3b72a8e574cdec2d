import H264Bitstream
import H264Codec
import MediaCore
import MediaIO
import SystemIO

/// Encoding speed, bit rate and PSNR of the ``CompressionSession`` at each x264 preset, beside
/// the x264 CLI encoding the same pictures with the same settings when one is given:
/// `h264kit bench` as one call.
///
/// Frames per second count from the first picture in to the last frame out, as the x264 CLI
/// reports its own; runs alternate between the two encoders (neither always meets a cold
/// cache) and the median is reported. PSNR is what FFmpeg's psnr filter calls "average": the
/// mean squared error over every Y, U and V sample of every frame, each encoded stream decoded
/// with libavcodec and compared with the input. Memory is one encoded stream at a time.
public struct EncoderBenchmark: Sendable {
    /// What to measure.
    public struct Options: Sendable, Hashable {
        /// x264 presets, in order (`EncoderSettings/presets`).
        public var presets: [String]
        /// Constant quality (CRF) for every run.
        public var crf: Double
        /// Encoder threads for both (nil: x264's choice).
        public var threads: Int?
        /// Frames to encode (nil: the whole input).
        public var frames: Int?
        /// Runs per preset and encoder: the median speed is reported.
        public var runs: Int
        /// The x264 CLI to compare with (an executable's path); nil measures H264Kit alone.
        public var x264: String?

        /// Three presets at CRF 23, three runs each, no comparison.
        public init(presets: [String] = ["ultrafast", "veryfast", "medium"], crf: Double = 23, threads: Int? = nil, frames: Int? = nil,
                    runs: Int = 3, x264: String? = nil) {
            self.presets = presets
            self.crf = crf
            self.threads = threads
            self.frames = frames
            self.runs = runs
            self.x264 = x264
        }
    }

    /// What a benchmark measured (the JSON `h264kit bench --json` prints).
    public struct Report: Codable, Sendable, Hashable {
        /// The input's name.
        public var input: String
        /// The pictures' width.
        public var width: Int
        /// The pictures' height.
        public var height: Int
        /// The pictures' pixel format.
        public var pixelFormat: String
        /// The input's frame rate.
        public var frameRate: String
        /// The CRF every run used.
        public var crf: Double
        /// The encoder threads, if set.
        public var threads: Int?
        /// Runs per preset and encoder.
        public var runs: Int
        /// One result per preset.
        public var results: [PresetResult]
    }

    /// One preset's figures.
    public struct PresetResult: Codable, Sendable, Hashable {
        /// The preset.
        public var preset: String
        /// Frames encoded.
        public var frames: Int
        /// H264Kit's median frames per second.
        public var framesPerSecond: Double
        /// The stream's bit rate, Mbit/s.
        public var megabitsPerSecond: Double
        /// FFmpeg's psnr filter "average" (all planes), dB.
        public var psnr: Double
        /// Luma alone, dB.
        public var psnrY: Double
        /// The x264 CLI's figures, when compared.
        public var x264: ToolResult?
        /// H264Kit's frames per second over the x264 CLI's.
        public var speedRatio: Double?
        /// Whether the two streams are the same bytes.
        public var identicalToX264: Bool?
    }

    /// Another encoder's figures.
    public struct ToolResult: Codable, Sendable, Hashable {
        /// Its median frames per second (as it reports them).
        public var framesPerSecond: Double
        /// Its stream's bit rate, Mbit/s.
        public var megabitsPerSecond: Double
        /// Its PSNR, all planes, dB.
        public var psnr: Double
        /// Its luma PSNR, dB.
        public var psnrY: Double
    }

    /// What to measure.
    public var options: Options

    /// A benchmark with `options`.
    public init(options: Options = Options()) { self.options = options }

    /// The path of `program` on `PATH` (an x264 CLI to compare with, say), or nil.
    public static func executable(named program: String) -> String? {
        ProcessEnvironment.executable(named: program)
    }

    /// Measures every preset on the Y4M file at `path` (`name` in the report), calling
    /// `onResult` as each preset is done.
    public func run(path: String, name: String? = nil, onResult: (PresetResult) -> Void = { _ in }) throws(SessionError) -> Report {
        guard options.runs >= 1 else { throw .invalidOption("\(options.runs) runs: at least 1") }
        if let frames = options.frames, frames < 1 { throw .invalidOption("\(frames) frames: at least 1") }
        for preset in options.presets where !EncoderSettings.presets.contains(preset) {
            throw .invalidOption("unknown preset \(preset) (\(EncoderSettings.presets.joined(separator: ", ")))")
        }
        let directory: TemporaryDirectory
        let probe: Y4MReader
        do { directory = try TemporaryDirectory(prefix: "h264kit-bench") } catch { throw .system(error) }
        do { probe = try Y4MReader(path: path) } catch { throw .mediaIO(error) }
        var report = Report(input: name ?? path, width: probe.width, height: probe.height, pixelFormat: probe.format.name, frameRate: probe.frameRate.description,
                            crf: options.crf, threads: options.threads, runs: options.runs, results: [])
        for preset in options.presets {
            var ours: [Double] = [], theirs: [Double] = []
            var encoded: (bytes: [UInt8], frames: Int) = ([], 0)
            let x264Output = directory.path + "/x264-\(preset).264"
            for run in 0..<options.runs {
                if run % 2 == 1, let x264 = options.x264 { theirs.append(try runX264(x264, input: path, preset: preset, output: x264Output)) }
                let result = try encode(path, preset: preset)
                ours.append(Double(result.frames) / result.seconds)
                encoded = (result.bytes, result.frames)
                if run % 2 == 0, let x264 = options.x264 { theirs.append(try runX264(x264, input: path, preset: preset, output: x264Output)) }
            }
            let duration = Double(encoded.frames) * probe.frameDuration.seconds
            let quality = try measure(encoded.bytes, against: path, frames: encoded.frames)
            var result = PresetResult(preset: preset, frames: encoded.frames, framesPerSecond: Self.median(ours),
                                      megabitsPerSecond: Double(encoded.bytes.count * 8) / duration / 1e6, psnr: quality.average, psnrY: quality.luma)
            if options.x264 != nil {
                let bytes: [UInt8]
                do { bytes = try readWholeFile(x264Output) } catch { throw .system(error) }
                let reference = try measure(bytes, against: path, frames: encoded.frames)
                result.x264 = ToolResult(framesPerSecond: Self.median(theirs), megabitsPerSecond: Double(bytes.count * 8) / duration / 1e6,
                                         psnr: reference.average, psnrY: reference.luma)
                result.speedRatio = result.framesPerSecond / Self.median(theirs)
                result.identicalToX264 = bytes == encoded.bytes
            }
            onResult(result)
            report.results.append(result)
        }
        return report
    }

    /// The PSNR of an encoded stream against the source's first `frames` pictures.
    private func measure(_ stream: [UInt8], against path: String, frames: Int) throws(SessionError) -> PSNRMeter {
        let source: Y4MReader
        do { source = try Y4MReader(path: path) } catch { throw .mediaIO(error) }
        return try PSNRMeter.measuring(annexB: stream, against: source, frames: frames)
    }

    /// One encode of `path` at `preset`, Annex-B as the x264 CLI writes it, timed from the
    /// first picture in to the last frame out.
    private func encode(_ path: String, preset: String) throws(SessionError) -> (seconds: Double, bytes: [UInt8], frames: Int) {
        let source: Y4MReader
        do { source = try Y4MReader(path: path) } catch { throw .mediaIO(error) }
        var settings = EncoderSettings(width: source.width, height: source.height, pixelFormat: source.format, frameRate: source.frameRate,
                                       preset: preset, rateControl: .constantQuality(options.crf))
        settings.threads = options.threads
        settings.annexB = true
        settings.repeatParameterSets = true
        settings.sampleAspectRatio = source.sampleAspectRatio
        let collector = Collector()
        let session = try CompressionSession(configuration: .init(settings: settings), outputHandler: { collector.take($0) })
        let clock = HostClock(), start = clock.currentTime
        var count = 0
        while options.frames.map({ count < $0 }) ?? true {
            if Task.isCancelled { throw .cancelled }
            let picture: PixelBuffer?
            do { picture = try source.next() } catch { throw .mediaIO(error) }
            guard let picture else { break }
            try session.encode(picture, presentationTime: source.frameDuration * Int64(count))
            count += 1
        }
        session.finish()
        guard count > 0 else { throw .mediaIO(MediaIOError(.invalidData, "no pictures", path: path)) }
        return ((clock.currentTime - start).seconds, collector.bytes, count)
    }

    /// Runs the x264 CLI with the same settings; returns the frames per second it reports.
    private func runX264(_ x264: String, input: String, preset: String, output: String) throws(SessionError) -> Double {
        var arguments = [x264, "--preset", preset, "--crf", "\(options.crf)", "--no-progress", "-o", output]
        if let threads = options.threads { arguments += ["--threads", "\(threads)"] }
        if let frames = options.frames { arguments += ["--frames", "\(frames)"] }
        arguments.append(input)
        let errorPath = output + ".stderr"
        defer { removeFile(errorPath) }
        let status: Int32
        do { status = try ChildProcess.run(arguments, standardError: errorPath, stopping: { Task.isCancelled }) } catch { throw .system(error) }
        if Task.isCancelled { throw .cancelled }
        let stderr = String(decoding: (try? readWholeFile(errorPath)) ?? [], as: UTF8.self)
        guard status == 0 else { throw .referenceFailed("x264 failed (exit \(status)): \(stderr)") }
        // "encoded 120 frames, 23.97 fps, 4565.50 kb/s"
        guard let line = stderr.split(separator: "\n").last(where: { $0.hasPrefix("encoded ") }),
              case let words = line.split(separator: " "), let unit = words.firstIndex(of: "fps,"), unit > 0, let fps = Double(words[unit - 1])
        else { throw .referenceFailed("x264 printed no \"encoded N frames, F fps\" line: \(stderr)") }
        return fps
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

/// The encoded frames, gathered (the session is synchronous: one thread calls this).
private final class Collector: @unchecked Sendable {
    var bytes: [UInt8] = []
    func take(_ frame: CompressedFrame) {
        frame.sampleBuffer.data.forEachSegment { bytes.append(contentsOf: $0) }
    }
}
