import Foundation
import H264Bitstream
import H264Codec
import H264Network
import H264Session
import H264Streaming
import MediaCore
import SampleFlow
import SystemIO
import TestSupport
import Testing

/// The live origin with sound: a file's AAC track published beside its picture (TS muxed,
/// fMP4 as an audio rendition, Low-Latency HLS with audio parts), pulled by FFmpeg frame for
/// frame and played by Chromium's own player with its sound decoded.
@Suite("HLS live origin with sound", .requires(.ffmpeg, .ffprobe), .serialized, .timely, .exclusive)
struct HLSOriginSoundTests {
    /// 8 s of 320x240 at 25 fps (B-frames, a keyframe a second) and 48 kHz stereo AAC.
    static let source: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-origin-av-\(getpid()).mp4").path
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:beep_factor=4",
                                "-t", "8", "-ac", "2", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-c:a", "aac", "-b:a", "96k", path])
        return path
    }()

    enum Mode: String, CaseIterable, CustomTestStringConvertible {
        case fragmentedMP4, transportStream, lowLatency
        var testDescription: String { rawValue }
        var format: MediaSegmenter.Format { self == .transportStream ? .transportStream : .fragmentedMP4 }
    }

    /// An origin publishing `source` (paced; looped when asked) with its sound, on a port of its own.
    static func start(_ mode: Mode, loops: Bool, transcodes: Bool = false) async throws -> (HLSOrigin, String, [Task<Void, any Error>]) {
        let port = try freeTCPPort()
        let segment = MediaTime(seconds: mode == .lowLatency ? 2 : 1, preferredTimescale: 90_000)
        let origin = try HLSOrigin(options: .init(port: port, segmenter: .init(format: mode.format, segmentDuration: segment), windowSize: 6,
                                                  servesDASH: mode.format == .fragmentedMP4,
                                                  lowLatency: mode == .lowLatency ? .init(partDuration: MediaTime(value: 1, timescale: 2)) : nil))
        let tracks = try StreamedTracks(path: source)
        let sound = try #require(tracks.audio)
        let samples = MediaFileSamples(path: source, options: tracks.sourceOptions(.init()), loops: loops)
        var settings = EncoderSettings(width: 16, height: 16, frameRate: FrameRate(25, 1), preset: "ultrafast", rateControl: .constantQuality(30))
        settings.threads = 1
        let tasks = [
            Task(executorPreference: TimelyExecutor.shared) { try await origin.run() },
            Task(executorPreference: TimelyExecutor.shared) {
                if transcodes {
                    try await origin.publish(TranscodedSamples(samples, options: .init(encoder: settings, keyframeInterval: segment)), paced: true, sound: sound)
                } else {
                    try await origin.publish(samples, paced: true, sound: sound)
                }
            },
        ]
        guard await waitUntilListening(port) else { throw TestFailure("the origin did not listen on \(port)") }
        return (origin, origin.url(port: port), tasks)
    }

    /// Frames of `framemd5` output: stream index, time in seconds, hash.
    static func frames(_ text: String) -> [(stream: Int, time: Double, hash: String)] {
        var timebases: [Int: Double] = [:]
        var result: [(Int, Double, String)] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#tb ") {
                let parts = line.dropFirst(4).split(separator: ":")
                let fraction = parts[1].trimmingCharacters(in: .whitespaces).split(separator: "/")
                timebases[Int(parts[0])!] = Double(fraction[0])! / Double(fraction[1])!
                continue
            }
            guard !line.hasPrefix("#") else { continue }
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 6, let stream = Int(fields[0]), let pts = Double(fields[2]) else { continue }
            result.append((stream, pts * (timebases[stream] ?? 1), fields[5]))
        }
        return result
    }

    /// FFmpeg pulls the live stream at `url` from its first segment, once: the packets as they
    /// are (their times and bytes) to `work`/copy.md5, the pictures decoded to `work`/decoded.md5
    /// (one pull: the live window moves on).
    static func pull(_ url: String, mode: Mode, into work: String) async throws -> ProcessResult {
        try await RTPStreamingTests.runInBackground("timeout", ["60", "ffmpeg", "-v", "error", "-live_start_index", "0", "-i", url,
                                                                "-map", "0:v:0", "-map", "0:a:0", "-c", "copy"]
                                                                // (A transport stream's AAC frames come with their ADTS headers.)
                                                                + (mode == .transportStream ? ["-bsf:a", "aac_adtstoasc"] : []) + ["-f", "framemd5", work + "/copy.md5",
                                                                "-map", "0:v:0", "-f", "framemd5", work + "/decoded.md5"])
    }

    @Test("FFmpeg pulls the whole live stream: the source's AAC frames byte for byte, one after another (no gap, no overlap), its pictures, and its A/V offset within 1 ms; the playlists name the sound",
          arguments: Mode.allCases)
    func ffmpegPullsTheSoundFrameForFrame(mode: Mode) async throws {
        let (origin, url, tasks) = try await Self.start(mode, loops: false)
        defer { for task in tasks { task.cancel() } }
        // From the first segment (the playlist appears once the picture and the sound have one).
        let deadline = ContinuousClock.now + .seconds(30)
        while await HLSOriginTests.get(url).status != 200, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let audioURL = url.replacingOccurrences(of: "index.m3u8", with: "index-audio.m3u8")
        let live = mode == .lowLatency ? String(decoding: await HLSOriginTests.get(audioURL).body, as: UTF8.self) : ""
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-origin-sound-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let pulled = try await Self.pull(url, mode: mode, into: work)
        #expect(pulled.status == 0, "\(pulled.stderrText)")
        let copied = Self.frames(try String(contentsOfFile: work + "/copy.md5", encoding: .utf8))
        let sound = copied.filter { $0.stream == 1 }, packets = copied.filter { $0.stream == 0 }
        let pictures = Self.frames(try String(contentsOfFile: work + "/decoded.md5", encoding: .utf8))
        let sourceCopied = Self.frames(try run("ffmpeg", ["-v", "error", "-i", Self.source, "-map", "0:v:0", "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        let sourceSound = sourceCopied.filter { $0.stream == 1 }, sourcePackets = sourceCopied.filter { $0.stream == 0 }
        let sourcePictures = Self.frames(try run("ffmpeg", ["-v", "error", "-i", Self.source, "-map", "0:v:0", "-f", "framemd5", "-"]).stdoutText)
        #expect(sound.map(\.hash) == sourceSound.map(\.hash), "\(sound.count) AAC frames pulled of \(sourceSound.count), \(zip(sound, sourceSound).filter { $0.hash == $1.hash }.count) the same in order")
        #expect(pictures.map(\.hash) == sourcePictures.map(\.hash), "\(pictures.count) pictures pulled of \(sourcePictures.count)")
        let steps = zip(sound, sound.dropFirst()).map { $1.time - $0.time }
        #expect(steps.allSatisfy { abs($0 - 1024.0 / 48000) < 0.0005 }, "AAC frame steps \(Set(steps.map { ($0 * 1e4).rounded() / 10 })) ms")
        // The sound's start against the picture's (the earliest presentation of each).
        if let firstSound = sound.map(\.time).min(), let firstPicture = packets.map(\.time).min(),
           let sourceSoundStart = sourceSound.map(\.time).min(), let sourcePictureStart = sourcePackets.map(\.time).min() {
            let offset = firstSound - firstPicture, sourceOffset = sourceSoundStart - sourcePictureStart
            #expect(abs(offset - sourceOffset) < 0.001, "sound \(offset * 1000) ms after the picture; the source's \(sourceOffset * 1000) ms")
        }
        // The playlists: the variant names both codecs; fMP4 lists the sound as a rendition the
        // variant plays; its parts (low latency) are independent and within the target, and
        // each playlist reports the other.
        let multivariant = HLSChecker.multivariant(String(decoding: await HLSOriginTests.get(url).body, as: UTF8.self))
        #expect(multivariant.problems.isEmpty, "\(multivariant.problems)")
        let variant = try #require(multivariant.variants.first { !$0.isIFrame })
        #expect(variant.attributes["CODECS"]?.contains("mp4a.40.2") == true && variant.attributes["CODECS"]?.contains("avc1.") == true, "\(variant.attributes)")
        if mode.format == .fragmentedMP4 {
            #expect(multivariant.media.count == 1 && multivariant.media.first?["TYPE"] == "AUDIO" && multivariant.media.first?["URI"] == "index-audio.m3u8"
                    && variant.attributes["AUDIO"] == multivariant.media.first?["GROUP-ID"], "\(multivariant.media) \(variant.attributes)")
            let audio = HLSChecker.media(String(decoding: await HLSOriginTests.get(url.replacingOccurrences(of: "index.m3u8", with: "index-audio.m3u8")).body, as: UTF8.self))
            #expect(audio.problems.isEmpty && audio.endList && audio.map == "index-audio-init.mp4", "\(audio.problems)")
            #expect(origin.statistics.samplesLeftOut == 0, "\(origin.statistics)")
        } else {
            #expect(multivariant.media.isEmpty)
        }
        if mode == .lowLatency {
            let audioText = live
            let parts = HLSChecker.media(audioText).tags["#EXT-X-PART"] ?? []
            let partAttributes = parts.map { HLSChecker.attributes(Substring($0)) }
            #expect(!partAttributes.isEmpty && partAttributes.allSatisfy { $0["INDEPENDENT"] == "YES" && (Double($0["DURATION"] ?? "") ?? 9) <= 0.5 }, "\(parts)")
            #expect(audioText.contains("#EXT-X-RENDITION-REPORT:URI=\"index-video.m3u8\""), "\(audioText)")
            let videoText = String(decoding: await HLSOriginTests.get(url.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8")).body, as: UTF8.self)
            // (Read after the end: the report stays.)
            #expect(videoText.contains("#EXT-X-RENDITION-REPORT:URI=\"index-audio.m3u8\""), "\(videoText)")
        }
    }

    @Test("a file encoded again live (TranscodedSamples, `stream --transcode`), its sound passed through: FFmpeg pulls the whole stream: the source's AAC frames byte for byte, every picture (x264's, at the source's times), the A/V offset within 1 ms",
          arguments: [Mode.fragmentedMP4, .transportStream])
    func ffmpegPullsATranscodedStream(mode: Mode) async throws {
        let (_, url, tasks) = try await Self.start(mode, loops: false, transcodes: true)
        defer { for task in tasks { task.cancel() } }
        let deadline = ContinuousClock.now + .seconds(30)
        while await HLSOriginTests.get(url).status != 200, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-origin-transcoded-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let pulled = try await Self.pull(url, mode: mode, into: work)
        #expect(pulled.status == 0, "\(pulled.stderrText)")
        let copied = Self.frames(try String(contentsOfFile: work + "/copy.md5", encoding: .utf8))
        let sound = copied.filter { $0.stream == 1 }, pictures = copied.filter { $0.stream == 0 }
        let sourceCopied = Self.frames(try run("ffmpeg", ["-v", "error", "-i", Self.source, "-map", "0:v:0", "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        let sourceSound = sourceCopied.filter { $0.stream == 1 }, sourcePictures = sourceCopied.filter { $0.stream == 0 }
        #expect(sound.map(\.hash) == sourceSound.map(\.hash), "\(sound.count) AAC frames pulled of \(sourceSound.count)")
        #expect(pictures.count == sourcePictures.count, "\(pictures.count) pictures of \(sourcePictures.count)")
        #expect(Set(pictures.map(\.hash)).isDisjoint(with: sourcePictures.map(\.hash)), "the pictures are encoded again")
        let times = pictures.map(\.time).sorted(), sourceTimes = sourcePictures.map(\.time).sorted()
        let pictureShift = (times.first ?? 0) - (sourceTimes.first ?? 0)
        #expect(zip(times, sourceTimes).allSatisfy { abs($0 - $1 - pictureShift) < 0.001 }, "the source's presentation times")
        if let firstSound = sound.map(\.time).min(), let firstPicture = times.first, let sourceSoundStart = sourceSound.map(\.time).min(), let sourceStart = sourceTimes.first {
            let offset = firstSound - firstPicture, sourceOffset = sourceSoundStart - sourceStart
            #expect(abs(offset - sourceOffset) < 0.001, "sound \(offset * 1000) ms after the picture; the source's \(sourceOffset * 1000) ms")
        }
        let decoded = Self.frames(try String(contentsOfFile: work + "/decoded.md5", encoding: .utf8))
        #expect(decoded.count == sourcePictures.count, "every picture decodes: \(decoded.count)")
    }

    @Test("two languages (48 kHz stereo English, 44.1 kHz mono French): each an audio rendition of its own (fMP4, and low latency), English the default; FFmpeg pulls both tracks' AAC frames byte for byte through the multivariant playlist; the MPD has an adaptation set each",
          arguments: [Mode.fragmentedMP4, .lowLatency])
    func twoLanguages(mode: Mode) async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-origin-langs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = work + "/langs.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000", "-f", "lavfi",
                               "-i", "sine=frequency=880:sample_rate=44100", "-t", "4", "-map", "0", "-map", "1", "-map", "2", "-c:v", "libx264", "-preset", "veryfast",
                               "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac:a:0", "2", "-ac:a:1", "1", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra", source])
        let port = try freeTCPPort()
        let origin = try HLSOrigin(options: .init(port: port, segmenter: .init(format: .fragmentedMP4, segmentDuration: MediaTime(value: 1, timescale: 1)), windowSize: 10,
                                                  servesDASH: true, lowLatency: mode == .lowLatency ? .init(partDuration: MediaTime(value: 1, timescale: 2)) : nil))
        let tracks = try StreamedTracks(path: source, othersReason: StreamedTracks.notAACOverHTTP, everyAACTrack: true)
        #expect(tracks.audioTracks.count == 2 && tracks.leftOut.isEmpty)
        let samples = MediaFileSamples(path: source, options: tracks.sourceOptions(.init()))
        let tasks = [Task(executorPreference: TimelyExecutor.shared) { try await origin.run() }, Task(executorPreference: TimelyExecutor.shared) { try await origin.publish(samples, paced: true, sounds: tracks.audioTracks) }]
        defer { for task in tasks { task.cancel() } }
        guard await waitUntilListening(port) else { throw TestFailure("the origin did not listen on \(port)") }
        let url = origin.url(port: port)
        let deadline = ContinuousClock.now + .seconds(30)
        while await HLSOriginTests.get(url).status != 200, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let multivariant = String(decoding: await HLSOriginTests.get(url).body, as: UTF8.self)
        #expect(HLSChecker.multivariant(multivariant).problems.isEmpty)
        #expect(multivariant.contains("NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES") && multivariant.contains("NAME=\"French\",LANGUAGE=\"fr\",DEFAULT=NO")
                && multivariant.contains("URI=\"index-audio2.m3u8\""), "\(multivariant)")
        let pulled = try await RTPStreamingTests.runInBackground("timeout", ["60", "ffmpeg", "-v", "error", "-live_start_index", "0", "-i", url,
                                                                             "-map", "0:a", "-c", "copy", "-f", "framemd5", "-"])
        #expect(pulled.status == 0, "\(pulled.stderrText)")
        let frames = Self.frames(pulled.stdoutText)
        let sourceFrames = Self.frames(try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:a", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        let sourceTracks = [0, 1].map { index in sourceFrames.filter { $0.stream == index }.map(\.hash) }
        let pulledTracks = Set(frames.map(\.stream)).sorted().map { index in frames.filter { $0.stream == index }.map(\.hash) }
        #expect(pulledTracks.count == 2 && Set(pulledTracks) == Set(sourceTracks), "\(pulledTracks.map(\.count)) frames pulled; the source's \(sourceTracks.map(\.count))")
        let mpd = String(decoding: await HLSOriginTests.get(url.replacingOccurrences(of: ".m3u8", with: ".mpd")).body, as: UTF8.self)
        #expect(mpd.components(separatedBy: "contentType=\"audio\"").count == 3 && mpd.contains("lang=\"en\"") && mpd.contains("lang=\"fr\""), "\(mpd)")
    }

    @Test("looped, FFmpeg pulls 20 s of the live stream (low latency) with every AAC frame exactly 1024 samples after the last across the loop's seams, round and round the source's frames")
    func ffmpegPullsTwentySecondsOfALoop() async throws {
        let (origin, url, tasks) = try await Self.start(.lowLatency, loops: true)
        defer { for task in tasks { task.cancel() } }
        let deadline = ContinuousClock.now + .seconds(30)
        while origin.statistics.segmentsPublished < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let pulled = try await RTPStreamingTests.runInBackground("timeout", ["60", "ffmpeg", "-v", "error", "-live_start_index", "0", "-i", url, "-t", "20",
                                                                             "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"])
        let sound = Self.frames(pulled.stdoutText)
        let source = Self.frames(try run("ffmpeg", ["-v", "error", "-i", Self.source, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText).map(\.hash)
        #expect(sound.count >= 900, "\(sound.count) AAC frames in 20 s: \(pulled.stderrText)")
        #expect(HLSOriginTests.isContiguous(sound.map(\.hash), in: source), "the source's frames round and round")
        let steps = zip(sound, sound.dropFirst()).map { $1.time - $0.time }
        #expect(steps.allSatisfy { abs($0 - 1024.0 / 48000) < 1e-6 }, "AAC frame steps \(Set(steps.map { ($0 * 1e4).rounded() / 10 })) ms")
    }

    @Test("Chromium's own player plays the live stream with its sound decoded (fMP4 low latency, TS)", .requires(.chromium), arguments: [Mode.lowLatency, .transportStream])
    func chromiumPlaysTheSound(mode: Mode) async throws {
        let (origin, url, tasks) = try await Self.start(mode, loops: true)
        defer { for task in tasks { task.cancel() } }
        // Chromium's player starts once the live playlist spans three target durations.
        let deadline = ContinuousClock.now + .seconds(30)
        while origin.statistics.segmentsPublished < (mode == .transportStream ? 4 : 8), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-live-sound-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try HLSOriginTests.livePage(url, soundBytes: 100_000).write(toFile: work + "/live.html", atomically: true, encoding: .utf8)
        let pages = try await StaticHTTPServer(directory: work)
        defer { pages.stop() }
        let browser = try HeadlessChromium(url: pages.url + "live.html")
        defer { browser.stop() }
        let played = await pages.waitForRequest(startingWith: "/report?playing", seconds: 45)
        let multivariant = String(decoding: await HLSOriginTests.get(url).body, as: UTF8.self)
        let media = String(decoding: await HLSOriginTests.get(url.replacingOccurrences(of: "index.m3u8", with: "index-video.m3u8")).body, as: UTF8.self)
        #expect(played != nil, "Chromium did not play 150 pictures and 100 kB of decoded sound: \(pages.requests.filter { $0.hasPrefix("/report") }) \(origin.statistics) \(multivariant) \(media)")
    }

    @Test("a live source's AAC sound is relayed beside its picture (RTSP from a file with sound; fMP4 and TS): the source's AAC frames and pictures through the playlist, the sound placed as in the source within 24 ms",
          arguments: [MediaSegmenter.Format.fragmentedMP4, .transportStream])
    func liveSourcesSoundRelayed(format: MediaSegmenter.Format) async throws {
        let (_, rtspTask, rtspPort) = try await RTSPTests.startServer(.file(path: Self.source))
        defer { rtspTask.cancel() }
        let httpPort = try freeTCPPort()
        // (A window longer than the 8-s source: the ended playlist lists it all.)
        let origin = try HLSOrigin(options: .init(port: httpPort, segmenter: .init(format: format, segmentDuration: MediaTime(value: 1, timescale: 1)),
                                                  windowSize: 20, servesDASH: format == .fragmentedMP4))
        let serving = Task(executorPreference: TimelyExecutor.shared) { try await origin.run() }
        defer { serving.cancel() }
        #expect(await waitUntilListening(httpPort))
        let source = try LiveSource(parsing: "rtsp://127.0.0.1:\(rtspPort)/live", transport: .tcp, audio: true)
        #expect(source.receivesAudio)
        let report = try await origin.publish(source)
        let sound = try #require(report.sound, "\(report)")
        #expect(report.ending == .goodbye && sound.lipSync == .senderReports && report.mediaNotReceived.isEmpty, "\(report)")
        let url = origin.url(port: httpPort)
        let pulled = Self.frames(try run("ffmpeg", ["-v", "error", "-i", url, "-map", "0:v:0", "-map", "0:a:0", "-c", "copy"]
                                               + (format == .transportStream ? ["-bsf:a", "aac_adtstoasc"] : []) + ["-f", "framemd5", "-"]).stdoutText)
        let sourceCopied = Self.frames(try run("ffmpeg", ["-v", "error", "-i", Self.source, "-map", "0:v:0", "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        let frames = pulled.filter { $0.stream == 1 }, sourceFrames = sourceCopied.filter { $0.stream == 1 }
        #expect(frames.map(\.hash) == sourceFrames.map(\.hash), "\(frames.count) AAC frames of \(sourceFrames.count)")
        #expect(try ffmpegFrameHashes(url) == ffmpegFrameHashes(Self.source), "the pictures")
        let offset = (frames.map(\.time).min() ?? .nan) - (pulled.filter { $0.stream == 0 }.map(\.time).min() ?? .nan)
        let sourceOffset = (sourceFrames.map(\.time).min() ?? .nan) - (sourceCopied.filter { $0.stream == 0 }.map(\.time).min() ?? .nan)
        #expect(abs(offset - sourceOffset) <= 0.024, "sound \(offset * 1000) ms after the picture; the source's \(sourceOffset * 1000) ms")
        let multivariant = String(decoding: await HLSOriginTests.get(url).body, as: UTF8.self)
        #expect(multivariant.contains("mp4a.40.2") && (format == .transportStream || multivariant.contains("TYPE=AUDIO")), "\(multivariant)")
    }

    @Test("a source that would carry sound and has none (a camera without audio, relayed with its sound asked for): the variant is the picture's alone, published at once")
    func aSilentSourceIsThePictureAlone() async throws {
        let (_, rtspTask, rtspPort) = try await RTSPTests.startServer(.file(path: HLSOriginTests.source))
        defer { rtspTask.cancel() }
        let httpPort = try freeTCPPort()
        let origin = try HLSOrigin(options: .init(port: httpPort, segmenter: .init(format: .fragmentedMP4, segmentDuration: MediaTime(value: 1, timescale: 1)),
                                                  windowSize: 20))
        let serving = Task(executorPreference: TimelyExecutor.shared) { try await origin.run() }
        defer { serving.cancel() }
        #expect(await waitUntilListening(httpPort))
        let report = try await origin.publish(try LiveSource(parsing: "rtsp://127.0.0.1:\(rtspPort)/live", transport: .tcp, audio: true))
        #expect(report.ending == .goodbye && report.sound == nil, "\(report)")
        let url = origin.url(port: httpPort)
        let multivariant = String(decoding: await HLSOriginTests.get(url).body, as: UTF8.self)
        #expect(multivariant.contains("CODECS=\"avc1.") && !multivariant.contains("mp4a") && !multivariant.contains("EXT-X-MEDIA"), "\(multivariant)")
        #expect(await HLSOriginTests.get(url.replacingOccurrences(of: "index.m3u8", with: "index-audio.m3u8")).status == 404)
        #expect(try ffmpegFrameHashes(url) == ffmpegFrameHashes(HLSOriginTests.source, format: "h264"))
    }
}
