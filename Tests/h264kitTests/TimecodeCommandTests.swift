import Foundation
import TestSupport
import Testing

/// A rate, a start timecode and a container for the timecode oracle tests.
struct TimecodeCase: Sendable, CustomTestStringConvertible {
    var rate: String
    var start: String
    var suffix: String
    var testDescription: String { "\(start) at \(rate) in \(suffix)" }

    static let all: [TimecodeCase] = ["30000/1001": "01:30:15;07", "60000/1001": "00:59:59;58", "25": "10:00:00:24", "24000/1001": "23:59:59:23"]
        .sorted { $0.key < $1.key }
        .flatMap { rate, start in [".mov", ".mp4"].map { TimecodeCase(rate: rate, start: start, suffix: $0) } }
}

func temporaryPath(_ suffix: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-tc-\(UUID().uuidString)\(suffix)").path
}

/// ffprobe's `timecode` tag of the timecode (data) stream, and its format tags.
func probeTimecode(_ path: String) throws -> String {
    let result = try run("ffprobe", ["-v", "error", "-select_streams", "d", "-show_entries", "stream_tags=timecode", "-of", "csv=p=0", path])
    return result.stdoutText.split(separator: "\n").first.map(String.init) ?? ""
}

@Suite("h264kit timecode", .serialized)
struct TimecodeCommandTests {
    /// An x264 stream at `rate` (VUI timing), 40 frames with B-frames.
    static func stream(rate: String) throws -> String {
        let bytes = try x264Stream(frames: 40, arguments: ["--preset", "veryfast", "--bframes", "2", "--fps", rate])
        return try CLIFixtures.temporaryFile(bytes)
    }

    @Test("mux --timecode: ffprobe, mediainfo and h264kit timecode show what was written", .requires(.ffmpeg, .ffprobe, .mediainfo, .x264), arguments: TimecodeCase.all)
    func muxedTimecode(_ test: TimecodeCase) throws {
        let input = try Self.stream(rate: test.rate)
        defer { try? FileManager.default.removeItem(atPath: input) }
        let output = temporaryPath(test.suffix)
        defer { try? FileManager.default.removeItem(atPath: output) }
        let mux = try h264kit(["mux", input, output, "--timecode", test.start, "--reel", "A001"])
        #expect(mux.status == 0, "\(mux.stderr)")
        #expect(try probeTimecode(output) == test.start)
        do { let info = try run("mediainfo", ["--Inform=Other;%TimeCode_FirstFrame%|%Format%", output])
            #expect(info.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "\(test.start)|QuickTime TC")
        }
        let shown = try h264kit(["timecode", output, "--json", "--frames"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
        #expect(report?["start"] as? String == test.start)
        #expect(report?["reel"] as? String == "A001")
        let frames = report?["frames"] as? [[String: Any]] ?? []
        #expect(frames.count == 40)
        // Frame n's timecode is the start counted on by n.
        let converted = try h264kit(["timecode", "convert", "--rate", test.rate, test.start])
        if let first = Int(converted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) {
            let expected = try h264kit(["timecode", "convert", "--rate", test.rate] + (test.start.contains(";") ? ["--drop-frame"] : []) + ["\(first + 39)"])
            #expect(frames.last?["timecode"] as? String == expected.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        } else {
            Issue.record("convert printed \(converted.stdout) \(converted.stderr)")
        }
        // The video decodes as before.
        #expect(try ffmpegFrameHashes(input) == ffmpegFrameHashes(output))
    }

    @Test("tc64 sample format is read back by h264kit timecode", .requires(.ffmpeg, .x264))
    func timeCode64() throws {
        let input = try Self.stream(rate: "25")
        defer { try? FileManager.default.removeItem(atPath: input) }
        let output = temporaryPath(".mov")
        defer { try? FileManager.default.removeItem(atPath: output) }
        #expect(try h264kit(["mux", input, output, "--timecode", "01:00:00:00", "--timecode-format", "tc64"]).status == 0)
        let shown = try h264kit(["timecode", output])
        #expect(shown.stdout.contains("tc64, start 01:00:00:00, 25/1 fps"))
    }

    @Test("ffmpeg-made MOVs with -timecode: h264kit prints ffprobe's start timecode", .requires(.ffmpeg, .ffprobe))
    func ffmpegMade() throws {
        for (rate, start) in [("30000/1001", "00:59:59;29"), ("50", "12:34:56:49"), ("60000/1001", "01:00:00;04"), ("24", "00:00:10:00")] {
            let path = temporaryPath(".mov")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let made = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=\(rate)", "-frames:v", "5",
                                          "-c:v", "libx264", "-timecode", start, path])
            try #require(made.status == 0, "\(made.stderrText)")
            let shown = try h264kit(["timecode", path, "--json"])
            let report = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
            #expect(report?["start"] as? String == start, "\(rate)")
            #expect(try probeTimecode(path) == start)
        }
    }

