import Foundation
@testable import H264Display
import H264Network
import H264Streaming
import MediaCore
import TestSupport
import Synchronization
import Testing

/// The preview with sound: a file's AAC track decoded by the page's AudioDecoder and played
/// through Web Audio on the control timebase, measured by the page's own A/V skew.
extension RealTimeDisplay {
@Suite("Preview with sound in headless Chromium", .requires(.chromium, .ffmpeg), .timely)
struct PreviewSoundTests {
    /// A 10-s (or `seconds`) H.264 (B-frames; a keyframe every `keyframeInterval` frames, x264's
    /// 250 unless said) + AAC 48 kHz stereo file made by ffmpeg, as `container`.
    static func soundFile(_ container: String, seconds: Int = 10, keyframeInterval: Int? = nil) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-sound-\(UUID().uuidString).\(container)").path
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                      "-t", "\(seconds)", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2"] + (keyframeInterval.map { ["-g", "\($0)"] } ?? [])
                                      + ["-c:a", "aac", "-b:a", "128k", "-ac", "2", "-shortest", path])
        guard made.status == 0 else { throw TestFailure("ffmpeg: \(made.stderrText)") }
        return path
    }

    /// The AAC packets ffprobe counts in `path`.
    static func soundPackets(_ path: String) throws -> Int {
        let probe = try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", path])
        return Int(probe.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    @Test("an MP4 with sound plays to its end: every AAC frame sent and decoded, the sound heard with the picture (A/V skew p95 <= 20 ms); --no-audio sends none",
          .requires(.ffprobe))
    func playsWithSound() async throws {
        let path = try Self.soundFile("mp4")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let packets = try Self.soundPackets(path)
        let (reports, _) = try await RealTimeDisplay.DisplayTests.play(Preview(source: .file(FilePreview(path: path)), options: .init(server: .init(port: 0), exitsAfterPlayback: true)))
        let report = try #require(reports.first)
        let sound = try #require(report.sound, "no sound in the report: \(report)")
        #expect(report.ended && report.framesPresented == 300 && report.framesDropped == 0, "\(report)")
        #expect(sound.codec == "mp4a.40.2" && sound.sampleRate == 48_000 && sound.channels == 2 && sound.contextState == "running", "\(sound)")
        // Every frame sent; every one decoded but the last the decoder may still hold at the
        // end report; the first (ffmpeg's priming, before the picture's first time) skipped, and
        // on a loaded machine one or two more whose time passed before the first animation
        // frame after the clock's start could start them (CI: 2), no other.
        #expect(sound.received == packets && sound.decoded >= packets - 1 && sound.decodeErrors == 0 && sound.skipped <= 3, "\(sound), \(packets) packets")
        #expect(sound.skewSamples >= 250 && sound.skewMs.p95 <= 20, "\(sound)")
        print("preview with sound (MP4, 10 s): skew p50 \(sound.skewMs.p50) / p95 \(sound.skewMs.p95) / max \(sound.skewMs.max) ms, mean \(sound.meanSkewMs) ms")

        let (silent, _) = try await RealTimeDisplay.DisplayTests.play(Preview(source: .file(FilePreview(path: path, playsSound: false)),
                                                                              options: .init(server: .init(port: 0), exitsAfterPlayback: true)))
        #expect(silent.first?.sound == nil && silent.first?.framesPresented == 300, "\(String(describing: silent.first))")
    }

    /// curl's HTTP status and version for `url` over TLS (`version`: `--http2` or `--http1.1`),
    /// the certificate `ca` trusted.
    static func status(_ url: String, _ version: String, ca: String) throws -> String {
        let result = try run("curl", ["-sS", "--max-time", "10", version, "--cacert", ca, "-o", "/dev/null", "-w", "%{http_code} %{http_version}", url])
        let fields = result.stdoutText.split(separator: " ")
        guard result.status == 0, fields.count == 2, let code = Int(fields[0]) else { throw TestFailure("curl \(version) \(url): \(result.status) \(result.stderrText)") }
        return "\(code) \(fields[1])"
    }

    @Test("over HTTPS by a signed URL: the page by HTTP/2 or HTTP/1.1 (ALPN), its stream by wss://, the sound played with the picture (A/V skew p95 <= 20 ms); the page unsigned, signed by another key or expired: 403",
          .requires(.ffprobe, .openssl, .curl))
    func playsOverHTTPSBySignedURL() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-preview-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let certificate = try SelfSignedCertificate(in: work)
        let path = try Self.soundFile("mp4", seconds: 5)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let packets = try Self.soundPackets(path)
        let key = try URLSigningKey(secret: Array("the preview's test secret, 32 b".utf8))
        let other = try URLSigningKey(secret: Array("another secret of 32 bytes, too".utf8))
        var server = DisplayServer.Options(port: 0)
        server.transport = .tls(TLSFiles(certificateChain: certificate.certificate, privateKey: certificate.privateKey))
        server.accessKey = key
        let now = Int(Date().timeIntervalSince1970)
        let refusals = Mutex<[String: String]>([:])
        let (reports, _) = try await RealTimeDisplay.DisplayTests.play(
            Preview(source: .file(FilePreview(path: path)), options: .init(server: server, exitsAfterPlayback: true)),
            page: { url in
                #expect(url.hasPrefix("https://127.0.0.1:"), "\(url)")
                let signed = try key.signedURL(url, expires: now + 600)
                #expect(try Self.status(signed, "--http2", ca: certificate.certificate) == "200 2")
                #expect(try Self.status(signed, "--http1.1", ca: certificate.certificate) == "200 1.1")
                let refused = [("unsigned", url), ("unsigned stream", url + "stream"), ("another key's", try other.signedURL(url, expires: now + 600)),
                               ("expired", try key.signedURL(url, expires: now - 1))]
                for (what, refusedURL) in refused { refusals.withLock { $0[what] = (try? Self.status(refusedURL, "--http2", ca: certificate.certificate)) ?? "curl failed" } }
                return signed
            },
            chromiumArguments: [try certificate.chromiumTrust()])
        #expect(refusals.withLock { $0 } == ["unsigned": "403 2", "unsigned stream": "403 2", "another key's": "403 2", "expired": "403 2"])
        let report = try #require(reports.first)
        let sound = try #require(report.sound, "no sound in the report: \(report)")
        #expect(report.ended && report.framesPresented == 150 && report.framesDropped == 0, "\(report)")
        #expect(sound.received == packets && sound.decoded >= packets - 1 && sound.decodeErrors == 0 && sound.skipped <= 3, "\(sound), \(packets) packets")
        #expect(sound.contextState == "running" && sound.skewMs.p95 <= 20, "\(sound)")
        print("preview over HTTPS, signed (MP4, 5 s): skew p50 \(sound.skewMs.p50) / p95 \(sound.skewMs.p95) ms, \(sound.decoded) of \(packets) AAC frames decoded")
    }

    /// A live source is received from the preview's start; the page joins when the browser has
    /// started (seconds in, here), at the next sync sample (a keyframe a second), its sound from
    /// then: the page's clock starts behind its first picture, and what came before is not heard.
    @Test("a live RTSP source with sound (our RTSP server serving an MP4 with AAC), a page joining it: the page plays the sound with the picture on its own clock, to the stream's end (A/V skew p95 <= 20 ms); without the sound, the picture as it arrives",
          .requires(.ffprobe))
    func liveSourceWithSound() async throws {
        let path = try Self.soundFile("mp4", seconds: 20, keyframeInterval: 30)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let packets = try Self.soundPackets(path)
        var options = RTSPServer.Options()
        options.port = 0
        let server = try RTSPServer(options: options)
        try server.serve(.file(path: path), at: "/live")
        let bound = BoundPort()
        let serving = Task(executorPreference: TimelyExecutor.shared) { try await server.run(onListening: { bound.set($0) }) }
        defer { serving.cancel() }
        let port = try #require(await bound.value(within: 60), "the RTSP server never listened")
        let url = "rtsp://127.0.0.1:\(port)/live"

        let (reports, _) = try await RealTimeDisplay.DisplayTests.play(Preview(source: .live(try LiveSource(parsing: url, audio: true)),
                                                                               options: .init(server: .init(port: 0), exitsAfterPlayback: true)))
        let report = try #require(reports.first)
        let sound = try #require(report.sound, "no sound in the report: \(report)")
        // The page draws what comes from its first sync sample on: at least the last 10 s (the
        // browser starts in under 10 s), a frame in 20 at most superseded before it was drawn.
        #expect(report.ended && report.error == nil && report.framesPresented >= 300 && report.framesDropped * 20 <= report.framesDecoded
                && report.decodeErrors == 0, "\(report)")
        #expect(sound.codec == "mp4a.40.2" && sound.sampleRate == 48_000 && sound.channels == 2 && sound.contextState == "running", "\(sound)")
        // Every AAC frame the page was sent is decoded; those before its clock's start (before its
        // first picture) are not heard, every one after is: at most a second of them skipped
        // beside the time to the first sync sample (a second at most).
        #expect(sound.received >= packets / 2 && sound.decoded >= sound.received - 1 && sound.decodeErrors == 0, "\(sound), \(packets) packets")
        #expect(sound.skipped <= 2 * 48_000 / 1024 && sound.started + sound.skipped >= sound.decoded - 2, "\(sound), \(packets) packets")
        #expect(sound.skewSamples >= 250 && sound.skewMs.p95 <= 20, "\(sound)")
        let latency = try #require(report.liveLatencyMs, "no live latency in \(report)")
        print("live preview with sound (RTSP, 20 s, the page joining seconds in): skew p50 \(sound.skewMs.p50) / p95 \(sound.skewMs.p95) / max \(sound.skewMs.max) ms, mean \(sound.meanSkewMs) ms; added latency p50 \(latency.p50) / p95 \(latency.p95) ms; \(sound.received) of \(packets) AAC frames received, \(sound.started) heard")

        let (silent, _) = try await RealTimeDisplay.DisplayTests.play(Preview(source: .live(try LiveSource(parsing: url)),
                                                                              options: .init(server: .init(port: 0), exitsAfterPlayback: true)))
        let alone = try #require(silent.first)
        // Drawn as it comes: the latency added is the page's decoding and drawing alone.
        #expect(alone.sound == nil && alone.framesPresented >= 300 && (alone.liveLatencyMs?.p50 ?? .infinity) < 100, "\(alone)")
    }

    /// Seconds of each phase of the timebase test: 2, or `H264KIT_PREVIEW_SOUND_PHASE` (15 plays
    /// it a minute, as the figure is measured).
    static let phaseSeconds = ProcessInfo.processInfo.environment["H264KIT_PREVIEW_SOUND_PHASE"].flatMap(Double.init) ?? 2

    @Test("a transport stream with sound, looped: the sound follows the picture through a pause, a seek (the stream read again from its start) and rates 2 and 0.5 (A/V skew p95 <= 20 ms); nothing heard while paused")
    func followsTheTimebase() async throws {
        let path = try Self.soundFile("ts")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await RealTimeDisplay.DisplayTests.withLoopedPage(path) { layer in
            func sound() throws -> PageReport.Sound { try #require(layer.pageReports.first?.sound, "no sound in \(String(describing: layer.pageReports.first))") }
            for _ in 0..<300 where ((try? sound())?.skewSamples ?? 0) < 30 { try await Task.sleep(for: .milliseconds(20)) }
            let playing = try sound()
            #expect(playing.contextState == "running" && playing.started > 10, "\(playing)")

            // Paused: no block starts, no frame is drawn.
            layer.setRate(0)
            let paused = try await RealTimeDisplay.DisplayTests.freshReport(layer)
            try await Task.sleep(for: .seconds(1))
            let stillPaused = try await RealTimeDisplay.DisplayTests.freshReport(layer)
            #expect(stillPaused.sound?.started == paused.sound?.started && stillPaused.sound?.skewSamples == paused.sound?.skewSamples,
                    "\(String(describing: paused.sound)) -> \(String(describing: stillPaused.sound))")

            // A seek, then playing again.
            layer.control("seek", value: 6.5)
            try await Task.sleep(for: .milliseconds(500))
            // Playing again, then rate changes, then 1x again.
            for rate in [1, 2.0, 0.5, 1] {
                layer.setRate(rate)
                try await Task.sleep(for: .seconds(Self.phaseSeconds))
            }
            let end = try sound()
            #expect(end.skewSamples >= playing.skewSamples + Int(Self.phaseSeconds * 90) && end.decodeErrors == 0, "\(end)")
            #expect(end.skewMs.p95 <= 20, "\(end)")
            print("preview with sound (TS looped, pause, seek, rates 1, 2, 0.5, 1, \(Self.phaseSeconds) s each): skew p50 \(end.skewMs.p50) / p95 \(end.skewMs.p95) / max \(end.skewMs.max) ms, mean \(end.meanSkewMs) ms, \(end.skewSamples) frames, \(end.rechained) rechained")
        }
    }
}
}
