import Foundation
import TestSupport
import Testing

/// The hashes stored in a corpus `.framemd5` file.
func storedFrameHashes(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
        .compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
}

/// What ffprobe says about a muxed file: warnings, packet PTS in display order, duration, frame count.
struct ProbeReport {
    var warnings: String
    var presentationTimes: [Int]
    var timeBase: (Int, Int)
    var duration: String
}

func probe(_ path: String) throws -> ProbeReport {
    let stream = try run("ffprobe", ["-v", "warning", "-select_streams", "v:0", "-show_entries", "stream=time_base,duration", "-of", "csv=p=0", path])
    let packets = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts", "-of", "csv=p=0", path])
    let fields = stream.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
    let base = fields.first?.split(separator: "/").compactMap { Int($0) } ?? []
    return ProbeReport(warnings: stream.stderrText, presentationTimes: packets.stdoutText.split(separator: "\n").compactMap { Int($0.split(separator: ",")[0]) },
                       timeBase: base.count == 2 ? (base[0], base[1]) : (0, 1), duration: fields.count > 1 ? String(fields[1]) : "")
}

/// The mux variants the container issue names.
struct MuxVariant: Sendable, CustomTestStringConvertible {
    var name: String
    var suffix: String
    var arguments: [String]
    var testDescription: String { name }
    static let all: [MuxVariant] = [
        MuxVariant(name: "mp4", suffix: ".mp4", arguments: []),
        MuxVariant(name: "mov", suffix: ".mov", arguments: []),
        MuxVariant(name: "faststart", suffix: ".mp4", arguments: ["--faststart"]),
        MuxVariant(name: "fragmented", suffix: ".mp4", arguments: ["--fragment-duration", "1"]),
        MuxVariant(name: "negative-cts", suffix: ".mp4", arguments: ["--negative-cts"]),
    ]
}

/// Muxes `input` with `variant` and checks it against the oracles; returns failures.
func checkMux(_ input: String, variant: MuxVariant, expectedHashes: [String], frameRate: (Int, Int)?) throws -> [String] {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-mux-\(UUID().uuidString)\(variant.suffix)").path
    defer { try? FileManager.default.removeItem(atPath: output) }
    let result = try h264kit(["mux", input, output] + variant.arguments)
    var failures: [String] = []
    guard FileManager.default.fileExists(atPath: output) else { return ["mux wrote nothing (status \(result.status)): \(result.stderr.prefix(300))"] }
    let hashes = try ffmpegFrameHashes(output)
    if hashes != expectedHashes {
        failures.append("frame hashes differ: \(hashes.count) frames vs \(expectedHashes.count)")
    }
    do {
        let report = try probe(output)
        // The container must read cleanly; the decoder's complaints about damaged streams
        // ("[h264 @ ...]") are the stream's, and appear for the raw stream too.
        let containerWarnings = report.warnings.split(separator: "\n").filter { !$0.hasPrefix("[h264 @") && !$0.hasPrefix("    Last message repeated") }
        if !containerWarnings.isEmpty { failures.append("ffprobe warns: \(containerWarnings.prefix(3))") }
        let sorted = report.presentationTimes.sorted()
        if zip(sorted, sorted.dropFirst()).contains(where: { $0 >= $1 }) { failures.append("packet PTS repeat") }
        if let (num, den) = frameRate ?? reportedFrameRate(result.stderr), report.timeBase.0 > 0 {
            // duration = samples / rate, exactly, in the stream's time base.
            let ticks = report.presentationTimes.count * den * report.timeBase.1 / (num * report.timeBase.0)
            let expected = Double(ticks) * Double(report.timeBase.0) / Double(report.timeBase.1)
            if let duration = Double(report.duration), abs(duration - expected) > 1e-6 {
                failures.append("duration \(report.duration), expected \(expected)")
            }
        }
    }
    let info = try run("mediainfo", ["--Inform=Video;%Format%", output])
    if info.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) != "AVC" {
        failures.append("mediainfo reads \(info.stdoutText)")
    }
    return failures
}

/// The rate `mux` says it used ("…, 4.0 s at 30000/1001 fps, …").
func reportedFrameRate(_ stderr: String) -> (Int, Int)? {
    guard let at = stderr.range(of: " s at "), let fps = stderr[at.upperBound...].range(of: " fps") else { return nil }
    let parts = stderr[at.upperBound..<fps.lowerBound].split(separator: "/")
    guard let num = Int(parts[0]), let den = parts.count > 1 ? Int(parts[1]) : 1 else { return nil }
    return (num, den)
}