    @Test("every corpus file with a timecode track: the start timecode ffprobe reports", .requires(.ffprobe), .requiresCorpus)
    func corpus() throws {
        var checked = 0
        for entry in Corpus.entries() where entry.isContainer {
            let probed = try probeTimecode(entry.url.path)
            guard !probed.isEmpty else { continue }
            let shown = try h264kit(["timecode", entry.url.path, "--json"])
            let report = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
            #expect(report?["start"] as? String == probed, "\(entry.path): \(shown.stderr)")
            checked += 1
        }
        // The corpus also holds tmcd-only MOVs the MANIFEST does not list as video; read them by name.
        let directory = Corpus.directory!.appendingPathComponent("orchetect_TimecodeKit")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasSuffix(".mov") {
            let path = directory.appendingPathComponent(name).path
            let probed = try probeTimecode(path)
            guard !probed.isEmpty else { continue }
            let shown = try h264kit(["timecode", path, "--json", "--frames"])
            let report = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
            #expect(report?["start"] as? String == probed, "\(name): \(shown.stderr)")
            #expect((report?["frames"] as? [Any])?.isEmpty == false)
            checked += 1
        }
        #expect(checked >= 4)
    }

    @Test("timecode convert: both directions, drop-frame skips")
    func convert() throws {
        let result = try h264kit(["timecode", "convert", "--rate", "30000/1001", "01:30:15;07", "00:10:00;00"])
        #expect(result.stdout == "162295\n17982\n")
        let back = try h264kit(["timecode", "convert", "--rate", "30000/1001", "--drop-frame", "1799", "1800"])
        #expect(back.stdout == "00:00:59;29\n00:01:00;02\n")
        let json = try h264kit(["timecode", "convert", "--rate", "25", "--json", "90000"])
        #expect(json.stdout.contains("\"timecode\" : \"01:00:00:00\""))
    }

    @Test("bad timecodes: a clear error, exit ≠ 0, no file")
    func badInput() throws {
        let input = CLIFixtures.path("cisco-bframe-cabac.264")
        for (arguments, message) in [
            (["--timecode", "25:61:00:00"], "minutes 61"),
            (["--timecode", "25:00:00:00"], "hours 25"),
            (["--timecode", "00:00:00:25", "--fps", "25"], "frames 25"),
            (["--timecode", "00:00:00;05", "--fps", "25"], "drop-frame"),
            (["--timecode", "01:00:00:00", "--fragment-duration", "1"], "fragmented"),
            (["--timecode-format", "tc32"], "tmcd or tc64"),
        ] {
            let output = temporaryPath(".mov")
            let result = try h264kit(["mux", input, output] + arguments)
            #expect(result.status != 0, "\(arguments)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(arguments)")
        }
        let convert = try h264kit(["timecode", "convert", "--rate", "25", "--drop-frame", "100"])
        #expect(convert.status != 0)
        #expect(convert.stderr.contains("drop-frame"))
        let notMovie = try h264kit(["timecode", input])
        #expect(notMovie.status != 0)
        let output = temporaryPath(".mp4")
        defer { try? FileManager.default.removeItem(atPath: output) }
        #expect(try h264kit(["mux", input, output]).status == 0)
        let none = try h264kit(["timecode", output])
        #expect(none.status != 0)
        #expect(none.stderr.contains("no timecode track"))
    }
}

