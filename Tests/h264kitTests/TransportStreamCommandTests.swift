import Foundation
import TestSupport
import Testing

/// Every command that reads a stream reads a transport stream by its content (a file, or
/// standard input), and `mux` and `transcode` write one, to a file or a pipe.
@Suite("Commands on MPEG-TS", .requires(.ffmpeg, .ffprobe))
struct TransportStreamCommandTests {
    static let annexB = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    /// A directory with a B-pyramid stream in a TS (FFmpeg's) and a TS of two programs.
    static let inputs: String = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-ts-cli-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "3", "-pix_fmt", "yuv420p", "-c:v", "libx264",
                                "-preset", "veryfast", "-x264-params", "bframes=3:b-pyramid=normal:keyint=30", directory + "/a.mp4"])
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-i", directory + "/a.mp4", "-c", "copy", directory + "/a.ts"])
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3", "-c:a", "aac", directory + "/sound.m4a"])
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-i", directory + "/sound.m4a", "-i", directory + "/a.mp4", "-map", "0:a", "-map", "1:v", "-c", "copy",
                                "-program", "program_num=1:st=0", "-program", "program_num=2:st=1", directory + "/programs.ts"])
        return directory
    }()

    static var ts: String { inputs + "/a.ts" }

    static func work() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-tscmd-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func inspectShowsProgramsClockAndVideo() throws {
        let text = try h264kit(["inspect", Self.inputs + "/programs.ts"])
        #expect(text.status == 0, "\(text.stderr)")
        for expected in ["MPEG-2 transport stream, 188-byte packets", "program 1", "AAC (ADTS) (0xf)", "program 2", "H.264 (0x1b)", "(read)", "PCR", "continuity    0 errors", "High"] {
            #expect(text.stdout.contains(expected), "inspect lacks \"\(expected)\":\n\(text.stdout)")
        }
        let json = try h264kit(["inspect", "--json", Self.ts])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["format"] as? String == "mpegts" && object?["samples"] as? Int == 90 && object?["continuityErrors"] as? Int == 0)
        #expect((object?["video"] as? [String: Any])?["profile"] as? String == "High")
        // From standard input, told by content.
        let piped = try h264kit(["inspect", "-"], stdin: try Data(contentsOf: URL(fileURLWithPath: Self.ts)))
        #expect(piped.status == 0 && piped.stdout.contains("stdin: MPEG-2 transport stream"), "\(piped.stderr)")
        let samples = try h264kit(["inspect", "--samples", Self.ts])
        #expect(samples.stdout.split(separator: "\n").count == 91, "a header and 90 samples")
    }

    @Test func muxReadsATransportStreamFromAFileOrAPipe() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let reference = try ffmpegFrameHashes(Self.ts)
        let fromFile = try h264kit(["mux", Self.ts, work + "/file.mp4"])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        let fromPipe = try h264kit(["mux", "-", work + "/pipe.mp4"], stdin: try Data(contentsOf: URL(fileURLWithPath: Self.ts)))
        #expect(fromPipe.status == 0, "\(fromPipe.stderr)")
        #expect(try ffmpegFrameHashes(work + "/file.mp4") == reference)
        #expect(try ffmpegFrameHashes(work + "/pipe.mp4") == reference)
        #expect(try ffprobePresentationTimes(work + "/pipe.mp4") == ffprobePresentationTimes(Self.ts))
    }

    @Test func muxWritesATransportStreamToAPipe() throws {
        let result = try h264kitProcess(["mux", Self.annexB, "-", "--format", "ts"])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdout.count % 188 == 0 && result.stdout.first == 0x47)
        let play = try run("ffmpeg", ["-v", "warning", "-i", "-", "-f", "framemd5", "-"], stdin: result.stdout)
        #expect(play.stderrText.isEmpty, "ffmpeg warns: \(play.stderrText)")
        #expect(framemd5Hashes(play.stdoutText) == (try ffmpegFrameHashes(Self.annexB, format: "h264")))
        // M2TS by its name, read back by content.
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        #expect(try h264kit(["mux", Self.annexB, work + "/a.m2ts"]).status == 0)
        let inspect = try h264kit(["inspect", work + "/a.m2ts"])
        #expect(inspect.stdout.contains("192-byte packets (M2TS)"), "\(inspect.stdout)")
    }

    @Test func programsAndMisuseAreClearErrors() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        // A program of sound alone is muxed as sound alone (ffmpeg -map 0:p:1 -c copy), with no
        // video brand; a program that is not there is an error naming the ones there are.
        let audioOnly = try h264kit(["mux", Self.inputs + "/programs.ts", work + "/x.mp4", "--program", "1"])
        #expect(audioOnly.status == 0 && !audioOnly.stderr.contains("fps"), "\(audioOnly.stderr)")
        #expect(try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", work + "/x.mp4"]).stdoutText == "aac\n")
        #expect(try MovieBrands.compatible(work + "/x.mp4").contains("avc1") == false)
        let missing = try h264kit(["mux", Self.inputs + "/programs.ts", work + "/w.mp4", "--program", "9"])
        #expect(missing.status == 1 && missing.stderr.contains("program 9") && missing.stderr.contains("AAC"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: work + "/w.mp4"))
        let second = try h264kit(["mux", Self.inputs + "/programs.ts", work + "/y.mp4", "--program", "2"])
        #expect(second.status == 0, "\(second.stderr)")
        let faststart = try h264kit(["mux", Self.annexB, work + "/z.ts", "--faststart"])
        #expect(faststart.status == 64 && faststart.stderr.contains("--faststart is for a movie"), "\(faststart.stderr)")
        let notTS = try h264kit(["inspect", Self.annexB, "--program", "2"])
        #expect(notTS.status != 0 && notTS.stderr.contains("not a transport stream"), "\(notTS.stderr)")
    }

    @Test func demuxDecodeSplitAndStreamReadATransportStream() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let reference = try ffmpegFrameHashes(Self.ts)
        let demux = try h264kit(["demux", Self.ts, work + "/a.264"])
        #expect(demux.status == 0, "\(demux.stderr)")
        #expect(try ffmpegFrameHashes(work + "/a.264", format: "h264") == reference)
        let decode = try h264kit(["decode", Self.ts, "-o", work + "/a.framemd5"])
        #expect(decode.status == 0, "\(decode.stderr)")
        #expect(framemd5Hashes(String(decoding: try readFile(work + "/a.framemd5"), as: UTF8.self)) == reference)
        let split = try h264kit(["split", Self.ts, work + "/segments", "--segment-duration", "1"])
        #expect(split.status == 0, "\(split.stderr)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: work + "/segments").filter { $0.hasSuffix(".mp4") }
        #expect(segments.count == 3, "\(segments)")
        let receiver = try LoopbackUDPSocket(receiveTimeout: 1)
        let stream = try h264kit(["stream", Self.ts, "rtp://127.0.0.1:\(receiver.port)", "--frames", "10"])
        #expect(stream.status == 0, "\(stream.stderr)")
    }

    @Test(.requires(.x264)) func transcodeReadsAndWritesATransportStream() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let result = try h264kit(["transcode", Self.ts, work + "/b.ts", "--preset", "ultrafast"])
        #expect(result.status == 0, "\(result.stderr)")
        let play = try run("ffmpeg", ["-v", "warning", "-i", work + "/b.ts", "-f", "null", "-"])
        #expect(play.stderrText.isEmpty, "\(play.stderrText)")
        #expect(try ffmpegFrameHashes(work + "/b.ts").count == 90)
    }

    @Test func receiveRecordsRTPToATransportStream() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let port = try freeUDPPortPair()
        let output = work + "/received.ts"
        let receiver = try ChildProcess(try h264kitURL(), ["receive", "rtp://127.0.0.1:\(port)", output, "--timeout", "10"])
        try StreamCommandTests.waitUntilBound(port)
        let sent = try h264kit(["stream", Self.annexB, "rtp://127.0.0.1:\(port)", "--no-pace"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(receiver.wait() == 0, "\(receiver.stderrText)")
        #expect(receiver.stderrText.contains("90 samples"), "\(receiver.stderrText)")
        let play = try run("ffmpeg", ["-v", "warning", "-i", output, "-f", "null", "-"])
        #expect(play.stderrText.isEmpty, "\(play.stderrText)")
        #expect(try ffmpegFrameHashes(output) == ffmpegFrameHashes(Self.annexB, format: "h264"))
    }
}

/// The brands of a movie's `ftyp`, read from its first bytes.
enum MovieBrands {
    static func compatible(_ path: String) throws -> [String] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(64))
        guard bytes.count >= 16, String(decoding: bytes[4..<8], as: UTF8.self) == "ftyp" else { return [] }
        let size = min(bytes.count, Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3]))
        return stride(from: 16, to: size - 3, by: 4).map { String(decoding: bytes[$0..<($0 + 4)], as: UTF8.self) }
    }
}
