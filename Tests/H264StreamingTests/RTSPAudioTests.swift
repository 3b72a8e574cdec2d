import Foundation
import H264Network
import H264Streaming
import MediaCore
import SampleFlow
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// ``RTSPServer`` serving a file with sound: the video and its first AAC track as two media of
/// one session (RFC 3640 for the sound), played by ffmpeg over UDP and TCP and by GStreamer's
/// rtspsrc. The sound that arrives is the source's frames, byte for byte, and its place beside
/// the picture is the source's (from the sender reports), also when the sound starts 3 s late.
@Suite("RTSP with sound", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct RTSPAudioTests {
    /// 3 s of H.264 (B-frames) and 48 kHz stereo AAC, by ffmpeg.
    static let source = RTPStreamingTests.audioVideoSource

    /// 5 s of H.264 whose AAC sound starts 3 s after the first picture, by ffmpeg.
    static let lateSoundSource: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-rtsp-late-sound-\(getpid()).mp4").path
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-itsoffset", "3", "-f", "lavfi", "-i",
                                "sine=frequency=440:sample_rate=48000", "-map", "0:v", "-map", "1:a", "-t", "5", "-ac", "2",
                                "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-c:a", "aac", path])
        return path
    }()

    /// What ffmpeg's `-c copy` of the source says: the AAC packets' hashes and times, the
    /// pictures' times in decoding order.
    static func reference(_ path: String) throws -> (audio: [String], audioStart: Double, pictures: [Double?]) {
        let audio = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        let video = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        return (audio.dataHashes(stream: 0), try #require(audio.firstTime(stream: 0)), video.times(stream: 0))
    }

    @Test("ffmpeg plays a file with sound from RTSPServer (UDP and TCP): two media in one session; the AAC frames are the source's in order (at most the first 3 missing), the pictures the source's, and the first sound sits beside the pictures as in the source within 24 ms",
          arguments: ["udp", "tcp"], [false, true])
    func ffmpegPlaysVideoAndSound(transport: String, soundStartsLate: Bool) async throws {
        let source = soundStartsLate ? Self.lateSoundSource : Self.source
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let (server, task, port) = try await RTSPTests.startServer(.file(path: source))
        defer { task.cancel() }
        let recorded = try Checkout.temporaryFile([], suffix: ".framemd5")
        defer { try? FileManager.default.removeItem(atPath: recorded) }
        let result = try await RTSPTests.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-y", "-rtsp_transport", transport, "-buffer_size", "4194304",
                                                                     "-i", "rtsp://127.0.0.1:\(port)/live",
                                                                     "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-",
                                                                     "-map", "0", "-c", "copy", "-f", "framemd5", recorded])
        #expect(result.status == 0, "ffmpeg ends on our BYEs: \(result.stderrText)")
        let statistics = server.statistics
        #expect(statistics.sessionsPlayed == 1 && statistics.errorsAnswered == 0, "\(statistics)")
        #expect(framemd5Hashes(result.stdoutText) == (try ffmpegFrameHashes(source)))
        let copied = RTPStreamingTests.Framemd5(try String(contentsOfFile: recorded, encoding: .utf8))
        let reference = try Self.reference(source)
        // The sound: the source's frames in order, none missing but at most the first 3.
        let received = copied.dataHashes(stream: 1)
        #expect(received.count >= reference.audio.count - 3 && received == Array(reference.audio.suffix(received.count)),
                "\(received.count) AAC frames of \(reference.audio.count)")
        // Lip sync: the first sound against a picture whose time ffmpeg gives, as in the source
        // (the frames missing at the start, if any, counted back in).
        let pictures = copied.times(stream: 0)
        let picture = try #require(pictures.firstIndex { $0 != nil })
        let missing = Double(reference.audio.count - received.count) * 1024 / 48_000
        let offset = try #require(copied.firstTime(stream: 1)) - missing - pictures[picture]!
        let expected = reference.audioStart - (try #require(reference.pictures[picture]))
        #expect(abs(offset - expected) <= 0.024, "the first sound \(offset) s after picture \(picture); in the source \(expected) s")
    }

    @Test("GStreamer's rtspsrc sets up both media and depayloads the sound (rtpmp4gdepay): the source's AAC frames, in order, at most the first 3 missing",
          .requires(.gstLaunch), arguments: ["udp", "tcp"])
    func gstreamerPlaysTheSound(transport: String) async throws {
        let (server, task, port) = try await RTSPTests.startServer(.file(path: Self.source))
        defer { task.cancel() }
        let depayloaded = try Checkout.temporaryFile([], suffix: ".aac")
        defer { try? FileManager.default.removeItem(atPath: depayloaded) }
        // Both media linked (the picture to a fakesink); the sound's raw frames, one after another.
        let result = try await RTSPTests.runInBackground("timeout", [
            "40", "gst-launch-1.0", "-q", "rtspsrc", "location=rtsp://127.0.0.1:\(port)/live", "protocols=\(transport)", "latency=500", "name=s",
            "s.", "!", "application/x-rtp,media=audio", "!", "rtpmp4gdepay", "!", "filesink", "location=\(depayloaded)",
            "s.", "!", "application/x-rtp,media=video", "!", "rtph264depay", "!", "fakesink",
        ])
        #expect(result.status == 0, "gst-launch ends at our BYEs: \(result.stderrText)")
        #expect(server.statistics.sessionsPlayed == 1)
        // The source's frames (as `MediaSource` reads them: ffmpeg's -c copy packets, measured
        // in the RTP tests): what arrived is the last of them, whole, at most the first 3 missing.
        var options = MediaSource.Options()
        options.tracks = .all
        var frames: [[UInt8]] = []
        let reader = try MediaSource(path: Self.source, options: options)
        while let sample = try reader.next() {
            if sample.mediaType == .audio { frames.append(sample.data.bytes) }
        }
        try #require(frames.count > 100, "the source has its sound")
        let received = [UInt8](try Data(contentsOf: URL(fileURLWithPath: depayloaded)))
        let matched = (0...3).first { received == Array(frames.dropFirst($0).joined()) }
        #expect(matched != nil, "\(received.count) bytes of AAC frames received, \(frames.joined().count) in the source")
    }

    /// 6 s of H.264 (a keyframe a second) and noise as AAC: every picture and every sound frame
    /// is unique, so a recording's first ones are found in the source by their bytes.
    static let noiseSource: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-rtsp-noise-\(getpid()).mp4").path
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
                                "anoisesrc=color=white:sample_rate=48000:amplitude=0.3", "-t", "6", "-ac", "2", "-pix_fmt", "yuv420p",
                                "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-c:a", "aac", path])
        return path
    }()

    @Test("a looped file with sound joined mid-way (ffmpeg, TCP): the sound starts at once, the picture at the next keyframe, and the first sound sits beside the pictures as in the source within 24 ms (RTP-Info and the reports name one instant for both)")
    func ffmpegJoinsALoopMidway() async throws {
        let source = Self.noiseSource
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let (_, task, port) = try await RTSPTests.startServer(.file(path: source, loops: true))
        defer { task.cancel() }
        try await Task.sleep(for: .milliseconds(1300))  // into the first pass, between keyframes
        try await Self.ffmpegJoins("rtsp://127.0.0.1:\(port)/live", source: source)
    }

    /// ffmpeg joins `url` (TCP) and records 3 s; its sound goes on frame after frame from its
    /// first, and its first sound sits beside its pictures as in `source` (6 s, a pass of a
    /// loop) within 24 ms.
    static func ffmpegJoins(_ url: String, source: String) async throws {
        let recorded = try Checkout.temporaryFile([], suffix: ".framemd5")
        defer { try? FileManager.default.removeItem(atPath: recorded) }
        // One output (one timeline): the pictures decoded (their bytes name them in the source),
        // at 90 kHz, and the sound as it came.
        let result = try await RTSPTests.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-y", "-rtsp_transport", "tcp", "-i", url,
                                                                     "-t", "3", "-map", "0:v:0", "-map", "0:a:0", "-c:a", "copy", "-fps_mode", "passthrough",
                                                                     "-enc_time_base:v", "1:90000", "-f", "framemd5", recorded])
        #expect(result.status == 0, "\(result.stderrText)")
        let recording = RTPStreamingTests.Framemd5(try String(contentsOfFile: recorded, encoding: .utf8))
        let sourcePictures = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:v:0", "-fps_mode", "passthrough",
                                                                           "-enc_time_base:v", "1:90000", "-f", "framemd5", "-"]).stdoutText)
        let sourceSounds = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
        // A picture and the first sound, found in the source by their bytes. The picture: the
        // first after the first sound whose time FFmpeg gives (its RTP demuxer gives the first
        // picture none, and its output holds pictures before the first sound at the sound's time).
        let pictures = recording.dataHashes(stream: 0), pictureTimes = recording.times(stream: 0)
        let soundStart = try #require(recording.firstTime(stream: 1))
        let picture = try #require(pictureTimes.indices.dropFirst().first { pictureTimes[$0].map { $0 > soundStart } ?? false },
                                   "a picture after the first sound: \(pictureTimes.prefix(5))")
        let pictureInSource = try #require(sourcePictures.dataHashes(stream: 0).firstIndex(of: pictures[picture]), "the picture is one of the source's")
        let received = recording.dataHashes(stream: 1)
        let firstSound = try #require(received.first)
        let soundInSource = try #require(sourceSounds.dataHashes(stream: 0).firstIndex(of: firstSound), "the first sound is one of the source's")
        // The sound goes on frame after frame from there (to the end of the pass, at least).
        let following = Array(sourceSounds.dataHashes(stream: 0).dropFirst(soundInSource).prefix(received.count))
        #expect(Array(received.prefix(following.count)) == following)
        let measured = soundStart - pictureTimes[picture]!
        let soundTime = try #require(sourceSounds.times(stream: 0)[soundInSource]), pictureTime = try #require(sourcePictures.times(stream: 0)[pictureInSource])
        var expected = soundTime - pictureTime
        // (Both from one pass of the loop, unless the picture came in the next: then a pass later.)
        if expected > 3 { expected -= 6 }
        #expect(abs(measured - expected) <= 0.024, "the first sound \(measured) s from the second picture; in the source \(expected) s")
    }

    /// The start of the sound after the first picture shown, seconds, as ffprobe reads `path`.
    static func soundAfterPicture(_ path: String) throws -> Double {
        let lines = try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,start_time", "-of", "csv=p=0", path]).stdoutText.split(separator: "\n")
        func start(_ kind: String) throws -> Double {
            try #require(lines.first { $0.hasPrefix(kind + ",") }.flatMap { Double($0.split(separator: ",")[1]) }, "\(path): no \(kind) start (\(lines))")
        }
        return try start("audio") - start("video")
    }

    /// The source's AAC frames (ffmpeg's `-c copy` packets' hashes) and the sound's start after
    /// the first picture shown (as the packets are, the priming not trimmed: what RTP carries).
    static func sourceSound(_ path: String) throws -> (frames: [String], offset: Double) {
        let reference = try reference(path)
        return (reference.audio, reference.audioStart - (try #require(reference.pictures.compactMap { $0 }.min())))
    }

    @Test("RTSPClient records a file with sound from RTSPServer (UDP and TCP; a sound 3 s late too): the source's pictures, its AAC frames byte for byte, and the sound placed beside the pictures as in the source within 24 ms, by the sender reports",
          arguments: [RTSPClient.TransportPreference.udp, .tcp], [false, true])
    func ourClientRecordsTheSound(transport: RTSPClient.TransportPreference, soundStartsLate: Bool) async throws {
        let source = soundStartsLate ? Self.lateSoundSource : Self.source
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let (_, task, port) = try await RTSPTests.startServer(.file(path: source))
        defer { task.cancel() }
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let report = try await RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(transport: transport)).record(to: .init(path: movie))
        let expected = try Self.sourceSound(source)
        let sound = try #require(report.sound, "\(report)")
        #expect(sound.lipSync == .senderReports && sound.samples == expected.frames.count && sound.packetsLost == 0 && report.mediaNotReceived.isEmpty,
                "\(sound); the stream: \(report.ending), \(report.samples) samples, \(report.depacketizer)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(source), "the pictures")
        let frames = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
            .dataHashes(stream: 0)
        let same = frames == expected.frames
        #expect(same, "the AAC frames byte for byte: \(frames.count) of \(expected.frames.count)")
        let offset = try Self.soundAfterPicture(movie)
        #expect(abs(offset - expected.offset) <= 0.024, "the sound starts \(offset) s after the picture; in the source \(expected.offset) s")
    }

    @Test("an RTSPBroadcast with a sound track serves both media: our client records the source's pictures and AAC frames, the sound placed as in the source within 24 ms, by the sender reports")
    func aBroadcastCarriesItsSound() async throws {
        let tracks = try StreamedTracks(path: Self.source)
        let sound = try #require(tracks.audio)
        var samples: [SampleBuffer] = []
        for try await sample in MediaFileSamples(path: Self.source, options: tracks.sourceOptions(.init())) { samples.append(sample) }
        let broadcast = try RTSPBroadcast(formatDescription: try #require(samples.first { $0.videoFormatDescription != nil }?.videoFormatDescription), sound: sound)
        #expect(broadcast.soundFormat?.payloadType == 97)
        let (_, task, port) = try await RTSPTests.startServer(.broadcast(broadcast))
        defer { task.cancel() }
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        async let recorded = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(transport: .tcp)).record(to: .init(path: movie))
        // (A subscriber a medium: the picture's and the sound's.)
        for _ in 0..<3000 where broadcast.clientCount < 2 { try await Task.sleep(for: .milliseconds(10)) }
        try #require(broadcast.clientCount == 2, "the client never played both media")
        // Paced by decoding time, as a live source would bring them.
        let start = ContinuousClock.now, first = samples[0].decodeTime
        for sample in samples {
            try await Task.sleep(until: start + .milliseconds(Int((sample.decodeTime - first).seconds * 1000)), clock: .continuous)
            try broadcast.send(sample)
        }
        broadcast.finish()
        let report = try await recorded
        let expected = try Self.sourceSound(Self.source)
        let received = try #require(report.sound, "\(report)")
        #expect(received.lipSync == .senderReports && received.samples == expected.frames.count, "\(received)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source), "the pictures")
        let frames = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText).dataHashes(stream: 0)
        #expect(frames == expected.frames, "the AAC frames byte for byte: \(frames.count) of \(expected.frames.count)")
        let offset = try Self.soundAfterPicture(movie)
        #expect(abs(offset - expected.offset) <= 0.024, "the sound starts \(offset) s after the picture; in the source \(expected.offset) s")
    }

    @Test("a live source with sound relayed by the RTSP server (rtsp:// of our server's file, relayed, joined by ffmpeg over TCP): the sound starts at once, frame after frame, beside the pictures as in the source within 24 ms")
    func aRelayCarriesTheSound() async throws {
        let source = Self.noiseSource
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let (_, task, port) = try await RTSPTests.startServer(.file(path: source))
        defer { task.cancel() }
        let relay = try RTSPServer(options: .init(port: 0))
        let bound = BoundPort()
        let relaying = Task(executorPreference: TimelyExecutor.shared) {
            try await relay.run(relaying: try LiveSource(parsing: "rtsp://127.0.0.1:\(port)/live", transport: .tcp, audio: true), at: "/relay",
                                onListening: { bound.set($0) })
        }
        defer { relaying.cancel() }
        let relayPort = try #require(await bound.value(within: 60), "the relay never listened")
        try await Self.ffmpegJoins("rtsp://127.0.0.1:\(relayPort)/relay", source: source)
        let report = try await relaying.value
        #expect(report.sound?.lipSync == .senderReports && report.mediaNotReceived.isEmpty, "\(report)")
    }

    @Test("RTSPClient records a file with sound from GStreamer's RTSP server (AAC as mpeg4-generic by rtpmp4gpay, as MP4A-LATM by rtpmp4apay): the source's pictures and AAC frames, the sound placed as in the source within 24 ms",
          .enabled(if: RTSPTests.gstreamerPython != nil, "needs python3-gi and gir1.2-gst-rtsp-server-1.0 (a python3 that imports GstRtspServer)"),
          arguments: [RTSPClient.TransportPreference.udp, .tcp], ["rtpmp4gpay", "rtpmp4apay"])
    func ourClientRecordsGStreamersSound(transport: RTSPClient.TransportPreference, payloader: String) async throws {
        let python = try #require(RTSPTests.gstreamerPython)
        let source = Self.lateSoundSource
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let port = try freeTCPPort()
        let gstreamer = try RTSPTests.gstreamerServer(python: python, port: port, launch: "( filesrc location=\(source) ! qtdemux name=d "
            + "d.video_0 ! queue ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 d.audio_0 ! queue ! aacparse ! \(payloader) name=pay1 pt=97 )")
        defer { kill(gstreamer.pid, SIGTERM) }
        try #require(await waitUntilListening(port, seconds: 60), "gst-rtsp-server never listened: \(gstreamer.stderrText)")
        let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(receiver: .init(idleTimeout: RTSPTests.gstreamerQuiet), transport: transport))
        let report = try await client.record(to: .init(path: movie))
        let expected = try Self.sourceSound(source)
        let sound = try #require(report.sound, "\(report)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(source), "the pictures: \(report)")
        let frames = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
            .dataHashes(stream: 0)
        // (GStreamer's demuxer leaves the priming frame of the edit list out: the others, in order.)
        let same = frames.count >= expected.frames.count - 1 && frames == Array(expected.frames.suffix(frames.count))
        #expect(same, "the AAC frames byte for byte: \(frames.count) of \(expected.frames.count); \(sound)")
        let offset = try Self.soundAfterPicture(movie) - Double(expected.frames.count - frames.count) * 1024 / 48_000
        #expect(abs(offset - expected.offset) <= 0.024, "the sound starts \(offset) s after the picture; in the source \(expected.offset) s (\(sound))")
    }

    /// G.711 from GStreamer's RTSP server (the source's sound decoded, resampled to 8 kHz mono,
    /// then µ-law by rtppcmupay, static payload type 0, or A-law by rtppcmapay): recorded as
    /// `ulaw`/`alaw` in a MOV and an MP4, as long as the source's sound within 5%, placed
    /// beside the picture as in FFmpeg's own recording of the same server within 24 ms; a
    /// transport stream recording names the sound it cannot carry.
    @Test("RTSPClient records G.711 from GStreamer's RTSP server (PCMU, PCMA; MOV and MP4): the sound's length within 5% of the source's, its place as in FFmpeg's recording within 24 ms; a TS recording names it",
          .enabled(if: RTSPTests.gstreamerPython != nil, "needs python3-gi and gir1.2-gst-rtsp-server-1.0 (a python3 that imports GstRtspServer)"),
          arguments: ["pcmu", "pcma"], [".mov", ".mp4"])
    func ourClientRecordsG711(law: String, container: String) async throws {
        let python = try #require(RTSPTests.gstreamerPython)
        // (The file whose sound starts 3 s late never prerolls through GStreamer's decoder in its
        // RTSP server: the picture's queue fills first. The 3-s file.)
        let source = Self.source
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let port = try freeTCPPort()
        let gstreamer = try RTSPTests.gstreamerServer(python: python, port: port, launch: "( filesrc location=\(source) ! qtdemux name=d "
            + "d.video_0 ! queue ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 d.audio_0 ! queue ! avdec_aac ! audioconvert ! audioresample "
            + "! audio/x-raw,rate=8000,channels=1 ! \(law == "pcmu" ? "mulawenc ! rtppcmupay" : "alawenc ! rtppcmapay") name=pay1 )")
        defer { kill(gstreamer.pid, SIGTERM) }
        try #require(await waitUntilListening(port, seconds: 60), "gst-rtsp-server never listened: \(gstreamer.stderrText)")
        let url = "rtsp://127.0.0.1:\(port)/live"
        let movie = try Checkout.temporaryFile([], suffix: container), theirs = try Checkout.temporaryFile([], suffix: ".mov")
        defer { for path in [movie, theirs] { try? FileManager.default.removeItem(atPath: path) } }
        let client = RTSPClient(url: try RTSPURL(parsing: url), options: .init(receiver: .init(idleTimeout: RTSPTests.gstreamerQuiet), transport: .tcp))
        let report = try await client.record(to: .init(path: movie))
        let sound = try #require(report.sound, "\(report)")
        #expect(sound.lipSync == .senderReports && sound.packetsLost == 0 && report.mediaNotReceived.isEmpty, "\(sound); \(report.mediaNotReceived)")
        let codec = try run("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", movie]).stdoutText
        #expect(codec.trimmingCharacters(in: .whitespacesAndNewlines) == "pcm_\(law == "pcmu" ? "mulaw" : "alaw"),8000,1", "\(codec)")
        // The sound's length: what FFmpeg decodes of the recording against the source's sound.
        func seconds(_ path: String) throws -> Double {
            Double(try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-f", "s16le", "-ac", "1", "-ar", "8000", "-"]).stdout.count) / 16_000
        }
        let recorded = try seconds(movie), expected = try seconds(source)
        #expect(abs(recorded - expected) <= 0.05 * expected, "\(recorded) s of sound recorded; the source has \(expected) s")
        // FFmpeg's own recording of the same server: the sound's place beside the picture.
        let ffmpeg = try run("timeout", ["60", "ffmpeg", "-v", "error", "-y", "-rtsp_transport", "tcp", "-i", url, "-map", "0", "-c", "copy", theirs])
        #expect(ffmpeg.status == 0, "\(ffmpeg.stderrText)")
        let ours = try Self.soundAfterPicture(movie), ffmpegs = try Self.soundAfterPicture(theirs)
        #expect(abs(ours - ffmpegs) <= 0.024, "the sound starts \(ours) s after the picture; in FFmpeg's recording \(ffmpegs) s")
        if container == ".mov" {
            let stream = try Checkout.temporaryFile([], suffix: ".ts")
            defer { try? FileManager.default.removeItem(atPath: stream) }
            let ts = try await client.record(to: .init(path: stream))
            #expect(ts.sound == nil && ts.mediaNotReceived.contains { $0.contains("PCM") && $0.contains("a transport stream carries AAC") }, "\(ts.mediaNotReceived)")
        }
    }

    /// G.711 from a file: a MOV with H.264 and µ-law or A-law (as FFmpeg writes one) served by
    /// the RTSP server, FFmpeg recording over TCP: the file's samples byte for byte (PCMU and
    /// PCMA with their static payload types at 8 kHz mono), and the file's pictures.
    @Test("a MOV with G.711 served by RTSPServer (FFmpeg's pcm_mulaw, pcm_alaw; FFmpeg the client over TCP): the file's samples byte for byte, and its pictures",
          arguments: ["pcm_mulaw", "pcm_alaw"])
    func aFileWithG711IsServed(codec: String) async throws {
        let source = try Checkout.temporaryFile([], suffix: ".mov")
        let recorded = try Checkout.temporaryFile([], suffix: ".law")
        defer { for path in [source, recorded] { try? FileManager.default.removeItem(atPath: path) } }
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000",
                                      "-t", "4", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-c:a", codec, "-ac", "1", source])
        try #require(made.status == 0, "\(made.stderrText)")
        let format = codec == "pcm_mulaw" ? "mulaw" : "alaw"
        let (server, task, port) = try await RTSPTests.startServer(.file(path: source))
        defer { task.cancel() }
        let result = try await RTSPTests.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-y", "-rtsp_transport", "tcp", "-i", "rtsp://127.0.0.1:\(port)/live",
                                                                     "-map", "0:v:0", "-f", "framemd5", "-", "-map", "0:a:0", "-c", "copy", "-f", format, recorded])
        #expect(result.status == 0, "ffmpeg ends on our BYEs: \(result.stderrText)")
        #expect(server.statistics.sessionsPlayed == 1, "\(server.statistics)")
        #expect(framemd5Hashes(result.stdoutText) == (try ffmpegFrameHashes(source)), "the pictures")
        let sent = [UInt8](try Data(contentsOf: URL(fileURLWithPath: recorded)))
        let file = [UInt8](try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:a:0", "-c", "copy", "-f", format, "-"]).stdout)
        #expect(file.count == 32_000 && sent == file, "\(sent.count) bytes received of the file's \(file.count)")
    }

    /// G.711 sent: a camera's PCMU (GStreamer's RTSP server decoding a noise source's AAC to
    /// 8 kHz µ-law) relayed by our RTSP server, FFmpeg recording the relay: the sound FFmpeg
    /// records through the relay is the camera's samples byte for byte (found in FFmpeg's own
    /// recording of the camera, without a gap), and it sits beside the picture as in that
    /// recording within 24 ms.
    @Test("a camera's PCMU relayed by the RTSP server (GStreamer's RTSP server -> our relay -> FFmpeg over TCP): the camera's G.711 samples byte for byte, beside the picture as in FFmpeg's own recording of the camera within 24 ms",
          .enabled(if: RTSPTests.gstreamerPython != nil, "needs python3-gi and gir1.2-gst-rtsp-server-1.0 (a python3 that imports GstRtspServer)"))
    func aRelayCarriesACamerasG711() async throws {
        let python = try #require(RTSPTests.gstreamerPython)
        // 12 s (the relay serves once the camera's sound is placed by its reports, seconds in),
        // a keyframe a second, noise: every stretch of sound unique.
        let source = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: source) }
        _ = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
                               "anoisesrc=color=white:sample_rate=48000:amplitude=0.3", "-t", "12", "-ac", "2", "-pix_fmt", "yuv420p",
                               "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-c:a", "aac", source])
        let port = try freeTCPPort()
        let gstreamer = try RTSPTests.gstreamerServer(python: python, port: port, launch: "( filesrc location=\(source) ! qtdemux name=d "
            + "d.video_0 ! queue ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 d.audio_0 ! queue ! avdec_aac ! audioconvert ! audioresample "
            + "! audio/x-raw,rate=8000,channels=1 ! mulawenc ! rtppcmupay name=pay1 )")
        defer { kill(gstreamer.pid, SIGTERM) }
        try #require(await waitUntilListening(port, seconds: 60), "gst-rtsp-server never listened: \(gstreamer.stderrText)")
        let camera = "rtsp://127.0.0.1:\(port)/live"
        let files = try (0..<4).map { try Checkout.temporaryFile([], suffix: [".framemd5", ".ulaw"][$0 % 2]) }
        defer { for path in files { try? FileManager.default.removeItem(atPath: path) } }
        /// FFmpeg records `url` (TCP) once into two outputs: the pictures decoded and the sound's
        /// packets on one timeline (framemd5), and the sound's samples as they came.
        func ffmpegRecords(_ url: String, into timeline: String, _ samples: String) async throws -> (timeline: RTPStreamingTests.Framemd5, samples: [UInt8]) {
            let result = try await RTSPTests.runInBackground("timeout", ["60", "ffmpeg", "-v", "error", "-y", "-rtsp_transport", "tcp", "-i", url,
                                                                         "-map", "0:v:0", "-map", "0:a:0", "-c:a", "copy", "-fps_mode", "passthrough",
                                                                         "-enc_time_base:v", "1:90000", "-f", "framemd5", timeline,
                                                                         "-map", "0:a:0", "-c", "copy", "-f", "mulaw", samples])
            try #require(result.status == 0, "\(result.stderrText)")
            return (RTPStreamingTests.Framemd5(try String(contentsOfFile: timeline, encoding: .utf8)), try [UInt8](Data(contentsOf: URL(fileURLWithPath: samples))))
        }
        // FFmpeg's own recording of the camera (every client of that server gets the file from its start).
        let (theirTimeline, theirs) = try await ffmpegRecords(camera, into: files[0], files[1])
        // The relay, and FFmpeg recording it as soon as it listens.
        let relay = try RTSPServer(options: .init(port: 0))
        let bound = BoundPort()
        let relaying = Task(executorPreference: TimelyExecutor.shared) {
            try await relay.run(relaying: try LiveSource(parsing: camera, transport: .tcp, audio: true), at: "/relay", onListening: { bound.set($0) })
        }
        defer { relaying.cancel() }
        // (Within ten minutes: the relay's tasks share the test process's two threads with every
        // suite; in CI of ea1dc07 it had not listened after 60 s.)
        let relayPort = try #require(await bound.value(within: 600), "the relay never listened")
        let (ourTimeline, ours) = try await ffmpegRecords("rtsp://127.0.0.1:\(relayPort)/relay", into: files[2], files[3])
        let report = try await relaying.value
        #expect(report.sound?.lipSync == .senderReports && report.mediaNotReceived.isEmpty, "\(report)")
        // The samples: the relayed ones are a stretch of the camera's, without a gap.
        try #require(ours.count >= 8000, "\(ours.count) samples relayed: at least a second")
        let probe = Array(ours.prefix(800))
        let start = try #require((0...(theirs.count - probe.count)).first { theirs[$0] == probe[0] && Array(theirs[$0..<($0 + probe.count)]) == probe },
                                 "the relayed sound's first 100 ms are in the camera's")
        let overlap = min(ours.count, theirs.count - start)
        #expect(overlap >= ours.count - 800 && Array(ours.prefix(overlap)) == Array(theirs[start..<(start + overlap)]),
                "\(ours.count) samples relayed from the camera's \(start); \(overlap) of them follow on")
        // The place: a picture of each recording and its first sound, the relayed ones mapped
        // into the camera's by their bytes. The picture: the first after the first sound whose
        // time FFmpeg gives (its RTP demuxer gives the first picture none, and its output holds
        // pictures before the first sound at the sound's time).
        let ourHashes = ourTimeline.dataHashes(stream: 0), ourTimes = ourTimeline.times(stream: 0)
        let ourSound = try #require(ourTimeline.firstTime(stream: 1))
        let picture = try #require(ourTimes.indices.dropFirst().first { ourTimes[$0].map { $0 > ourSound } ?? false }, "a picture after the first sound: \(ourTimes.prefix(5))")
        let index = try #require(theirTimeline.dataHashes(stream: 0).firstIndex(of: ourHashes[picture]), "the relayed picture is one of the camera's")
        let ourOffset = ourSound - ourTimes[picture]!
        let theirOffset = try #require(theirTimeline.firstTime(stream: 1)) + Double(start) / 8000 - (try #require(theirTimeline.times(stream: 0)[index]))
        print("G.711 relayed: \(ours.count) samples, the camera's from its \(start)th; the sound \(ourOffset) s from the picture, in FFmpeg's recording of the camera \(theirOffset) s")
        #expect(abs(ourOffset - theirOffset) <= 0.024, "through the relay the sound at \(ourOffset) s from the picture; in FFmpeg's recording of the camera \(theirOffset) s")
    }

    /// A receiver told to leave the sound out names it in the report (and `receive` says it):
    /// never dropped without a word.
    @Test("RTSPClient told to leave the sound out: the video recorded, the sound named in the report as not received")
    func theSoundNotReceivedIsSaid() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.source), "ffmpeg made the source")
        let (_, task, port) = try await RTSPTests.startServer(.file(path: Self.source))
        defer { task.cancel() }
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        var options = RTSPClient.Options(transport: .tcp)
        options.receivesAudio = false
        let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: options)
        let played = try await client.record(to: .init(path: movie))
        #expect(played.samples == 75 && played.mediaNotReceived.map { $0.lowercased() } == ["audio mpeg4-generic/48000/2"] && played.sound == nil, "\(played)")
    }

    @Test("RTSPIngest records what ffmpeg publishes with sound (ANNOUNCE/RECORD, UDP and TCP; a sound 3 s late too): the source's pictures, its AAC frames byte for byte, the sound placed as in the source within 24 ms by the sender reports",
          arguments: ["udp", "tcp"], [false, true])
    func ingestRecordsThePublishersSound(transport: String, soundStartsLate: Bool) async throws {
        let source = soundStartsLate ? Self.lateSoundSource : Self.source
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        // Any free port, as the ingest binds it (one chosen before could be taken meanwhile).
        let ingest = RTSPIngest(url: RTSPURL(host: "127.0.0.1", port: 0, path: "/live"), options: .init(idleTimeout: .seconds(5)))
        let bound = BoundPort()
        async let report = ingest.record(to: .init(path: movie), onListening: { bound.set($0) })
        let port = try #require(await bound.value(within: 60), "the ingest never listened")
        let publisher = try await RTSPTests.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-re", "-i", source, "-c", "copy", "-f", "rtsp",
                                                                        "-rtsp_transport", transport, "rtsp://127.0.0.1:\(port)/live"])
        #expect(publisher.status == 0, "\(publisher.stderrText)")
        let received = try await report
        let expected = try Self.sourceSound(source)
        let sound = try #require(received.sound, "\(received)")
        #expect(received.mediaNotReceived.isEmpty && sound.lipSync == .senderReports, "\(sound)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(source), "the pictures")
        let frames = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
            .dataHashes(stream: 0)
        // The source's frames in order, from the first; ffmpeg's RTP muxer never sends the few
        // it gathers for a next packet when its input ends (its own RTSP receiver, `-rtsp_flags
        // listen`, gets the same 139 of 142 and 92 of 95).
        let same = frames.count == sound.samples && frames.count >= expected.frames.count - 5 && frames == Array(expected.frames.prefix(frames.count))
        #expect(same, "the AAC frames byte for byte: \(frames.count) of \(expected.frames.count)")
        let offset = try Self.soundAfterPicture(movie)
        #expect(abs(offset - expected.offset) <= 0.024, "the sound starts \(offset) s after the picture; in the source \(expected.offset) s")
    }

    /// A publisher's sound as LATM (`-rtpflags latm`) or G.711 (PCMU): the ingest records it
    /// beside the picture, as the RTSP client does from a server.
    @Test("RTSPIngest records what ffmpeg publishes with its sound as MP4A-LATM (the source's AAC frames from the first) or PCMU (into a MOV, the sound's length within 5%), placed as in the source within 24 ms",
          arguments: ["latm", "pcmu"])
    func ingestRecordsLATMAndG711(codec: String) async throws {
        let source = Self.source
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let movie = try Checkout.temporaryFile([], suffix: codec == "pcmu" ? ".mov" : ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        // Any free port, as the ingest binds it (one chosen before could be taken meanwhile).
        let ingest = RTSPIngest(url: RTSPURL(host: "127.0.0.1", port: 0, path: "/live"), options: .init(idleTimeout: .seconds(5)))
        let bound = BoundPort()
        async let report = ingest.record(to: .init(path: movie), onListening: { bound.set($0) })
        let port = try #require(await bound.value(within: 60), "the ingest never listened")
        let sound = codec == "pcmu" ? ["-c:a", "pcm_mulaw", "-ar", "8000", "-ac", "1"] : ["-c:a", "copy", "-rtpflags", "latm"]
        let publisher = try await RTSPTests.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-re", "-i", source, "-c:v", "copy"] + sound
                                                            + ["-f", "rtsp", "-rtsp_transport", "tcp", "rtsp://127.0.0.1:\(port)/live"])
        #expect(publisher.status == 0, "\(publisher.stderrText)")
        let received = try await report
        let recorded = try #require(received.sound, "\(received)")
        #expect(received.mediaNotReceived.isEmpty && recorded.lipSync == .senderReports, "\(recorded); \(received.mediaNotReceived)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(source), "the pictures")
        let expected = try Self.sourceSound(source)
        if codec == "latm" {
            let frames = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
                .dataHashes(stream: 0)
            let same = frames.count >= expected.frames.count - 5 && frames == Array(expected.frames.prefix(frames.count))
            #expect(same, "the AAC frames byte for byte: \(frames.count) of \(expected.frames.count)")
        } else {
            func seconds(_ path: String) throws -> Double {
                Double(try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:a:0", "-f", "s16le", "-ac", "1", "-ar", "8000", "-"]).stdout.count) / 16_000
            }
            let length = try seconds(movie), full = try seconds(source)
            #expect(abs(length - full) <= 0.05 * full, "\(length) s of sound recorded; the source has \(full) s")
        }
        // (G.711 has no priming: its first sample is the source's first sound decoded, 21 ms
        // (the AAC priming) after the first AAC packet's time.)
        let offset = try Self.soundAfterPicture(movie) - (codec == "pcmu" ? 1024.0 / 48_000 : 0)
        #expect(abs(offset - expected.offset) <= 0.024, "the sound starts \(offset) s after the picture; in the source \(expected.offset) s")
    }

    @Test("an RTP receiver made from a description with sound receives the first sound it reads (here PCMU) and names the others; told to leave the sound out, it names all")
    func anRTPReceiverNamesTheSound() throws {
        let description = try SessionDescription(parsing: """
            v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
            m=video 5004 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n\
            m=audio 5006 RTP/AVP 97\r\na=rtpmap:97 MPEG4-GENERIC/44100/2\r\n\
            m=audio 5008 RTP/AVP 0\r\n
            """)
        let receiver = try RTPReceiver(sessionDescription: description)
        #expect(receiver.endpoint.port == 5004)
        #expect(receiver.mediaNotReceived == ["audio MPEG4-GENERIC/44100/2"], "(no config=: not described)")
        #expect(receiver.audio == .init(format: .g711(G711PayloadFormat(law: .mu)), endpoint: RTPDestination(host: "127.0.0.1", port: 5008)))
        let silent = try RTPReceiver(sessionDescription: description, receivesAudio: false)
        #expect(silent.audio == nil && silent.mediaNotReceived == ["audio MPEG4-GENERIC/44100/2", "audio, payload type 0"])
    }

    /// Plain RTP with sound, as ffmpeg sends it (the picture to PORT, the sound to PORT+2, its
    /// own SDP naming both): the receiver made from that SDP records both, the sound placed by
    /// the sender reports. (Where: ffmpeg's two RTP muxers each map their own start to the wall
    /// clock in their reports, so the place they give is not the source's: measured, the sound
    /// 80 ms before the picture where the source has 21 ms, and ffmpeg's own receiver of that
    /// SDP 240 ms. The place is checked with our sender, in `AudioCommandTests`.)
    @Test("RTPReceiver records the picture and the sound ffmpeg sends over plain RTP (its SDP): the source's pictures, its AAC frames byte for byte from the first, placed by the sender reports")
    func anRTPReceiverRecordsTheSoundFFmpegSends() async throws {
        let source = Self.source
        try #require(FileManager.default.fileExists(atPath: source), "ffmpeg made the source")
        let port = try freeUDPPortPair(count: 2)
        let sdpPath = try Checkout.temporaryFile([], suffix: ".sdp")
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { for path in [sdpPath, movie] { try? FileManager.default.removeItem(atPath: path) } }
        let outputs = ["-map", "0:v", "-c", "copy", "-f", "rtp", "rtp://127.0.0.1:\(port)", "-map", "0:a", "-c", "copy", "-f", "rtp", "-sdp_file", sdpPath,
                       "rtp://127.0.0.1:\(port + 2)"]
        // ffmpeg writes its SDP as it starts: a first run of a moment (to ports nobody listens
        // on yet, on loopback) gives it.
        let dryRun = try run("timeout", ["20", "ffmpeg", "-v", "error", "-y", "-i", source, "-t", "0.1"] + outputs)
        try #require(dryRun.status == 0, "\(dryRun.stderrText)")
        let sdp = try SessionDescription(parsing: String(decoding: try Data(contentsOf: URL(fileURLWithPath: sdpPath)), as: UTF8.self))
        let receiver = try RTPReceiver(sessionDescription: sdp, options: .init(idleTimeout: .seconds(3)))
        #expect(receiver.audio?.endpoint.port == port + 2 && receiver.mediaNotReceived.isEmpty, "\(sdp.text)")
        async let report = receiver.record(to: .init(path: movie))
        try await RTPStreamingTests.waitUntilBound(port + 2)
        let sender = try await RTPStreamingTests.runInBackground("timeout", ["20", "ffmpeg", "-v", "error", "-re", "-i", source] + outputs)
        #expect(sender.status == 0, "\(sender.stderrText)")
        let received = try await report
        let expected = try Self.sourceSound(source)
        let sound = try #require(received.sound, "\(received)")
        #expect(sound.lipSync == .senderReports && sound.packetsLost == 0, "\(sound)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(source), "the pictures")
        let frames = RTPStreamingTests.Framemd5(try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
            .dataHashes(stream: 0)
        // (ffmpeg's RTP muxer never sends the few frames it gathers for a next packet when its
        // input ends: the others, from the first.)
        let same = frames.count >= expected.frames.count - 5 && frames == Array(expected.frames.prefix(frames.count))
        #expect(same, "the AAC frames byte for byte: \(frames.count) of \(expected.frames.count)")
    }

    @Test("carriesAudio off: the video alone is described and served")
    func theVideoAloneWhenAsked() async throws {
        var options = RTSPServer.Options()
        options.carriesAudio = false
        let (_, task, port) = try await RTSPTests.startServer(.file(path: Self.source), options: options)
        defer { task.cancel() }
        let probe = try run("ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_type", "-of", "csv=p=0", "rtsp://127.0.0.1:\(port)/live"])
        #expect(probe.stdoutText.split(separator: "\n").map(String.init) == ["video"], "\(probe.stderrText)")
    }
}