@Suite("h264kit metadata", .serialized)
struct MetadataCommandTests {
    @Test("MOV: --meta reverse-DNS keys show in ffprobe's format tags; inspect lists them", .requires(.ffprobe))
    func mov() throws {
        let input = CLIFixtures.path("cisco-bframe-cabac.264")
        let output = temporaryPath(".mov")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try h264kit(["mux", input, output, "--fps", "25", "--meta", "com.example.camera.model=Cam X",
                                  "--meta", "com.example.take=int:7", "--meta", "title=Scene 1", "--meta", "xmpl=raw bytes"])
        #expect(result.status == 0, "\(result.stderr)")
        do { let tags = try run("ffprobe", ["-v", "error", "-show_entries", "format_tags", "-of", "default=noprint_wrappers=1", output])
            #expect(tags.stdoutText.contains("TAG:com.example.camera.model=Cam X"))
            #expect(tags.stdoutText.contains("TAG:com.example.take=7"))
            #expect(tags.stdoutText.contains("TAG:title=Scene 1"))
        }
        let inspect = try h264kit(["inspect", output, "--json"])
        let summary = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any]
        let items = (summary?["metadata"] as? [[String: Any]] ?? []).map { "\($0["space"]!) \($0["key"]!)=\($0["value"]!)" }
        #expect(items.contains("mdta com.example.camera.model=Cam X"))
        #expect(items.contains("mdta com.example.take=7"))
        #expect(items.contains("udta ©nam=Scene 1"))
        #expect(items.contains("udta xmpl=raw bytes"))
    }

    @Test("MP4: udta items round-trip and sit in moov/udta; a reverse-DNS key is refused with what to use", .requires(.ffprobe))
    func mp4() throws {
        let input = CLIFixtures.path("cisco-bframe-cabac.264")
        let output = temporaryPath(".mp4")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let blob = try CLIFixtures.temporaryFile([0, 1, 2, 3, 254, 255])
        defer { try? FileManager.default.removeItem(atPath: blob) }
        let result = try h264kit(["mux", input, output, "--fps", "25", "--meta", "xmpl=Some value", "--meta", "blob=@\(blob)", "--meta", "title=T", "--meta", "comment=C"])
        #expect(result.status == 0, "\(result.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        // The box dump: moov/udta/xmpl holds the value's bytes as they were given.
        let item: [UInt8] = [0, 0, 0, 18] + Array("xmplSome value".utf8)
        #expect(bytes.indices.contains { bytes[$0...].starts(with: item) })
        let inspect = try h264kit(["inspect", output, "--json"])
        let summary = try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any]
        let items = (summary?["metadata"] as? [[String: Any]] ?? []).map { "\($0["space"]!) \($0["key"]!)=\($0["value"]!)" }
        #expect(items.contains("udta xmpl=Some value"))
        #expect(items.contains("udta blob=0x00010203feff"))
        #expect(items.contains("ilst ©nam=T"))
        do { let tags = try run("ffprobe", ["-v", "error", "-show_entries", "format_tags", "-of", "default=noprint_wrappers=1", output])
            #expect(tags.stdoutText.contains("TAG:title=T"))
            #expect(tags.stdoutText.contains("TAG:comment=C"))
        }

        let refused = temporaryPath(".mp4")
        let error = try h264kit(["mux", input, refused, "--fps", "25", "--meta", "com.example.camera.model=Cam X"])
        #expect(error.status != 0)
        #expect(error.stderr.contains("MP4 has no place for reverse-DNS"))
        #expect(error.stderr.contains(".mov"))
        #expect(!FileManager.default.fileExists(atPath: refused))
    }

    @Test("every corpus MP4/MOV: the metadata reads, and ffprobe's reverse-DNS and common tags are among the items", .requires(.ffprobe), .requiresCorpus)
    func corpus() throws {
        // FFmpeg's names for items; MOVs name the encoder ©swr, 3GPP files give the location as a binary loci box.
        let common = ["title": ["©nam"], "comment": ["©cmt"], "artist": ["©ART"], "album": ["©alb"], "encoder": ["©too", "©swr"],
                      "genre": ["©gen"], "location": ["©xyz"], "date": ["©day"]]
        for entry in Corpus.entries() where entry.isContainer {
            let inspect = try h264kit(["inspect", entry.url.path, "--json"])
            guard let summary = try? JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any] else {
                #expect(inspect.status != 0, "\(entry.path): no JSON but exit 0")
                continue
            }
            let items = (summary["metadata"] as? [[String: Any]] ?? []).map { (key: "\($0["key"]!)", value: "\($0["value"]!)") }
            let tags = try run("ffprobe", ["-v", "quiet", "-show_entries", "format_tags", "-of", "default=noprint_wrappers=1", entry.url.path])
            for line in tags.stdoutText.split(separator: "\n") where line.hasPrefix("TAG:") {
                let pair = line.dropFirst(4).split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                if pair[0].contains(".") {
                    let ours = items.first { $0.key == pair[0] }
                    #expect(ours != nil, "\(entry.path): \(pair[0]) missing")
                    if let ours, let number = Double(pair[1]), let value = Double(ours.value) { #expect(abs(number - value) < 1e-4, "\(entry.path): \(pair[0])") }
                    else { #expect(ours?.value == pair[1], "\(entry.path): \(pair[0])") }
                } else if let codes = common[pair[0]] {
                    let found = items.contains { ($0.key == pair[0] || codes.contains($0.key)) && $0.value == pair[1] }
                        || (pair[0] == "location" && items.contains { $0.key == "loci" })
                    #expect(found, "\(entry.path): \(pair[0])=\(pair[1]) missing")
                }
            }
        }
    }
}