@Suite("h264kit mux")
struct MuxCommandTests {
    static let sample = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    @Test(.requires(.ffmpeg, .ffprobe, .mediainfo), arguments: MuxVariant.all)
    func muxedFilesDecodeLikeTheSource(_ variant: MuxVariant) throws {
        let expected = try ffmpegFrameHashes(Self.sample, format: "h264")
        let failures = try checkMux(Self.sample, variant: variant, expectedHashes: expected, frameRate: (30000, 1001))
        #expect(failures.isEmpty, "\(failures)")
    }

    /// Muxing never maps the codec libraries (they cost about 10 MB of resident memory): the
    /// process is caught reading its input from a pipe and its mappings are read.
    @Test func muxDoesNotMapTheCodecLibraries() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-maps-\(UUID().uuidString).mp4").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = try ChildProcess(try h264kitURL(), ["mux", "-", output])
        process.write(try Data(contentsOf: URL(fileURLWithPath: Self.sample)).prefix(4096))
        var maps = ""
        for _ in 0..<100 where !maps.contains("libswiftCore") {
            Thread.sleep(forTimeInterval: 0.02)
            // /proc files report no size: read to the end rather than by the size.
            let handle = FileHandle(forReadingAtPath: "/proc/\(process.pid)/maps")
            maps = String(decoding: (try? handle?.readToEnd()) ?? Data(), as: UTF8.self)
            try? handle?.close()
        }
        process.closeInput()
        process.wait()
        #expect(maps.contains("libswiftCore"), "the mappings were not read")
        for library in ["libavcodec", "libavutil", "libswscale", "libx264"] {
            #expect(!maps.contains(library), "mux mapped \(library)")
        }
    }

    /// A 4-byte start code's leading zero is not garbage, mapped or read from a pipe.
    @Test func noGarbageWarningForACleanStream() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-clean-\(UUID().uuidString).mp4").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let mapped = try h264kit(["mux", Self.sample, output])
        #expect(mapped.status == 0 && !mapped.stderr.contains("warning"), "\(mapped.stderr)")
        try? FileManager.default.removeItem(atPath: output)
        let piped = try h264kit(["mux", "-", output], stdin: try Data(contentsOf: URL(fileURLWithPath: Self.sample)))
        #expect(piped.status == 0 && !piped.stderr.contains("warning"), "\(piped.stderr)")
    }

    @Test func outputIsDeterministic() throws {
        let a = try Checkout.temporaryFile([], suffix: ".mp4"), b = try Checkout.temporaryFile([], suffix: ".mp4")
        try FileManager.default.removeItem(atPath: a); try FileManager.default.removeItem(atPath: b)
        defer { try? FileManager.default.removeItem(atPath: a); try? FileManager.default.removeItem(atPath: b) }
        #expect(try h264kit(["mux", Self.sample, a]).status == 0)
        #expect(try h264kit(["mux", Self.sample, b]).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: a)) == Data(contentsOf: URL(fileURLWithPath: b)))
    }

    /// Faststart puts the index in front of the media by inserting blocks (ext4, XFS) or, where
    /// the file system cannot (tmpfs), by copying the media after it: the same bytes either way,
    /// padded with `free` so that the media starts on a 4096-byte boundary.
    static let shmIsTmpfs = String(decoding: (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/mounts")).readToEnd()) ?? Data(), as: UTF8.self)
        .contains(" /dev/shm tmpfs ")

    @Test(.enabled(if: shmIsTmpfs, "needs /dev/shm on tmpfs (a file system without INSERT_RANGE)"))
    func faststartIsTheSameOnEveryFileSystem() throws {
        let shm = "/dev/shm"
        let a = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-fs-\(UUID().uuidString).mp4").path
        let b = "\(shm)/h264kit-fs-\(UUID().uuidString).mp4"
        defer { unlink(a); unlink(b) }
        #expect(try h264kit(["mux", "--faststart", Self.sample, a]).status == 0)
        #expect(try h264kit(["mux", "--faststart", Self.sample, b]).status == 0)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: a)))
        #expect(bytes == (try [UInt8](Data(contentsOf: URL(fileURLWithPath: b)))))
        // ftyp, moov, free, then mdat's payload at a multiple of 4096.
        var offset = 0
        var types: [String] = []
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            types.append(String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self))
            if types.last == "mdat" { #expect((offset + 8) % 4096 == 0, "mdat payload at \(offset + 8)") }
            guard size >= 8 else { break }
            offset += size
        }
        #expect(types == ["ftyp", "moov", "free", "mdat"])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: shm).filter { $0.contains(".partial") && $0.contains("h264kit-fs") }
        #expect(leftovers.isEmpty)
    }

    /// A file is mapped and its slices written without a copy; standard input is read in
    /// chunks and copied. Both must give the same bytes, fragmented or not.
    @Test(.requires(.ffmpeg, .x264), arguments: [[], ["--fragment-duration", "0.5"]])
    func standardInputGivesTheSameFileAsAMappedFile(_ extra: [String]) throws {
        let stream = try x264Stream(frames: 40, size: "1280x720", arguments: ["--bframes", "3", "--slices", "3", "--keyint", "15"])
        let input = try Checkout.temporaryFile(stream, suffix: ".264")
        let a = input + ".file.mp4", b = input + ".stdin.mp4"
        defer { for path in [input, a, b] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(try h264kit(["mux", input, a] + extra).status == 0)
        #expect(try h264kit(["mux", "-", b] + extra, stdin: Data(stream)).status == 0)
        let fromFile = try Data(contentsOf: URL(fileURLWithPath: a))
        #expect(fromFile.count > stream.count)
        #expect(fromFile == (try Data(contentsOf: URL(fileURLWithPath: b))))
        do { let hashes = try ffmpegFrameHashes(input, format: "h264")
            #expect(try ffmpegFrameHashes(a) == hashes)
        }
    }

    /// A resolution change mid-stream: two sample descriptions, every frame decodes as from the raw stream.
    @Test(.requires(.ffmpeg, .ffprobe, .mediainfo, .x264)) func parameterSetChangesGetANewSampleDescription() throws {
        let first = try x264Stream(frames: 10, size: "176x144", arguments: ["--bframes", "2"])
        let second = try x264Stream(frames: 10, size: "320x240", arguments: ["--bframes", "2"])
        let input = try Checkout.temporaryFile(first + second)
        defer { try? FileManager.default.removeItem(atPath: input) }
        let expected = try ffmpegFrameHashes(input, format: "h264")
        for variant in [MuxVariant.all[0], MuxVariant.all[3]] {
            let failures = try checkMux(input, variant: variant, expectedHashes: expected, frameRate: nil)
            #expect(failures.isEmpty, "\(variant.name): \(failures)")
        }
        let output = input + ".json.mp4"
        defer { try? FileManager.default.removeItem(atPath: output) }
        #expect(try h264kit(["mux", input, output]).status == 0)
        let json = try h264kit(["inspect", "--json", output])
        let tracks = try #require((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["tracks"] as? [[String: Any]])
        #expect(tracks.first?["sampleDescriptionCount"] as? Int == 2)
    }

    @Test(.requires(.ffmpeg)) func demuxGivesBackTheStreamFFmpegWould() throws {
        let mp4 = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-demux-\(UUID().uuidString).mp4").path
        defer { for path in [mp4, mp4 + ".ours.264", mp4 + ".ffmpeg.264"] { try? FileManager.default.removeItem(atPath: path) } }
        #expect(try h264kit(["mux", Self.sample, mp4]).status == 0)
        #expect(try h264kit(["demux", mp4, mp4 + ".ours.264"]).status == 0)
        let ffmpeg = try run("ffmpeg", ["-v", "error", "-i", mp4, "-c", "copy", "-f", "h264", mp4 + ".ffmpeg.264"])
        try #require(ffmpeg.status == 0, "\(ffmpeg.stderrText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: mp4 + ".ours.264")) == Data(contentsOf: URL(fileURLWithPath: mp4 + ".ffmpeg.264")),
                "byte-identical with h264_mp4toannexb")
    }

    // MARK: Bad input

    @Test func notH264() throws {
        let input = try Checkout.temporaryFile(Array(repeating: 0x42, count: 5000))
        let output = input + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: input) }
        let result = try h264kit(["mux", input, output])
        #expect(result.status != 0)
        #expect(result.stderr.contains("not an Annex-B H.264 stream"))
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func slicesBeforeTheirParameterSets() throws {
        // Drop the SPS and PPS: every slice refers to parameter sets never received.
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        var stripped: [UInt8] = []
        for nal in AnnexBUnits.split(stream) where nal.first.map({ $0 & 0x1F != 7 && $0 & 0x1F != 8 }) ?? false {
            stripped += [0, 0, 0, 1] + nal
        }
        let input = try Checkout.temporaryFile(stripped)
        let output = input + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: input) }
        let result = try h264kit(["mux", input, output])
        #expect(result.status != 0)
        #expect(result.stderr.contains("PPS") && result.stderr.contains("nothing written"))
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func aTruncatedLastNALUnitIsReported() throws {
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        let lastStart = AnnexBUnits.starts(stream).last!
        let input = try Checkout.temporaryFile(Array(stream[..<(lastStart + 6)]))
        let output = input + ".mp4"
        defer { try? FileManager.default.removeItem(atPath: input); try? FileManager.default.removeItem(atPath: output) }
        let result = try h264kit(["mux", input, output])
        // A damaged unit is copied as it is, with a warning, and the file is written (as
        // ffmpeg -c copy does): the help says so, and a decoder conceals the damage.
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: output))
        let nalIndex = AnnexBUnits.starts(stream).count - 1
        #expect(result.stderr.contains("NAL #\(nalIndex)") && result.stderr.contains("end of data"))
        #expect(result.stderr.contains("warning") && result.stderr.contains("damaged"), "the file keeps the unit as it was, and says so")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
    func aWriteErrorFailsLoudly() throws {
        // Standard output on /dev/full: every write fails with ENOSPC.
        let process = try ChildProcess(try h264kitURL(), ["mux", Self.sample, "-", "--fragment-duration", "1"], stdout: "/dev/full")
        process.closeInput()
        #expect(process.wait() != 0)
        #expect(process.stderrText.contains("No space left on device"))
    }

    @Test func aMissingOutputDirectory() throws {
        let result = try h264kit(["mux", Self.sample, "/nonexistent-dir/out.mp4"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("/nonexistent-dir"))
    }

    /// SIGKILL in the middle of a fragmented mux: ffmpeg plays every complete fragment.
    @Test(.requires(.ffmpeg, .x264)) func killedFragmentedMuxLeavesAPlayableFile() throws {
        let stream = try x264Stream(frames: 250, size: "320x240", arguments: ["--keyint", "10", "--bframes", "2"])
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-kill-\(UUID().uuidString).mp4").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = try ChildProcess(try h264kitURL(), ["mux", "-", output, "--fragment-duration", "0.4"])
        // Feed half the stream, wait for fragments to land, then kill without warning.
        process.write(Data(stream[..<(stream.count / 2)]))
        var size = 0
        for _ in 0..<200 where size < stream.count / 4 {
            usleep(20_000)
            size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
        }
        kill(process.pid, SIGKILL)
        #expect(process.wait() == 128 + SIGKILL)
        let decoded = try run("ffmpeg", ["-v", "error", "-i", output, "-f", "framemd5", "-"])
        let frames = decoded.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        #expect(decoded.status == 0)
        #expect(frames > 0 && frames % 10 == 0, "\(frames) frames: whole fragments of 10")
        let expected = try ffmpegFrameHashes(try Checkout.temporaryFile(stream), format: "h264")
        #expect(try ffmpegFrameHashes(output) == Array(expected.prefix(frames)))
    }
}

