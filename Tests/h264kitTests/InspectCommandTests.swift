import Foundation
import H264Bitstream
import TestSupport
import Testing

/// Runs the built `h264kit` executable, which SwiftPM puts beside the test bundle.
func h264kit(_ arguments: [String], stdin: Data? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let result = try h264kitProcess(arguments, stdin: stdin)
    return (result.status, result.stdoutText, result.stderrText)
}

/// Runs `h264kit`, keeping its output as bytes.
func h264kitProcess(_ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    var directory = testBinary.deletingLastPathComponent()
    while !FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("h264kit").path) && directory.path != "/" {
        directory.deleteLastPathComponent()
    }
    return try runProcess(directory.appendingPathComponent("h264kit"), arguments, stdin: stdin)
}

enum CLIFixtures {
    static func path(_ name: String) -> String { Checkout.fixtures.appendingPathComponent(name).path }
    static func temporaryFile(_ bytes: [UInt8]) throws -> String { try Checkout.temporaryFile(bytes) }
}

@Suite("h264kit inspect")
struct InspectCommandTests {
    @Test func jsonHasTheKeysALaterCheckReads() throws {
        let result = try h264kit(["inspect", "--json", CLIFixtures.path("cisco-bframe-cabac.264")])
        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["profile"] as? String == "Main")
        #expect(json["level"] as? Int == 52)
        #expect(json["width"] as? Int == 640)
        #expect(json["height"] as? Int == 320)
        #expect(json["pixelFormat"] as? String == "yuv420p")
        #expect(json["frameRate"] is NSNull)
        #expect(json["interlaced"] as? Bool == false)
        #expect(json["frameCount"] as? Int == 9)
        let counts = try #require(json["nalCounts"] as? [String: Int])
        #expect(counts["IDR slice"] == 2)
        #expect(counts["SPS"] == 1)
    }

    @Test func stdinGivesTheSameSummaryAsTheFile() throws {
        let path = CLIFixtures.path("jcodec-fmo-explicit.264")
        let fromFile = try h264kit(["inspect", "--json", path])
        let fromPipe = try h264kit(["inspect", "--json", "-"], stdin: try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(fromFile.status == 0)
        #expect(fromFile.stdout == fromPipe.stdout)
    }

    @Test func nalsListsEveryNALUnitWithSliceDetails() throws {
        let result = try h264kit(["inspect", "--nals", CLIFixtures.path("jcodec-test_b_8x8.264")])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first == "offset\tsize\ttype\tref_idc\tslice\tframe_num\tpoc")
        #expect(lines.contains { $0.hasPrefix("0\t") && $0.contains("SPS") })
        #expect(lines.contains { $0.contains("non-IDR slice\t0\tB\t") })
    }

    @Test func missingFile() throws {
        let result = try h264kit(["inspect", "/nonexistent/stream.264"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("/nonexistent/stream.264: cannot open: No such file or directory"))
    }

    @Test func emptyFile() throws {
        let path = try CLIFixtures.temporaryFile([])
        let result = try h264kit(["inspect", path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("\(path): the file is empty"))
    }

    @Test func randomBytes() throws {
        var rng = SystemRandomNumberGenerator()
        // Random bytes without any 00 00 01.
        let bytes = (0..<4096).map { _ in UInt8.random(in: 2...255, using: &rng) }
        let path = try CLIFixtures.temporaryFile(bytes)
        let result = try h264kit(["inspect", path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("\(path): no H.264 start code found in 4096 bytes"))
    }

    @Test func truncatedNALUnit() throws {
        // The fixture cut inside its first slice header: the SPS and PPS parse, the slice does not.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLIFixtures.path("jcodec-test_b_8x8.264"))))
        let nals = AnnexB.nalUnits(in: bytes)
        let firstSlice = try #require(nals.first { NALUnitHeader(byte: bytes[$0.payload.lowerBound]).nalUnitType.isVCL })
        let path = try CLIFixtures.temporaryFile(Array(bytes[..<(firstSlice.payload.lowerBound + 2)]))
        let result = try h264kit(["inspect", path])
        #expect(result.status != 0)
        // The slice header's second byte, where the data ends.
        #expect(result.stderr.contains("\(path): error: byte \(firstSlice.payload.lowerBound + 2), NAL #2"))
        #expect(result.stderr.contains("end of data"))
    }

    @Test func absurdSPS() throws {
        // An SPS whose num_ref_frames_in_pic_order_cnt_cycle is 300.
        var w = BitWriter()
        w.bits(66, 8); w.bits(0, 8); w.bits(30, 8); w.ue(0); w.ue(0); w.ue(1)
        w.flag(false); w.se(0); w.se(0); w.ue(300)
        w.rbspTrailingBits()
        var stream: [UInt8] = []
        AnnexB.append(nalUnit: ([0x67] + RBSP.escape(w.bytes.span)).span, to: &stream)
        let path = try CLIFixtures.temporaryFile(stream)
        let result = try h264kit(["inspect", path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("\(path): error: byte "))
        #expect(result.stderr.contains("NAL #0"))
        #expect(result.stderr.contains("num_ref_frames_in_pic_order_cnt_cycle = 300 exceeds 255"))
    }
}

@Suite("h264kit inspect on large input")
struct LargeInputTests {
    /// Files of 16 MiB and more are scanned on several threads; the result must be the one the
    /// sequential incremental path (stdin) gives.
    @Test func parallelScanMatchesTheIncrementalPath() throws {
        let sample = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264")
        let one = [UInt8](try Data(contentsOf: sample))
        var big: [UInt8] = []
        while big.count < 17 << 20 { big += one }
        let path = try CLIFixtures.temporaryFile(big)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try h264kit(["inspect", "--json", path])
        let fromPipe = try h264kit(["inspect", "--json", "-"], stdin: Data(big))
        #expect(fromFile.status == 0)
        #expect(fromFile.stdout == fromPipe.stdout)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(fromFile.stdout.utf8)) as? [String: Any])
        #expect(json["frameCount"] as? Int == 90 * (big.count / one.count))
    }

    /// A first half with no start code at all (junk before the stream): the search-ahead path
    /// must still find every NAL unit and count the junk.
    @Test func junkFirstHalfMatchesTheIncrementalPath() throws {
        let one = [UInt8](try Data(contentsOf: Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264")))
        var big = [UInt8](repeating: 0xA5, count: 10 << 20)
        while big.count < 18 << 20 { big += one }
        let path = try CLIFixtures.temporaryFile(big)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try h264kit(["inspect", "--json", path])
        let fromPipe = try h264kit(["inspect", "--json", "-"], stdin: Data(big))
        #expect(fromFile.stdout == fromPipe.stdout)
        #expect(fromFile.stderr.contains("\(10 << 20) bytes before the first start code were skipped"))
    }
}


@Suite("h264kit inspect --samples")
struct InspectSamplesTests {
    /// x264 writes VUI timing: the samples use it, PTS are display order, and their count is the frame count.
    @Test func samplesOfAnX264Stream() throws {
        let path = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path
        let result = try h264kit(["inspect", "--samples", "--json", path])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let samples = try #require(json["samples"] as? [[String: Any]])
        #expect(samples.count == json["frameCount"] as? Int)
        #expect(json["sampleFrameRate"] as? String == "30000/1001")
        let pts = samples.compactMap { ($0["pts"] as? [String: Any])?["value"] as? Int }
        #expect(pts.sorted() == Array(stride(from: 0, to: 1001 * samples.count, by: 1001)))
        let dts = samples.compactMap { ($0["dts"] as? [String: Any])?["value"] as? Int }
        #expect(dts == dts.sorted() && Set(dts).count == dts.count)
        #expect(samples.first?["sync"] as? Bool == true)
    }

    /// A movie's samples are its first video track's, with the times ffprobe reads for its
    /// packets (the edit list applied); samples the edit hides are marked.
    @Test(.requires(.ffmpeg, .ffprobe)) func samplesOfAMovieAreItsPackets() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-inspect-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = directory + "/source.mp4", cut = directory + "/cut.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "75", "-c:v", "libx264",
                               "-g", "25", "-bf", "2", "-y", source])
        _ = try run("ffmpeg", ["-v", "error", "-ss", "1.5", "-i", source, "-c", "copy", "-y", cut])  // starts mid-GOP: a hidden pre-roll
        let result = try h264kit(["inspect", "--samples", "--json", cut])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let samples = try #require(json["samples"] as? [[String: Any]])
        let packets = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,dts_time", "-of", "csv=p=0", cut])
            .stdoutText.split(separator: "\n").map { $0.split(separator: ",").compactMap { Double($0) } }
        #expect(samples.count == packets.count)
        let ours = samples.compactMap { ($0["pts"] as? [String: Any])?["seconds"] as? Double }
        // ffmpeg's edit starts at 1.5 s, between two frames (1.48 and 1.52); ffprobe puts the first
        // frame shown at 0, the edit's own timeline at 0.02: the same times but for that offset.
        let offsets = zip(ours, packets).map { $0 - $1[0] }
        #expect(offsets.allSatisfy { abs($0 - offsets[0]) < 1e-6 } && abs(offsets[0]) < 0.04, "\(ours.prefix(4)) vs \(packets.prefix(4))")
        #expect(samples.filter { $0["hidden"] as? Bool == true }.count == 13, "the pre-roll from the sync sample at 1.0 s to 1.48 s is hidden")
        let nals = try h264kit(["inspect", "--nals", cut])
        #expect(nals.status != 0 && nals.stderr.contains("demux"))
    }

    @Test func aStreamWithoutTimingWarnsOrTakesTheGivenRate() throws {
        let path = CLIFixtures.path("jcodec-test_b_8x8.264")
        let assumed = try h264kit(["inspect", "--samples", path])
        #expect(assumed.status == 0)
        #expect(assumed.stderr.contains("no VUI timing") && assumed.stderr.contains("--fps"))
        let given = try h264kit(["inspect", "--samples", "--fps", "30000/1001", path])
        #expect(given.status == 0)
        #expect(given.stderr.isEmpty)
        #expect(given.stdout.contains("1001/30000 (0.033367)"))
        let bad = try h264kit(["inspect", "--samples", "--fps", "fast", path])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--fps fast"))
    }
}
