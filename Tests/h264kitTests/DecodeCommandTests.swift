import Foundation
import TestSupport
import Testing

/// The hash column of `-f framemd5` text.
func hashColumn(_ text: String) -> [String] {
    text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
}

/// ffmpeg's output of `path` in `format` (`-f rawvideo`, `-f yuv4mpegpipe`), or nil without ffmpeg.
func ffmpegOutput(_ path: String, _ arguments: [String]) throws -> Data {
    try run("ffmpeg", ["-v", "error", "-threads", "1", "-i", path, "-map", "0:v:0"] + arguments + ["-"]).stdout
}

@Suite("h264kit decode")
struct DecodeCommandTests {
    static let sample = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
    static let fixture = Checkout.fixtures.appendingPathComponent("cisco-bframe-cabac.264").path

    /// Raw and Y4M output are byte for byte what ffmpeg writes.
    @Test(.requires(.ffmpeg), arguments: [("raw", ["-f", "rawvideo"]), ("y4m", ["-f", "yuv4mpegpipe"]), ("raw", ["-f", "rawvideo", "-pix_fmt", "rgb24"])] as [(String, [String])])
    func outputIsFFmpegs(_ format: String, _ ffmpegArguments: [String]) throws {
        for input in [Self.sample, Self.fixture] {
            var arguments = ["decode", input, "-o", "-", "--format", format]
            if ffmpegArguments.contains("rgb24") { arguments += ["--pix-fmt", "rgb24"] }
            let ours = try h264kitProcess(arguments)
            #expect(ours.status == 0, "\(ours.stderrText)")
            let theirs = try ffmpegOutput(input, ffmpegArguments)
            #expect(ours.stdout == theirs, "\(input) \(format) \(ffmpegArguments)")
        }
    }

    @Test func mp4InputDecodesLikeItsSource() throws {
        let movie = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-decode-\(UUID().uuidString).mp4").path
        defer { try? FileManager.default.removeItem(atPath: movie) }
        #expect(try h264kit(["mux", Self.sample, movie]).status == 0)
        let fromMovie = try h264kit(["decode", movie, "-o", "-", "--format", "framemd5"])
        let fromStream = try h264kit(["decode", Self.sample, "-o", "-", "--format", "framemd5"])
        #expect(fromMovie.status == 0 && !hashColumn(fromMovie.stdout).isEmpty)
        #expect(hashColumn(fromMovie.stdout) == hashColumn(fromStream.stdout))
        let two = try h264kit(["decode", movie, "-o", "-", "--format", "framemd5", "--frames", "2"])
        #expect(two.status == 0 && hashColumn(two.stdout) == Array(hashColumn(fromStream.stdout).prefix(2)))
    }

    @Test(.requires(.ffmpeg)) func standardInputAndFrameLimit() throws {
        let stream = try Data(contentsOf: URL(fileURLWithPath: Self.sample))
        let all = try h264kit(["decode", "-", "-o", "-", "--format", "framemd5"], stdin: stream)
        let three = try h264kit(["decode", "-", "-o", "-", "--format", "framemd5", "--frames", "3"], stdin: stream)
        #expect(hashColumn(three.stdout) == Array(hashColumn(all.stdout).prefix(3)))
        #expect(hashColumn(all.stdout) == (try ffmpegFrameHashes(Self.sample, format: "h264")))
    }