func h264kitURL() throws -> URL {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    var directory = testBinary.deletingLastPathComponent()
    while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("h264kit").path) && directory.path != "/" {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent("h264kit")
}

/// A minimal start-code splitter for building test inputs (independent of the library under test).
enum AnnexBUnits {
    static func starts(_ bytes: [UInt8]) -> [Int] {
        var result: [Int] = []
        var i = 0
        while i + 3 <= bytes.count {
            if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                result.append(i > 0 && bytes[i - 1] == 0 ? i - 1 : i)
                i += 3
            } else { i += 1 }
        }
        return result
    }
    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        let s = starts(bytes)
        return s.indices.map { index in
            var start = s[index]
            while bytes[start] == 0 { start += 1 }
            start += 1
            let end = index + 1 < s.count ? s[index + 1] : bytes.count
            return Array(bytes[start..<end])
        }
    }
}

@Suite("Mux and demux on the corpus (H264KIT_CORPUS)", .requiresCorpus)
struct CorpusMuxTests {
    static let rawStreams = Corpus.entries().filter { !$0.isContainer && !$0.ffmpegFailed && ($0.frames ?? 0) > 0 }
    static let containers = Corpus.entries().filter { $0.isContainer && !$0.ffmpegFailed && ($0.frames ?? 0) > 0 }

