import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TestSupport
import Testing

/// The sound through the tool: `mux` carries every track and says what it leaves out,
/// chooses with `--track` and `--no-audio`, takes several inputs; `demux OUT.aac` writes the
/// AAC track; `inspect` lists audio streams; `package` carries the sound and says what it does not.
@Suite("Audio through the command line", .requires(.ffmpeg, .ffprobe), .timely)
struct AudioCommandTests {
    static let inputs: String = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-audio-cli-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func make(_ name: String, _ arguments: [String]) { _ = try? run("ffmpeg", ["-v", "error", "-y"] + arguments + [directory + "/" + name]) }
        make("langs.mp4", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000", "-f", "lavfi",
                           "-i", "sine=frequency=880:sample_rate=44100", "-t", "2", "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-preset", "veryfast",
                           "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra"])
        make("langs.ts", ["-i", directory + "/langs.mp4", "-map", "0", "-c", "copy"])
        make("ac3.ts", ["-i", directory + "/langs.mp4", "-map", "0:v", "-map", "0:a:0", "-c:v", "copy", "-c:a", "ac3"])
        make("v.264", ["-i", directory + "/langs.mp4", "-map", "0:v", "-c", "copy", "-f", "h264"])
        make("a.aac", ["-i", directory + "/langs.mp4", "-map", "0:a:1", "-c", "copy", "-f", "adts"])
        return directory
    }()

    static func path(_ name: String) -> String { inputs + "/" + name }

    static func streams(_ path: String) throws -> [String] {
        try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name:stream_tags=language", "-of", "csv=p=0", path]).stdoutText
            .split(separator: "\n").map(String.init)
    }

    @Test func muxCarriesEveryTrackAndChoosesWithTrackAndNoAudio() throws {
        let all = Self.path("all.mp4"), one = Self.path("one.mov"), none = Self.path("none.ts")
        var result = try h264kit(["mux", Self.path("langs.ts"), all])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Self.streams(all) == ["h264,und", "aac,eng", "aac,fra"])
        #expect(result.stderr.contains("track 2: audio mp4a"), "\(result.stderr)")
        result = try h264kit(["mux", "--track", "256", "--track", "258", Self.path("langs.ts"), one])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Self.streams(one).map { $0.split(separator: ",").first.map(String.init) ?? "" } == ["h264", "aac"])
        result = try h264kit(["mux", "--no-audio", Self.path("langs.mp4"), none])
        #expect(result.status == 0 && !result.stderr.contains("warning"), "\(result.stderr)")
        #expect(try !Self.streams(none).contains { $0.hasPrefix("aac") })
        result = try h264kit(["mux", "--track", "9", Self.path("langs.mp4"), Self.path("bad.mp4")])
        #expect(result.status != 0 && result.stderr.contains("no track 9"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: Self.path("bad.mp4")))
    }

    @Test func muxPutsAnAnnexBAndAnADTSStreamTogether() throws {
        let output = Self.path("es.mp4")
        let result = try h264kit(["mux", Self.path("v.264"), Self.path("a.aac"), output])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Self.streams(output).map { $0.split(separator: ",").first.map(String.init) ?? "" } == ["h264", "aac"])
    }

    @Test func aTrackThatCannotGoIsLeftOutWithAWarning() throws {
        let result = try h264kit(["mux", Self.path("ac3.ts"), Self.path("ac3.mp4")])
        #expect(result.status == 0)
        #expect(result.stderr.contains("warning: track 257 (audio, AC-3") && result.stderr.contains("left out"), "\(result.stderr)")
    }

    @Test func demuxWritesTheAACTrackAsADTS() throws {
        let output = Self.path("fra.aac"), theirs = Self.path("fra.ffmpeg.aac")
        let result = try h264kit(["demux", "--track", "3", Self.path("langs.mp4"), output])
        #expect(result.status == 0, "\(result.stderr)")
        _ = try run("ffmpeg", ["-v", "error", "-y", "-i", Self.path("langs.mp4"), "-map", "0:a:1", "-c", "copy", "-f", "adts", theirs])
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == Data(contentsOf: URL(fileURLWithPath: theirs)))
        let missing = try h264kit(["demux", Self.path("ac3.ts"), Self.path("none.aac")])
        #expect(missing.status != 0 && missing.stderr.contains("no AAC track"), "\(missing.stderr)")
    }

    @Test func inspectListsTheAudio() throws {
        let stream = try h264kit(["inspect", Self.path("langs.ts")])
        #expect(stream.status == 0)
        #expect(stream.stdout.contains("audio         PID 0x101 mp4a.40.2 48000 Hz 2 channels [eng]"), "\(stream.stdout)")
        #expect(stream.stdout.contains("PID 0x102 mp4a.40.2 44100 Hz 2 channels [fra]"))
        let movie = try h264kit(["inspect", Self.path("langs.mp4")])
        #expect(movie.stdout.contains("mp4a (mp4a.40.2) AAC 48000 Hz 2 channels [eng]") && movie.stdout.contains("priming 1024 samples"), "\(movie.stdout)")
        let adts = try h264kit(["inspect", Self.path("a.aac")])
        #expect(adts.status == 0 && adts.stdout.contains("ADTS (AAC) stream") && adts.stdout.contains("44100 Hz"), "\(adts.stdout)")
    }

    /// Plain RTP with sound end to end: `sdp` announces both media, `receive FILE.sdp` listens
    /// on both, `stream` sends the picture to PORT and the sound to PORT+2 with its sender
    /// reports. The recording holds the source's pictures and AAC frames, the sound where it is
    /// beside the picture in what FFmpeg reads of the source (within 24 ms).
    @Test("sdp, receive FILE.sdp and stream rtp:// carry the sound: the source's pictures and AAC frames, the sound placed as in the source within 24 ms")
    func plainRTPCarriesTheSound() async throws {
        let source = Self.path("langs.mp4")
        let port = try freeUDPPortPair(count: 2)
        let directory = Self.path("rtp-\(port)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let described = try h264kit(["sdp", source, "rtp://127.0.0.1:\(port)"])
        #expect(described.status == 0 && described.stdout.contains("m=audio \(port + 2) "), "\(described.stdout)")
        try described.stdout.write(toFile: directory + "/x.sdp", atomically: true, encoding: .utf8)
        // (The sender's BYE ends the recording; the timeout only bounds a failure. In CI this
        // test's own tasks waited minutes for a thread beside the Chromium corpus run, and a
        // receiver with a short timeout gave up first: it waits ten minutes here. The sound's
        // port, bound last, is waited for on a thread of its own.)
        // (Whether it listened is decided on that thread too: in CI of ea1dc07 this task resumed
        // more than ten minutes after the port was bound, when the receiver had given up.)
        let receiver = try ChildProcess(try h264kitURL(), ["receive", directory + "/x.sdp", directory + "/out.mp4", "--timeout", "3600"])
        defer { kill(receiver.pid, SIGTERM) }  // (it ends at the sender's BYE; this when the test fails first)
        let listened = try await offThePool { () -> Bool in
            for _ in 0..<60_000 where !udpPortIsBound(UInt16(port + 2)) { usleep(10_000) }
            return udpPortIsBound(UInt16(port + 2))
        }
        try #require(listened, "receive never listened: \(receiver.stderrText)")
        let sent = try h264kit(["stream", source, "rtp://127.0.0.1:\(port)"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let status = try await offThePool { receiver.wait() }
        #expect(status == 0 && receiver.stderrText.contains("placed by the sender reports"), "\(receiver.stderrText)")
        #expect(try ffmpegFrameHashes(directory + "/out.mp4") == ffmpegFrameHashes(source), "the pictures")
        func packets(_ path: String) throws -> [String] {
            try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText
                .split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").dropFirst(5).first.map { $0.trimmingCharacters(in: .whitespaces) } }
        }
        let frames = try packets(directory + "/out.mp4"), expected = try packets(source)
        let same = frames == expected
        #expect(same, "the AAC frames byte for byte: \(frames.count) of \(expected.count)")
        // The sound's first packet against the first picture shown, as the packets are (the
        // priming not trimmed: what RTP carries).
        func soundLead(_ path: String) throws -> Double {
            let audio = try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path]).stdoutText
            let video = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path]).stdoutText
            let first = { (text: String) in text.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.min() ?? .nan }
            return first(audio) - first(video)
        }
        let ours = try soundLead(directory + "/out.mp4"), theirs = try soundLead(source)
        #expect(abs(ours - theirs) <= 0.024, "the sound starts \(ours) s after the picture; in the source \(theirs) s")
    }

    @Test("package: fmp4 carries every AAC track as an audio rendition and prints each; ts the first, naming the second; --no-audio names both")
    func packageCarriesTheSoundAndSaysWhatItLeavesOut() throws {
        let directory = Self.path("hls")
        let result = try h264kit(["package", Self.path("langs.mp4"), directory + "/index.m3u8"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("index-audio.m3u8: sound of track 2 (en)") && result.stderr.contains("index-audio-2.m3u8: sound of track 3 (fr)"), "\(result.stderr)")
        #expect(!result.stderr.contains("left out"), "\(result.stderr)")
        let playlist = try String(contentsOfFile: directory + "/index.m3u8", encoding: .utf8)
        #expect(playlist.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES"), "\(playlist)")
        let ts = try h264kit(["package", Self.path("langs.mp4"), directory + "/ts.m3u8", "--segment-format", "ts"])
        #expect(ts.status == 0 && ts.stderr.contains("track 3 (audio, AAC, fra): left out: a transport stream segment carries one audio track"), "\(ts.stderr)")
        let silent = try h264kit(["package", Self.path("langs.mp4"), directory + "/silent.m3u8", "--no-audio"])
        #expect(silent.status == 0 && silent.stderr.contains("track 2 (audio, AAC, eng): left out") && silent.stderr.contains("track 3 (audio, AAC, fra): left out"), "\(silent.stderr)")
    }

    @Test("stream http:// carries every AAC track (fMP4: an English and a French audio rendition the variant plays); --no-audio names both and the variant is the picture's alone")
    func streamOverHTTPCarriesTheSound() async throws {
        for noAudio in [false, true] {
            let port = try freeTCPPort()
            let url = "http://127.0.0.1:\(port)/live/index.m3u8"
            let origin = try ChildProcess(try h264kitURL(), ["stream", Self.path("langs.mp4"), url, "--segment-duration", "1"] + (noAudio ? ["--no-audio"] : []))
            defer { kill(origin.pid, SIGINT); _ = origin.wait(seconds: 20) }
            // The 2-s file paced: its playlists end within seconds.
            var playlist = ""
            for _ in 0..<300 {
                if let (data, response) = try? await URLSession.shared.data(from: URL(string: url)!), (response as? HTTPURLResponse)?.statusCode == 200 {
                    playlist = String(decoding: data, as: UTF8.self)
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            if noAudio {
                #expect(playlist.contains("CODECS=\"avc1.") && !playlist.contains("mp4a") && !playlist.contains("EXT-X-MEDIA"), "\(playlist)")
                #expect(origin.stderrText.contains("track 2 (audio, AAC, eng): left out") && origin.stderrText.contains("track 3 (audio, AAC, fra): left out"), "\(origin.stderrText)")
            } else {
                #expect(playlist.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES") && playlist.contains("AUDIO=\"audio\"")
                        && playlist.contains("mp4a.40.2"), "\(playlist)")
                #expect(playlist.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"French\",LANGUAGE=\"fr\",DEFAULT=NO") && playlist.contains("URI=\"index-audio2.m3u8\""),
                        "the second language a rendition too: \(playlist)")
                #expect(!origin.stderrText.contains("left out"), "\(origin.stderrText)")
            }
        }
    }

    @Test("stream http:// --transcode: the picture encoded again live, the first AAC track passed through: FFmpeg pulls every picture (decoded) and the source's AAC frames byte for byte; --transcode with rtp:// is refused")
    func streamTranscodesWithTheSound() async throws {
        let port = try freeTCPPort()
        let url = "http://127.0.0.1:\(port)/live/index.m3u8"
        let origin = try ChildProcess(try h264kitURL(), ["stream", Self.path("langs.mp4"), url, "--segment-duration", "1", "--transcode", "--preset", "ultrafast"])
        defer { kill(origin.pid, SIGINT); _ = origin.wait(seconds: 20) }
        for _ in 0..<300 {
            if let (_, response) = try? await URLSession.shared.data(from: URL(string: url)!), (response as? HTTPURLResponse)?.statusCode == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let pulled = try await offThePool { try run("timeout", ["60", "ffmpeg", "-v", "error", "-live_start_index", "0", "-i", url, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]) }
        let sourceSound = try run("ffmpeg", ["-v", "error", "-i", Self.path("langs.mp4"), "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"])
        // (The data's hash, the sixth field: side data, as the source's priming, follows it.)
        func hashes(_ text: String) -> [String] {
            text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
                let fields = line.split(separator: ",")
                return fields.count >= 6 ? fields[5].trimmingCharacters(in: .whitespaces) : nil
            }
        }
        #expect(!hashes(sourceSound.stdoutText).isEmpty && hashes(pulled.stdoutText) == hashes(sourceSound.stdoutText), "\(pulled.stderrText)")
        let pictures = try await offThePool { try run("timeout", ["60", "ffmpeg", "-v", "error", "-live_start_index", "0", "-i", url, "-map", "0:v:0", "-f", "framemd5", "-"]) }
        let sourcePictures = try run("ffmpeg", ["-v", "error", "-i", Self.path("langs.mp4"), "-map", "0:v:0", "-f", "framemd5", "-"])
        #expect(hashes(pictures.stdoutText).count == hashes(sourcePictures.stdoutText).count, "every picture decodes: \(pictures.stderrText)")
        #expect(hashes(pictures.stdoutText) != hashes(sourcePictures.stdoutText), "encoded again")
        let refused = try h264kit(["stream", Self.path("langs.mp4"), "rtp://127.0.0.1:9", "--transcode"])
        #expect(refused.status != 0 && refused.stderr.contains("--transcode is for http://"), "\(refused.stderr)")
    }
}