    @Test(.requires(.ffmpeg, .x264)) func thumbnailsEverySecondAsPNG() throws {
        let stream = try x264Stream(frames: 75, size: "160x120", arguments: ["--fps", "25"])
        let input = try Checkout.temporaryFile(stream)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-png-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory); try? FileManager.default.removeItem(atPath: input) }
        let result = try h264kit(["decode", input, "-o", directory + "/thumb-%03d.png", "--every", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files == ["thumb-001.png", "thumb-002.png", "thumb-003.png"])
        // Frame 25 (one second in) as ffmpeg would convert it.
        let expected = try ffmpegFrameHashes(input, format: "h264", extra: ["-vf", "select=eq(n\\,25)", "-pix_fmt", "rgb24"])
        #expect(try ffmpegFrameHashes(directory + "/thumb-002.png", extra: ["-pix_fmt", "rgb24"]) == expected)
    }

    /// A size change: scaled to the first size as ffmpeg does, or kept with --no-autoscale.
    @Test(.requires(.ffmpeg, .x264)) func sizeChanges() throws {
        let first = try x264Stream(frames: 5, size: "160x120", arguments: [])
        let second = try x264Stream(frames: 5, size: "320x240", arguments: [])
        let input = try Checkout.temporaryFile(first + second)
        defer { try? FileManager.default.removeItem(atPath: input) }
        let scaled = try h264kit(["decode", input, "-o", "-", "--format", "framemd5"])
        let kept = try h264kit(["decode", input, "-o", "-", "--format", "framemd5", "--no-autoscale"])
        #expect(hashColumn(scaled.stdout).count == 10 && hashColumn(kept.stdout).count == 10)
        do { let expected = try ffmpegFrameHashes(input, format: "h264"); #expect(hashColumn(scaled.stdout) == expected) }
        do { let expected = try ffmpegFrameHashes(input, format: "h264", extra: ["-autoscale", "0"]); #expect(hashColumn(kept.stdout) == expected) }
    }

    /// Damage: concealed and reported by default, fatal with --strict.
    @Test(.requires(.ffmpeg, .x264)) func damagedInput() throws {
        var stream = try x264Stream(frames: 30, size: "320x240", arguments: ["--keyint", "30"])
        // Overwrite the middle of the stream (inside a P slice) with garbage without start codes.
        for i in (stream.count / 2)..<(stream.count / 2 + 400) { stream[i] = UInt8(truncatingIfNeeded: i &* 7 | 1) }
        let input = try Checkout.temporaryFile(stream)
        defer { try? FileManager.default.removeItem(atPath: input) }
        let lenient = try h264kit(["decode", input, "-o", "-", "--format", "framemd5", "--threads", "1"])
        #expect(lenient.status == 0)
        #expect(lenient.stderr.contains("damaged"), "\(lenient.stderr)")
        do { let expected = try ffmpegFrameHashes(input, format: "h264"); #expect(hashColumn(lenient.stdout) == expected) }
        let strict = try h264kit(["decode", input, "-o", "/dev/null", "--format", "raw", "--strict"])
        #expect(strict.status != 0)
        #expect(strict.stderr.contains("--strict"))
    }

    /// A stream cut in the middle of its last slice: the damage libavcodec meets while finishing
    /// the held pictures is reported too, and the frames are ffmpeg's.
    @Test(.requires(.ffmpeg)) func aStreamCutShort() throws {
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        let input = try Checkout.temporaryFile(Array(stream.prefix(stream.count - 2000)))
        defer { try? FileManager.default.removeItem(atPath: input) }
        // One thread, as the oracle: how a damaged picture is concealed depends on the threading.
        let result = try h264kit(["decode", input, "--threads", "1", "-o", "-", "--format", "framemd5"])
        #expect(result.status == 0)
        do { let expected = try ffmpegFrameHashes(input, format: "h264"); #expect(hashColumn(result.stdout) == expected) }
        let ffmpeg = try run("ffmpeg", ["-v", "error", "-f", "h264", "-i", input, "-f", "null", "-"])
        if !ffmpeg.stderrText.isEmpty {
            #expect(result.stderr.contains("damaged"), "ffmpeg says \(ffmpeg.stderrText); we said \(result.stderr)")
        }
    }

    @Test func notH264() throws {
        let input = try Checkout.temporaryFile(Array(repeating: 0x42, count: 10000))
        defer { try? FileManager.default.removeItem(atPath: input) }
        let output = input + ".yuv"
        let result = try h264kit(["decode", input, "-o", output])
        #expect(result.status != 0)
        #expect(result.stderr.contains("not an Annex-B H.264 stream"))
        #expect(!FileManager.default.fileExists(atPath: output), "no output file is left behind")
    }

    /// A device is written in place: never replaced by renaming a temporary file over it.
    @Test func devicesStayDevices() throws {
        var info = stat()
        #expect(try h264kit(["decode", Self.sample, "-o", "/dev/null"]).status == 0)
        let movie = try Self.movie()
        defer { try? FileManager.default.removeItem(atPath: movie) }
        #expect(try h264kit(["demux", movie, "/dev/null"]).status == 0)
        let mux = try h264kit(["mux", Self.sample, "/dev/null"])
        #expect(mux.status != 0 && mux.stderr.contains("not a regular file"))
        #expect(stat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
    }

    static func movie() throws -> String {
        let movie = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-decode-\(UUID().uuidString).mp4").path
        _ = try h264kit(["mux", sample, movie])
        return movie
    }

    @Test func badArguments() throws {
        #expect(try h264kit(["decode", Self.sample, "-o", "out.png"]).stderr.contains("pattern"))
        #expect(try h264kit(["decode", Self.sample, "-o", "-", "--pix-fmt", "yuv410p"]).status != 0)
        #expect(try h264kit(["decode", Self.sample, "-o", "x.y4m", "--no-autoscale"]).status != 0)
    }
}

/// A movie whose sample entry declares a smaller picture than its SPS (a GoPro file: 854x480
/// declared, 864x480 coded, no cropping): decoded at the container's size, as ffmpeg does,
/// bit-exact with ffmpeg's frames.
@Suite("Decode at the container's picture size")
struct ContainerSizeDecodeTests {
    @Test(.requires(.ffmpeg)) func smallerSampleEntrySizeCropsLikeFFmpeg() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-crop-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let made = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=864x480:rate=25", "-frames:v", "10", "-c:v", "libx264",
                                      "-preset", "ultrafast", "-f", "h264", work + "/s.264"])
        try #require(made.status == 0, "\(made.stderrText)")
        let muxed = try h264kit(["mux", work + "/s.264", work + "/full.mp4"])
        try #require(muxed.status == 0, "\(muxed.stderr)")
        // The avc1 sample entry's width (16 bits, 24 bytes after the box's type) made 854.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: work + "/full.mp4")))
        let type: [UInt8] = Array("avc1".utf8)
        let at = try #require((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == type && bytes[$0 - 4] == 0 })
        #expect(Int(bytes[at + 28]) << 8 | Int(bytes[at + 29]) == 864)
        bytes[at + 28] = UInt8(854 >> 8)
        bytes[at + 29] = UInt8(854 & 0xFF)
        try Data(bytes).write(to: URL(fileURLWithPath: work + "/narrow.mp4"))
        let decoded = try h264kit(["decode", work + "/narrow.mp4", "--threads", "1", "-o", "-", "--format", "framemd5"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(decoded.stdout.contains("#dimensions 0: 854x480"), "\(decoded.stdout.prefix(400))")
        let expected = try run("ffmpeg", ["-v", "error", "-threads", "1", "-i", work + "/narrow.mp4", "-f", "framemd5", "-"]).stdoutText
        #expect(expected.contains("#dimensions 0: 854x480"))
        #expect(framemd5Hashes(decoded.stdout) == framemd5Hashes(expected))
    }
}

@Suite("Decode on the corpus (H264KIT_CORPUS)", .requiresCorpus)
struct CorpusDecodeTests {
    static let decodable = Corpus.entries().filter { !$0.ffmpegFailed && ($0.frames ?? 0) > 0 }
    static let rejected = Corpus.entries().filter { $0.ffmpegFailed || ($0.frames ?? 0) == 0 }

    /// Differences ffmpeg's own flags account for: the decoder does not rotate (VideoToolbox
    /// does not either); ffmpeg turns display matrices into rotation by default.
    static let ffmpegFlags: [String: [String]] = [
        "jcodec_jcodec/metaedit/itunes.mov": ["-noautorotate"],
        "androidx_media/portrait_4k60.mp4": ["-noautorotate"],
    ]
    /// Differences no flag removes, with the reason.
    static let known: [String: String] = [
        "OxideAV_oxideav-h264/fuzz_regressions/crash-df32d5060d483d08cebb46452646d81c6c253546": "fuzzer garbage: ffmpeg's parser cuts it into packets differently from access units",
        "OxideAV_oxideav-h264/fuzz_regressions/crash-b741d946292d96dd1a04b334523ddcd8e5846431": "fuzzer garbage: ffmpeg's parser cuts it into packets differently from access units",
        "OxideAV_oxideav-h264/fuzz_regressions/crash-f57b16934e6a53f10e92048ee476e1145333ff86": "fuzzer garbage: ffmpeg's parser cuts it into packets differently from access units",
    ]

    /// Every frame, bit-exact with the MANIFEST's `ffmpeg -threads 1 -f framemd5`.
    @Test(.requires(.ffmpeg), arguments: decodable.map(\.path))
    func framesMatchTheManifest(_ path: String) throws {
        let entry = Self.decodable.first { $0.path == path }!
        let result = try h264kit(["decode", entry.url.path, "--threads", "1", "-o", "-", "--format", "framemd5"])
        if let reason = Self.known[path] {
            // Never a crash or a hang; frames or a clear error.
            #expect(result.status == 0 || !result.stderr.isEmpty, "\(reason)")
            return
        }
        #expect(result.status == 0, "\(result.stderr.suffix(300))")
        let expected: [String]
        if let flags = Self.ffmpegFlags[path] {
            let hashes = try ffmpegFrameHashesWithInputFlags(entry.url.path, flags)
            expected = hashes
        } else {
            expected = try storedFrameHashes(entry.url.path + ".framemd5")
        }
        let hashes = hashColumn(result.stdout)
        #expect(hashes.count == expected.count)
        #expect(hashes == expected)
    }

    /// With the default (frame) threads, as a user runs it: every frame of what ffmpeg
    /// decodes with its own default threads, damaged streams included (a decoder error while
    /// finishing used to end the session and lose the last pictures).
    @Test(.requires(.ffmpeg), arguments: decodable.map(\.path).filter { known[$0] == nil })
    func defaultThreadsMatchFFmpegsDefaultThreads(_ path: String) throws {
        let entry = Self.decodable.first { $0.path == path }!
        let result = try h264kit(["decode", entry.url.path, "-o", "-", "--format", "framemd5"])
        #expect(result.status == 0, "\(result.stderr.suffix(300))")
        let raw = entry.isContainer ? [] : ["-f", "h264"]
        let ffmpeg = try run("ffmpeg", ["-nostdin", "-v", "error", "-noautorotate"] + raw + ["-i", entry.url.path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
        let expected = ffmpeg.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
        #expect(hashColumn(result.stdout) == expected)
    }

    /// Files ffmpeg cannot decode (no video, not H.264): a clear error, no crash or hang.
    @Test(arguments: rejected.map(\.path))
    func undecodableFilesFailClearly(_ path: String) throws {
        let entry = Self.rejected.first { $0.path == path }!
        let result = try h264kit(["decode", entry.url.path, "-o", "/dev/null"])
        #expect(result.status == 0 || (result.status == 1 || result.status == 64) && result.stderr.contains(entry.url.lastPathComponent) || result.stderr.contains("no H.264"), "\(result.status) \(result.stderr.suffix(300))")
        #expect(result.status != 134 && result.status != 139, "no crash")
    }
}