    /// Where a container's own decode differs from its elementary stream for reasons an
    /// Annex-B stream cannot carry. Each is checked the way that accounts for it.
    static let containerDifferences: [String: [String]] = [
        "jcodec_jcodec/metaedit/itunes.mov": ["-noautorotate"],  // a display matrix rotates the picture
        "androidx_media/portrait_4k60.mp4": ["-noautorotate"],
        "androidx_media/iibbibb_editlist_videoonly.mp4": ["-ignore_editlist", "1"],  // the edit list hides a frame
    ]
    /// Differences no flag removes, with the reason.
    static let containerOnly: [String: String] = [
        "gopro_gpmf-parser/karma.mp4": "the sample entry says 854 wide while the SPS crops to 864: the movie decodes at 854, an elementary stream (which has no container size) at 864",
        "androidx_media/sample_with_invalid_nalu.mp4": "a corrupt length field makes ffmpeg drop the whole sample; as an elementary stream the damaged unit is isolated and the picture decodes",
    ]

    /// Fuzzer-made streams whose raw decode depends on how FFmpeg's parser cuts garbage into
    /// packets; in a container the same NAL units are grouped by picture and conceal differently.
    static let fuzzedStreams: Set<String> = [
        "OxideAV_oxideav-h264/fuzz_regressions/crash-df32d5060d483d08cebb46452646d81c6c253546",
        "OxideAV_oxideav-h264/fuzz_regressions/crash-b741d946292d96dd1a04b334523ddcd8e5846431",
        "OxideAV_oxideav-h264/fuzz_regressions/crash-f57b16934e6a53f10e92048ee476e1145333ff86",
    ]

