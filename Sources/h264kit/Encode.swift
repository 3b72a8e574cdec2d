import ArgumentParser
import H264Kit
import MediaProbe

struct Encode: InterruptibleCommand {
    static let configuration = CommandConfiguration(
        abstract: "Encode Y4M or raw video with x264 into an H.264 stream, MP4 or MOV.",
        discussion: """
            Runs the compression session over libx264 with the x264 CLI's option names and defaults. A .264/.h264 \
            output is an Annex-B stream with SPS/PPS before every keyframe (a receiver can join mid-stream); .mp4 and \
            .mov go through the container writer. Settings are checked before anything is written.
            """
    )

    /// The x264 options `encode` and `transcode` share.
    struct EncoderOptions: ParsableArguments {
        @Option(help: "x264 preset: ultrafast ... placebo.")
        var preset = "medium"

        @Option(help: "x264 tune: film, animation, grain, stillimage, psnr, ssim, fastdecode, zerolatency.")
        var tune: String?

        @Option(help: "Constant quality (x264 CRF, 0-51; 23 by default).")
        var crf: Double?

        @Option(help: ArgumentHelp("Average bit rate in kbit/s.", valueName: "kbps"))
        var bitrate: Int?

        @Option(help: ArgumentHelp("VBV maximum rate in kbit/s.", valueName: "kbps"))
        var maxrate: Int?

        @Option(help: ArgumentHelp("VBV buffer size in kbit.", valueName: "kbit"))
        var bufsize: Int?

        @Option(help: "Profile: baseline, main, high, high10, high422, high444.")
        var profile: String?

        @Option(help: "Level (3.1, 4, 4.1, ...); x264 picks one from size and rate by default.")
        var level: String?

        @Option(help: "Maximum keyframe interval in frames.")
        var keyint: Int?

        @Option(help: "B-frames between references (0: no reordering).")
        var bframes: Int?

        @Option(help: "1, or 2 for two-pass at --bitrate (the input is read twice).")
        var passes = 1

        @Option(help: "Encoder threads (0: automatic).")
        var threads: Int?

        func validate() throws {
            if crf != nil && bitrate != nil { throw ValidationError("give --crf or --bitrate, not both") }
            if passes != 1 && passes != 2 { throw ValidationError("--passes \(passes): 1 or 2") }
            if passes == 2 && bitrate == nil { throw ValidationError("--passes 2 needs --bitrate (two passes aim at a bit rate)") }
            if (maxrate == nil) != (bufsize == nil) { throw ValidationError("--maxrate and --bufsize go together") }
        }

        /// These options as command-line arguments (what a chunk's process is given).
        var arguments: [String] {
            var tokens = ["--preset", preset, "--passes", String(passes)]
            let optional: [(String, String?)] = [("--tune", tune), ("--crf", crf.map { String($0) }), ("--bitrate", bitrate.map(String.init)),
                                                  ("--maxrate", maxrate.map(String.init)), ("--bufsize", bufsize.map(String.init)), ("--profile", profile),
                                                  ("--level", level), ("--keyint", keyint.map(String.init)), ("--bframes", bframes.map(String.init)),
                                                  ("--threads", threads.map(String.init))]
            for case let (name, value?) in optional { tokens += [name, value] }
            return tokens
        }

        /// The settings for pictures of this size, format and rate.
        func settings(width: Int, height: Int, format: PixelFormat, frameRate: FrameRate) -> EncoderSettings {
            var settings = EncoderSettings(width: width, height: height, pixelFormat: format, frameRate: frameRate, preset: preset, tune: tune,
                                           rateControl: bitrate.map { .averageBitRate($0) } ?? .constantQuality(crf ?? 23))
            settings.maximumBitRate = maxrate
            settings.bufferSize = bufsize
            settings.profile = profile
            settings.level = level
            settings.maximumKeyframeInterval = keyint
            settings.bFrames = bframes
            settings.threads = threads
            return settings
        }
    }

    @Argument(help: "The input: a .y4m file, raw video (with --size, --pix-fmt, --fps), or - for standard input.")
    var input: String

    @Option(name: .shortAndLong, help: "The output: .264/.h264 (Annex-B), .mp4 or .mov.")
    var output: String

    @OptionGroup var pictureInput: PictureInputOptions

    @OptionGroup var encoder: EncoderOptions
    @OptionGroup var limits: LimitOptions

    @Option(help: "Encode at most this many frames.")
    var frames: Int?

    func validate() throws {
        if encoder.passes == 2 && input == "-" { throw ValidationError("--passes 2 reads the input twice; give a file, not standard input") }
        if let frames, frames < 1 { throw ValidationError("--frames \(frames): expected a positive count") }
        try pictureInput.validate(for: input)
    }

    private func openReader() throws(MediaIOError) -> any PictureReader {
        try pictureInput.openReader(input, limits: limits.pictures)
    }

    func work() throws {
        let probe: any PictureReader
        do { probe = try openReader() } catch { throw ToolError(error) }
        var settings = encoder.settings(width: probe.width, height: probe.height, format: H264Encoder.encodingFormat(for: probe.format), frameRate: probe.frameRate)
        settings.sampleAspectRatio = probe.sampleAspectRatio
        var first: (any PictureReader)? = probe
        let job = PictureEncoder(settings: settings, passes: encoder.passes, frameLimit: frames)
        let progress = Progress()
        let clock = HostClock(), start = clock.currentTime
        let summary: PictureEncoder.Summary
        do {
            summary = try job.run(reading: { () throws(MediaIOError) -> any PictureReader in
                defer { first = nil }  // the probe serves the first pass
                if let probe = first { return probe } else { return try openReader() }
            }, into: SampleOutput(path: output)) { pass, pictures, bytes in
                let seconds = (clock.currentTime - start).seconds
                progress.update(line: "\(encoder.passes > 1 ? "pass \(pass)/\(encoder.passes), " : "")\(pictures) frames, \(seconds > 0 ? Int(Double(pictures) / seconds) : 0) fps")
            }
        } catch {
            progress.clear()
            throw ToolError("\(input): \(error)")
        }
        progress.clear()
        let elapsed = (clock.currentTime - start).seconds
        let duration = summary.duration.seconds
        printError("\(output): \(summary.frames) frames, \(decimalText(duration, 2)) s, \(Int(Double(summary.bytes * 8) / duration / 1000)) kbit/s, encoded at \(Int(Double(summary.frames * encoder.passes) / elapsed)) fps")
    }
}