    @Test(.requires(.ffmpeg, .ffprobe, .mediainfo), arguments: rawStreams.map(\.path))
    func muxMatchesTheRawDecode(_ path: String) throws {
        let entry = Self.rawStreams.first { $0.path == path }!
        if Self.fuzzedStreams.contains(path) {
            // Never a crash or a hang; a file or a clear error.
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-fuzz-\(UUID().uuidString).mp4").path
            defer { try? FileManager.default.removeItem(atPath: output) }
            let result = try h264kit(["mux", entry.url.path, output])
            #expect(result.status == 0 || !result.stderr.isEmpty)
            return
        }
        let expected = try storedFrameHashes(entry.url.path + ".framemd5")
        for variant in [MuxVariant.all[0], MuxVariant.all[1], MuxVariant.all[2], MuxVariant.all[3]] {
            let failures = try checkMux(entry.url.path, variant: variant, expectedHashes: expected, frameRate: nil)
            #expect(failures.isEmpty, "\(path) \(variant.name): \(failures)")
        }
    }

    @Test(.requires(.ffmpeg), arguments: containers.map(\.path))
    func demuxMatchesTheContainerDecode(_ path: String) throws {
        let entry = Self.containers.first { $0.path == path }!
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-demux-\(UUID().uuidString).264").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try h264kit(["demux", entry.url.path, output])
        guard entry.notes.contains("avc1") else {
            #expect(result.status != 0, "no H.264 track: a clear error")
            return
        }
        #expect(result.status == 0, "\(result.stderr)")
        if let reason = Self.containerOnly[path] {
            #expect(try ffmpegFrameHashes(output, format: "h264").count > 0, "\(reason)")
            return
        }
        let expected: [String]
        if let flags = Self.containerDifferences[path] {
            expected = try ffmpegFrameHashesWithInputFlags(entry.url.path, flags)
        } else {
            expected = try storedFrameHashes(entry.url.path + ".framemd5")
        }
        #expect(try ffmpegFrameHashes(output, format: "h264") == expected, "\(path)")
    }
}

/// ffmpeg's frame hashes with options before `-i` (edit-list and rotation switches).
func ffmpegFrameHashesWithInputFlags(_ path: String, _ flags: [String]) throws -> [String] {
    let result = try run("ffmpeg", ["-v", "error", "-threads", "1"] + flags + ["-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
    return result.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }
        .compactMap { $0.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) }
}

/// The tool's side of the one timing rule: a stream without VUI timing is muxed, decoded and
/// inspected at 25 fps with a warning naming --fps, and --fps sets the rate without one.
@Suite("Timing of a stream without VUI timing in the tool")
struct TimingRuleCommandTests {
    @Test func commandsAssumeTheSameRateAndNameTheOption() throws {
        let input = Checkout.fixtures.appendingPathComponent("cisco-bframe-cabac.264").path
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-timing-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        for arguments in [["mux", input, work + "/a.mp4"], ["decode", input, "-o", work + "/a.framemd5"], ["inspect", "--samples", input]] {
            let result = try h264kit(arguments)
            #expect(result.status == 0, "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains("assuming 25/1 fps") && result.stderr.contains("--fps"), "\(arguments[0]): \(result.stderr)")
            let given = try h264kit(arguments.map { $0.replacingOccurrences(of: "/a.", with: "/b.") } + ["--fps", "30000/1001"])
            #expect(given.status == 0 && !given.stderr.contains("assuming"), "\(arguments[0]) --fps: \(given.stderr)")
        }
    }
}
