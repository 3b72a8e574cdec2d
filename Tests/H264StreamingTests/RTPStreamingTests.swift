import Dispatch
import Foundation
import ISOBMFF
import MPEGTS
import H264Network
import H264Session
import H264Streaming
import MediaCore
import MediaIO
import H264Bitstream
import H264Codec
import TestSupport
import SampleFlow
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// RTP over real UDP sockets on loopback, with ffmpeg as the peer: what ``RTPSender`` sends,
/// ffmpeg decodes to the source's frames; what ffmpeg sends, ``RTPReceiver`` records into a
/// movie with the source's frames and times; and the two of ours together through a relay
/// that loses, reorders and duplicates packets.
@Suite("RTP over UDP: RTPSender and RTPReceiver", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct RTPStreamingTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    /// Runs a program on a thread of its own (not the cooperative pool), for a test that goes on meanwhile.
    static func runInBackground(_ program: String, _ arguments: [String]) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try run(program, arguments) }) }
        }
    }

    /// Waits up to a minute of the wall clock for a peer (ffmpeg) to bind `port` (CI: over 10 s
    /// for an ffmpeg started beside the corpus suites).
    static func waitUntilBound(_ port: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !udpPortIsBound(UInt16(port)), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try #require(udpPortIsBound(UInt16(port)), "nothing listened on 127.0.0.1:\(port) within 60 s")
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var mode: Int
        var packetSize: Int
        var testDescription: String { "mode \(mode), \(packetSize)-byte packets" }
    }

    @Test("ffmpeg receives what RTPSender sends, paced, and decodes the source's frames; the BYE ends it",
          arguments: [Shape(mode: 1, packetSize: 1200), Shape(mode: 1, packetSize: 500), Shape(mode: 0, packetSize: 65_507)])
    func ffmpegDecodesWhatWeSend(_ shape: Shape) async throws {
        let port = try freeUDPPortPair()
        let destination = RTPDestination(host: "127.0.0.1", port: port)
        let first = try #require(try MediaSource(path: Self.source).next())
        let format = H264PayloadFormat(formatDescription: first.videoFormatDescription!, packetizationMode: shape.mode)
        let sdpPath = try Checkout.temporaryFile(Array(destination.sessionDescription(for: format).text.utf8), suffix: ".sdp")
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        async let received = Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-buffer_size", "4194304", "-i", sdpPath,
                                                              "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
        try await Self.waitUntilBound(port)
        // A frame lost because the kernel dropped what ffmpeg did not read in time (its socket
        // buffer full while the whole suite starved it) is the machine's, said as such.
        let drops = UDPDropWatch(port: port)
        // ffmpeg ends at the BYE and drops the RTP it has not read yet: a receiver the whole
        // suite starves on two cores reads seconds behind (the tail of the stream was lost with
        // the default half second), so the BYE waits 3 s here.
        let sender = try RTPSender(destination: destination, options: .init(packetizer: .init(packetizationMode: shape.mode, maximumPacketSize: shape.packetSize),
                                                                             goodbyeDelay: .seconds(3)))
        let summary = try await sender.send(MediaFileSamples(path: Self.source))
        let result = try await received
        let dropped = drops.stop()
        #expect(result.status == 0, "ffmpeg ends on our BYE: \(result.stderrText)")
        let expected = try ffmpegFrameHashes(Self.source)
        expectations(unless: dropped > 0 ? "the kernel dropped \(dropped) datagrams on ffmpeg's port \(port): ffmpeg did not read in time" : nil) {
            #expect(framemd5Hashes(result.stdoutText) == expected)
        }
        #expect(summary.samples == expected.count && summary.controlPackets >= 2)
    }

    /// 3 s of H.264 (B-frames) and 48 kHz stereo AAC, by ffmpeg.
    static let audioVideoSource: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-rtp-av-\(getpid()).mp4").path
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                                "-t", "3", "-ac", "2", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-c:a", "aac", path])
        return path
    }()

    @Test("ffmpeg receives video and AAC from RTPSender (PORT and PORT+2, one SDP): the source's frames, its audio packets byte for byte, and the first sound beside the first picture as in the source (from the sender reports) within 2 ms")
    func ffmpegReceivesVideoAndAudio() async throws {
        let source = Self.audioVideoSource
        var options = MediaSource.Options()
        options.tracks = .all
        var samples: [SampleBuffer] = []
        let reader = try MediaSource(path: source, options: options)
        while let sample = try reader.next() { samples.append(sample) }
        let video = samples.filter { $0.mediaType == .video }, audio = samples.filter { $0.mediaType == .audio }
        try #require(!video.isEmpty && !audio.isEmpty)
        let port = try freeUDPPortPair(count: 2)
        let destination = RTPDestination(host: "127.0.0.1", port: port)
        let audioFormat = MPEG4GenericPayloadFormat(formatDescription: try #require(audio[0].audioFormatDescription))
        let sdp = destination.sessionDescription(video: H264PayloadFormat(formatDescription: try #require(video[0].videoFormatDescription)), audio: audioFormat)
        #expect(sdp.media.map(\.port) == [port, port + 2])
        let sdpPath = try Checkout.temporaryFile(Array(sdp.text.utf8), suffix: ".sdp")
        let recorded = sdpPath + ".framemd5"
        defer { for path in [sdpPath, recorded] { try? FileManager.default.removeItem(atPath: path) } }
        async let received = Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-buffer_size", "4194304", "-i", sdpPath,
                                                              "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-",
                                                              "-map", "0", "-c", "copy", "-f", "framemd5", recorded])
        try await Self.waitUntilBound(port)
        try await Self.waitUntilBound(port + 2)
        let drops = UDPDropWatch(port: port)
        let sender = try RTPSender(destination: destination, options: .init(goodbyeDelay: .seconds(3)))
        let summary = try await sender.send(MediaFileSamples(path: source, options: options))
        let result = try await received
        let dropped = drops.stop()
        #expect(result.status == 0, "ffmpeg ends on our BYE: \(result.stderrText)")
        #expect(summary.samples == video.count && summary.audio?.samples == audio.count && summary.samplesLeftOut == 0)
        let copied = try String(contentsOfFile: recorded, encoding: .utf8)
        let sourceVideo = try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"]).stdoutText
        let sourceAudio = try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText
        let sourceCopy = try run("ffmpeg", ["-v", "error", "-i", source, "-map", "0:v:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText
        try expectations(unless: dropped > 0 ? "the kernel dropped \(dropped) datagrams on ffmpeg's port \(port): ffmpeg did not read in time" : nil) {
            #expect(framemd5Hashes(result.stdoutText) == framemd5Hashes(sourceVideo))
            // The audio packets, byte for byte (the data's hash; a movie's first packet also
            // carries its priming as side data, which RTP does not).
            let received = Framemd5(copied).dataHashes(stream: 1), sent = Framemd5(sourceAudio).dataHashes(stream: 0)
            #expect(received == sent, "\(received.count) audio packets recorded of \(sent.count)")
            // Lip sync: the first audio packet against a picture, as in the source. (ffmpeg's RTP
            // demuxer leaves the first picture's presentation time unknown: the first picture
            // whose time it gives, by its place in decoding order.)
            let recordedVideo = Framemd5(copied).times(stream: 0), sourcePictures = Framemd5(sourceCopy).times(stream: 0)
            let picture = try #require(recordedVideo.firstIndex { $0 != nil })
            let offset = try #require(Framemd5(copied).firstTime(stream: 1)) - recordedVideo[picture]!
            let expected = try #require(Framemd5(sourceAudio).firstTime(stream: 0)) - (try #require(sourcePictures[picture]))
            #expect(abs(offset - expected) <= 0.002, "the first sound \(offset) s after picture \(picture); in the source \(expected) s")
        }
    }

    @Test("ffmpeg receives video and G.711 from RTPSender (PCMU on PORT+2, static payload type 0, one SDP): the samples byte for byte, the sound 0.5 s after the first picture as sent within 2 ms")
    func ffmpegReceivesVideoAndG711() async throws {
        let source = Self.audioVideoSource
        var video: [SampleBuffer] = []
        let reader = try MediaSource(path: source)
        while let sample = try reader.next() { video.append(sample) }
        try #require(!video.isEmpty)
        // 2 s of µ-law (FFmpeg's encoder, a 440 Hz sine at 8 kHz), in runs of 50 ms from 0.5 s on
        // (each sent as packets of 20, 20 and 10 ms).
        let law = [UInt8](try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000", "-t", "2", "-c:a", "pcm_mulaw", "-f", "mulaw", "-"]).stdout)
        try #require(law.count == 16_000)
        let format = AudioFormatDescription(codec: "ulaw", sampleRate: 8000, channelCount: 1, framesPerPacket: 1)
        let runs = stride(from: 0, to: law.count, by: 400).map { start in
            let time = MediaTime(value: 4000 + Int64(start), timescale: 8000)
            return SampleBuffer(data: BlockBuffer(Array(law[start..<min(law.count, start + 400)])), formatDescription: .audio(format),
                                timing: SampleTiming(presentationTime: time, decodeTime: time, duration: MediaTime(value: 400, timescale: 8000)),
                                attachments: SampleAttachments(isSync: true), trackID: TrackID(rawValue: 2))
        }
        let samples = (video + runs).enumerated().sorted { ($0.element.decodeTime.seconds, $0.offset) < ($1.element.decodeTime.seconds, $1.offset) }.map(\.element)
        let port = try freeUDPPortPair(count: 2)
        let destination = RTPDestination(host: "127.0.0.1", port: port)
        let sound = try #require(AudioPayloadFormat(sending: format))
        let sdp = destination.sessionDescription(video: H264PayloadFormat(formatDescription: try #require(video[0].videoFormatDescription)), sound: sound)
        #expect(sdp.media.map(\.port) == [port, port + 2] && sdp.text.contains("m=audio \(port + 2) RTP/AVP 0") && sdp.text.contains("a=rtpmap:0 PCMU/8000"))
        let sdpPath = try Checkout.temporaryFile(Array(sdp.text.utf8), suffix: ".sdp")
        let (timeline, received) = (sdpPath + ".framemd5", sdpPath + ".ulaw")
        defer { for path in [sdpPath, timeline, received] { try? FileManager.default.removeItem(atPath: path) } }
        async let result = Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-protocol_whitelist", "file,udp,rtp", "-buffer_size", "4194304", "-i", sdpPath,
                                                            "-map", "0:v:0", "-map", "0:a:0", "-c", "copy", "-f", "framemd5", timeline,
                                                            "-map", "0:a:0", "-c", "copy", "-f", "mulaw", received])
        try await Self.waitUntilBound(port)
        try await Self.waitUntilBound(port + 2)
        let drops = UDPDropWatch(port: port)
        let stream = AsyncStream<SampleBuffer> { continuation in
            for sample in samples { continuation.yield(sample) }
            continuation.finish()
        }
        let summary = try await RTPSender(destination: destination, options: .init(goodbyeDelay: .seconds(3))).send(stream)
        let status = try await result
        let dropped = drops.stop()
        #expect(status.status == 0, "ffmpeg ends on our BYE: \(status.stderrText)")
        #expect(summary.samples == video.count && summary.audio?.samples == runs.count && summary.audio?.packets == 3 * runs.count && summary.samplesLeftOut == 0, "\(summary)")
        try expectations(unless: dropped > 0 ? "the kernel dropped \(dropped) datagrams on ffmpeg's port \(port): ffmpeg did not read in time" : nil) {
            #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: received))) == law, "the µ-law samples byte for byte")
            let recorded = Framemd5(try String(contentsOfFile: timeline, encoding: .utf8))
            let pictures = recorded.times(stream: 0)
            let picture = try #require(pictures.firstIndex { $0 != nil })
            let offset = try #require(recorded.firstTime(stream: 1)) - pictures[picture]!
            // As sent: the sound at 0.5 s on the source's clock, the picture at its presentation time.
            let expected = 0.5 - video[picture].presentationTime.seconds
            #expect(abs(offset - expected) <= 0.002, "the first sound \(offset) s after picture \(picture); sent \(expected) s")
        }
    }

    /// What ffmpeg's framemd5 muxer wrote: each stream's time base and packets.
    struct Framemd5 {
        var timeBases: [Int: Double] = [:]
        var lines: [(stream: Int, pts: Int64?, hash: String)] = []

        init(_ text: String) {
            for line in text.split(separator: "\n") {
                if line.hasPrefix("#tb ") {
                    let parts = line.dropFirst(4).split(separator: ":")
                    let fraction = parts.last?.trimmingCharacters(in: .whitespaces).split(separator: "/").compactMap { Double($0) } ?? []
                    if let stream = parts.first.flatMap({ Int($0) }), fraction.count == 2 { timeBases[stream] = fraction[0] / fraction[1] }
                    continue
                }
                guard !line.hasPrefix("#") else { continue }
                let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                guard fields.count >= 6, let stream = Int(fields[0]) else { continue }
                let pts = Int64(fields[2]).flatMap { $0 == Int64.min ? nil : $0 }
                lines.append((stream, pts, fields[5]))
            }
        }

        /// The packet data's md5s of `stream` (side data, after it, left aside).
        func dataHashes(stream: Int) -> [String] { lines.filter { $0.stream == stream }.map(\.hash) }

        /// The presentation time of each packet of `stream` in order, in seconds (nil: unknown).
        func times(stream: Int) -> [Double?] {
            let base = timeBases[stream] ?? 0
            return lines.filter { $0.stream == stream }.map { $0.pts.map { Double($0) * base } }
        }

        /// The earliest presentation time of `stream`, in seconds.
        func firstTime(stream: Int) -> Double? {
            guard let base = timeBases[stream], let first = lines.filter({ $0.stream == stream }).compactMap(\.pts).min() else { return nil }
            return Double(first) * base
        }
    }

    @Test("with two AAC tracks the audio medium is the one asked for (the one the SDP announces), the other left out and counted; unpaced, every frame arrives")
    func theAudioMediumIsTheTrackAskedFor() async throws {
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-rtp-two-audio-\(getpid()).mp4").path
        defer { try? FileManager.default.removeItem(atPath: source) }
        _ = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                               "-f", "lavfi", "-i", "sine=frequency=660:sample_rate=44100", "-map", "0", "-map", "1", "-map", "2", "-t", "1",
                               "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", source])
        var options = MediaSource.Options()
        options.tracks = .all
        let tracks = try MediaSource(path: source, options: options).tracks.filter { $0.mediaType == .audio }
        try #require(tracks.count == 2)
        var frames: [TrackID: Int] = [:]
        let reader = try MediaSource(path: source, options: options)
        while let sample = try reader.next() { if sample.mediaType == .audio { frames[sample.trackID, default: 0] += 1 } }
        let socket = try LoopbackUDPSocket(port: 0, receiveTimeout: 1)
        // The audio goes to the socket's port: the destination is two below it.
        let destination = RTPDestination(host: "127.0.0.1", port: Int(socket.port) - 2)
        var senderOptions = RTPSender.Options(paced: false, goodbyeDelay: .zero)
        senderOptions.audioTrack = tracks[1].id
        let summary = try await RTPSender(destination: destination, options: senderOptions).send(MediaFileSamples(path: source, options: options))
        var depacketizer = AACDepacketizer(configuration: .init(format: MPEG4GenericPayloadFormat(formatDescription: try #require(tracks[1].format.audio))))
        var received = 0
        while let datagram = socket.receive() { received += datagram.withUnsafeBytes { depacketizer.receive(datagram: $0) }.count }
        received += depacketizer.finish().count
        #expect(summary.audio?.trackID == tracks[1].id.rawValue && summary.audio?.samples == frames[tracks[1].id])
        #expect(summary.samplesLeftOut == frames[tracks[0].id])
        #expect(received == frames[tracks[1].id], "\(received) frames received")
    }

    @Test("GStreamer (udpsrc ! rtpmp4gdepay) receives the AAC RTPSender sends beside the video: every frame the source's, byte for byte", .requires(.gstLaunch))
    func gstreamerReceivesTheAudio() async throws {
        let source = Self.audioVideoSource
        var options = MediaSource.Options()
        options.tracks = .all
        var frames: [UInt8] = []
        var config: [UInt8] = []
        let reader = try MediaSource(path: source, options: options)
        while let sample = try reader.next() {
            guard sample.mediaType == .audio else { continue }
            frames += sample.data.bytes
            config = sample.audioFormatDescription?.magicCookie ?? config
        }
        let port = try freeUDPPortPair(count: 2)
        let received = try Checkout.temporaryFile([], suffix: ".aac")
        defer { try? FileManager.default.removeItem(atPath: received) }
        let caps = "application/x-rtp,media=audio,clock-rate=48000,encoding-name=MPEG4-GENERIC,payload=97,mode=AAC-hbr,config="
            + config.map { String(format: "%02x", $0) }.joined() + ",sizelength=13,indexlength=3,indexdeltalength=3,streamtype=5"
        let gstreamer = try ChildProcess(try #require(which("gst-launch-1.0")), [
            "-q", "-e", "udpsrc", "address=127.0.0.1", "port=\(port + 2)", "caps=\(caps)", "!", "rtpjitterbuffer", "latency=1000", "!", "rtpmp4gdepay", "!",
            "filesink", "location=\(received)",
        ])
        try await Self.waitUntilBound(port + 2)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port))
        let summary = try await sender.send(MediaFileSamples(path: source, options: options))
        _ = await waitUntilFileHolds(received, bytes: frames.count, seconds: 30)
        try await Task.sleep(for: .milliseconds(1500))
        kill(gstreamer.pid, SIGINT)
        #expect(gstreamer.wait() == 0, "\(gstreamer.stderrText)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: received)))
        #expect((summary.audio?.samples ?? 0) > 100)
        #expect(bytes == frames, "\(bytes.count) bytes of AAC frames received, \(frames.count) sent")
    }

    @Test("GStreamer (udpsrc ! rtph264depay ! avdec_h264) receives what RTPSender sends: every decoded picture is the source's, byte for byte",
          .requires(.gstLaunch))
    func gstreamerDecodesWhatWeSend() async throws {
        let port = try freeUDPPortPair()
        let pictures = try Checkout.temporaryFile([], suffix: ".yuv")
        defer { try? FileManager.default.removeItem(atPath: pictures) }
        let caps = "application/x-rtp,media=video,clock-rate=90000,encoding-name=H264,payload=96"
        let gstreamer = try ChildProcess(try #require(which("gst-launch-1.0")), [
            // (A jitter buffer of a second: GStreamer starved by the suite beside it must not give
            // late packets up as lost.)
            "-q", "-e", "udpsrc", "address=127.0.0.1", "port=\(port)", "caps=\(caps)", "!", "rtpjitterbuffer", "latency=1000", "!", "rtph264depay", "!", "h264parse", "!",
            "avdec_h264", "!", "video/x-raw,format=I420", "!", "filesink", "location=\(pictures)",
        ])
        try await Self.waitUntilBound(port)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port))
        let summary = try await sender.send(MediaFileSamples(path: Self.source))
        // udpsrc never ends by itself: SIGINT with -e sends end-of-stream down the pipeline
        // (which lets out the pictures the decoder holds for reordering), once the rest are
        // written and the jitter buffer's latency (1 s) has passed.
        let pictureSize = 320 * 240 * 3 / 2
        _ = await waitUntilFileHolds(pictures, bytes: (summary.samples - 4) * pictureSize, seconds: 30)
        try await Task.sleep(for: .milliseconds(1500))
        kill(gstreamer.pid, SIGINT)
        #expect(gstreamer.wait() == 0, "\(gstreamer.stderrText)")
        let decoded = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pictures)))
        let source = try run("ffmpeg", ["-v", "error", "-i", Self.source, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout
        #expect(decoded.count == summary.samples * pictureSize, "\(decoded.count / pictureSize) pictures of \(summary.samples)")
        let difference = differingPictures(decoded, [UInt8](source), pictureSize: pictureSize)
        #expect(difference == nil, "\(difference ?? "")")
    }

    @Test("RTPReceiver records what ffmpeg sends (ffmpeg's own SDP, both packetization modes): the source's frames and times", arguments: [false, true])
    func weRecordWhatFFmpegSends(modeZero: Bool) async throws {
        // An MP4 of the stream, so that ffmpeg sends its presentation times (and its parameter
        // sets only in the SDP).
        let sent = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: sent) }
        let writer = try MovieWriter(path: sent)
        let reader = try SampleBufferReader(path: Self.source)
        while let sample = try reader.next() { try writer.append(sample) }
        _ = try writer.finish()
        let port = try freeUDPPortPair()
        let sdpPath = sent + ".sdp"
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        let output = (modeZero ? ["-rtpflags", "h264_mode0"] : []) + ["-f", "rtp", "-sdp_file", sdpPath, "rtp://127.0.0.1:\(port)?pkt_size=\(modeZero ? 60_000 : 1200)"]
        // ffmpeg writes its SDP as it starts: a first run of one frame (to the port nobody
        // listens on yet, on loopback) gives it.
        let dryRun = try run("timeout", ["20", "ffmpeg", "-v", "error", "-i", sent, "-frames:v", "1", "-c", "copy"] + output)
        try #require(dryRun.status == 0, "\(dryRun.stderrText)")
        let sdp = try SessionDescription(parsing: String(decoding: try Data(contentsOf: URL(fileURLWithPath: sdpPath)), as: UTF8.self))
        let receiver = try RTPReceiver(sessionDescription: sdp, options: .init(idleTimeout: .seconds(5)))
        #expect(receiver.endpoint.port == port && receiver.payloadFormat?.packetizationMode == (modeZero ? 0 : 1))
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        async let report = receiver.record(to: .init(path: movie))
        try await Self.waitUntilBound(port)
        let sender = try await Self.runInBackground("timeout", ["20", "ffmpeg", "-v", "error", "-re", "-i", sent, "-c", "copy"] + output)
        #expect(sender.status == 0, "\(sender.stderrText)")
        // ffmpeg's RTP muxer sends no BYE unless asked: the receiver ends when the packets stop.
        let received = try await report
        #expect(received.ending == .idleTimeout)
        #expect(received.samples == (try ffmpegFrameHashes(Self.source)).count, "\(received)")
        #expect(received.depacketizer.packetsLost == 0 && received.depacketizer.accessUnitsDropped == 0, "\(received.depacketizer)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        #expect(try ffprobePresentationTimes(movie) == ffprobePresentationTimes(sent))
    }

    @Test("sender to receiver, both ours, ended by the BYE: the source's frames, in-band parameter sets")
    func ourSenderToOurReceiver() async throws {
        let port = try freeUDPPortPair()
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port))
        async let report = receiver.record(to: .init(path: movie))
        try await Self.waitUntilBound(port)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port), options: .init(paced: false))
        let summary = try await sender.send(MediaFileSamples(path: Self.source))
        let received = try await report
        #expect(received.ending == .goodbye && received.samples == summary.samples, "\(received)")
        #expect(received.ssrc == summary.ssrc && received.controlPackets >= 2)
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
    }

    @Test("a handler slower than the sender: the packets waiting for it stay within maximumQueuedBytes (past it they are dropped and counted as lost, as a full socket drops them); receiving goes on and ends")
    func slowHandlerIsBoundedInBytes() async throws {
        let port = try freeUDPPortPair()
        // (The idle timeout is for a BYE lost with the dropped packets; CI saw a loaded machine
        // take 2 s between the receiver's start and the sender's, which a 2-s timeout ended.)
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: .init(idleTimeout: .seconds(10), maximumQueuedBytes: 32 << 10))
        async let report = receiver.receive { _ in Thread.sleep(forTimeInterval: 0.02) }
        try await Self.waitUntilBound(port)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port), options: .init(paced: false))
        let summary = try await sender.send(MediaFileSamples(path: Self.source))
        let received = try await report
        #expect(received.samples > 0 && received.samples < summary.samples && received.depacketizer.packetsLost > 0, "\(received)")
        #expect(received.ending == .goodbye || received.ending == .idleTimeout)
    }

    @Test("mode 0 with NAL units past 8 KiB (a 720p stream at high quality, one datagram each): every one arrives whole")
    func largeDatagramsArriveWhole() async throws {
        let stream = try Checkout.temporaryFile(try x264Stream(frames: 20, size: "1280x720", arguments: ["--qp", "12", "--keyint", "10"]), suffix: ".264")
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { for path in [stream, movie] { try? FileManager.default.removeItem(atPath: path) } }
        var largest = 0
        let reader = try SampleBufferReader(path: stream)
        while let sample = try reader.next() { largest = max(largest, try sample.nalUnits().map(\.count).max() ?? 0) }
        try #require(largest > 16 << 10, "the stream's largest NAL unit is \(largest) bytes")
        let port = try freeUDPPortPair()
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port))
        async let report = receiver.record(to: .init(path: movie))
        try await Self.waitUntilBound(port)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port),
                                   options: .init(packetizer: .init(packetizationMode: 0, maximumPacketSize: 65_507), rate: 5))
        _ = try await sender.send(MediaFileSamples(path: stream))
        let received = try await report
        #expect(received.samples == 20 && received.depacketizer.packetsInvalid == 0 && received.depacketizer.accessUnitsDropped == 0, "\(received)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(stream))
    }

    @Test("through a relay that loses 1%, swaps and duplicates packets: loss counted, every frame recorded is a source frame, the output decodes cleanly")
    func lossReorderingAndDuplicates() async throws {
        let relay = try LoopbackUDPSocket(receiveTimeout: 1)
        let port = try freeUDPPortPair()
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        // The receiver ends at the BYE the test sends once the relay is done (the relay passes
        // RTP only); the idle timeout is for a relay that never delivers.
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: .init(depacketizer: .init(reorderDepth: 8), idleTimeout: .seconds(20)))
        async let report = receiver.record(to: .init(path: movie))
        try await Self.waitUntilBound(port)
        // The relay: a fixed pseudo-random sequence drops one packet in 100, holds one in 20
        // back behind the next, and sends one in 25 twice.
        async let relayed = withCheckedThrowingContinuation { (continuation: CheckedContinuation<(dropped: Int, duplicated: Int), any Error>) in
            DispatchQueue.global().async {
                var state: UInt64 = 0x9E37_79B9_7F4A_7C15, dropped = 0, duplicated = 0
                var held: [UInt8]?
                func random() -> UInt64 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return state >> 33 }
                continuation.resume(with: Result {
                    // Up to 10 s for the first packet (the sender may start late on a loaded
                    // machine: CI saw the relay give up after 1 s), then 1 s of quiet ends it.
                    var quietSeconds = 0, started = false
                    while quietSeconds < (started ? 1 : 10) {
                        guard let datagram = relay.receive() else {
                            quietSeconds += 1
                            continue
                        }
                        quietSeconds = 0
                        started = true
                        let roll = random() % 100
                        if roll < 1 { dropped += 1; continue }
                        if roll < 6, held == nil { held = datagram; continue }
                        try relay.send(datagram, toPort: UInt16(port))
                        if roll < 10 { try relay.send(datagram, toPort: UInt16(port)); duplicated += 1 }
                        if let packet = held { try relay.send(packet, toPort: UInt16(port)); held = nil }
                    }
                    if let packet = held { try relay.send(packet, toPort: UInt16(port)) }
                    return (dropped, duplicated)
                })
            }
        }
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: Int(relay.port)),
                                   options: .init(paced: false))
        let summary = try await sender.send(MediaFileSamples(path: Self.source))
        let counts = try await relayed
        try relay.send(RTCPPacket.serialize([.goodbye(.init(sources: [summary.ssrc]))]), toPort: UInt16(port + 1))
        #expect(summary.samples == 90)
        let received = try await report
        let statistics = received.depacketizer
        #expect(counts.dropped > 0 && statistics.packetsLost > 0 && statistics.packetsLost <= counts.dropped, "\(counts) \(statistics)")
        #expect(statistics.packetsDuplicated == counts.duplicated && statistics.packetsReordered > 0)
        #expect(statistics.accessUnitsDropped > 0 && received.samples > 0 && received.samples < 90)
        let decoded = try run("ffmpeg", ["-v", "error", "-i", movie, "-f", "framemd5", "-"])
        #expect(decoded.status == 0 && decoded.stderrText.isEmpty, "\(decoded.stderrText)")
        // Each frame is one of the source's, in the source's order.
        let source = try ffmpegFrameHashes(Self.source)
        var position = source.startIndex
        for hash in framemd5Hashes(decoded.stdoutText) {
            let found = try #require(source[position...].firstIndex(of: hash), "a recorded frame that is not the source's next ones")
            position = found + 1
        }
    }

    @Test("case study 4: pictures through a compression session straight onto the network; the frames received are the frames encoded")
    func liveEncodedPicturesOverRTP() async throws {
        let port = try freeUDPPortPair()
        let received = try Checkout.temporaryFile([], suffix: ".mp4"), encoded = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { for path in [received, encoded] { try? FileManager.default.removeItem(atPath: path) } }
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port))
        async let report = receiver.record(to: .init(path: received))
        try await Self.waitUntilBound(port)

        let pattern = TestPattern(width: 320, height: 240)
        let rate = FrameRate(25, 1)
        var settings = EncoderSettings(width: 320, height: 240, frameRate: rate, preset: "veryfast")
        settings.maximumKeyframeInterval = 25
        let session = try CompressionSession(configuration: .init(settings: settings, isAsynchronous: true))
        let frames = try session.frames
        let encoder = Task(executorPreference: TimelyExecutor.shared) {
            for index in 0..<60 {
                try await session.encode(pattern.picture(index), presentationTime: MediaTime(value: Int64(index), timescale: 25))
            }
            await session.finish()
        }
        // Every encoded frame goes on the wire as it comes out, and into a movie for the oracle.
        let writer = try MovieWriter(path: encoded)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port), options: .init(rate: 10))
        let summary = try await sender.send(frames.map { frame in
            try writer.append(frame.sampleBuffer)
            return frame.sampleBuffer
        })
        try await encoder.value
        _ = try writer.finish()
        let result = try await report
        #expect(summary.samples == 60 && result.samples == 60 && result.ending == .goodbye, "\(result)")
        #expect(try ffmpegFrameHashes(received) == ffmpegFrameHashes(encoded))
        #expect(try ffprobePresentationTimes(received) == ffprobePresentationTimes(encoded))
    }

    @Test("a BYE read before the stream's last packets (they wait on the RTP socket) does not end the receiver: every packet the sender reported is taken")
    func goodbyeOvertakingTheLastPackets() async throws {
        let port = try freeUDPPortPair()
        // A long linger: the test's own sleeps may overshoot on a loaded machine (the default
        // second passed once in CI before the last frames were sent).
        var options = RTPReceiver.Options(idleTimeout: .seconds(20))
        options.session.goodbyeLinger = 15
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: options)
        async let report = receiver.receive { _ in }
        try await Self.waitUntilBound(port)
        var packetizer = try H264Packetizer(configuration: .init(ssrc: 0x1234))
        var frames: [[RTPPacket]] = []
        let source = try MediaSource(path: Self.source)
        while frames.count < 10, let sample = try source.next() { frames.append(try packetizer.packets(for: sample)) }
        let socket = try LoopbackUDPSocket()
        for packet in frames[..<5].joined() { try socket.send(packet.bytes, toPort: UInt16(port)) }
        try await Task.sleep(for: .milliseconds(100))
        // The BYE, with the sender report counting all ten frames' packets, before the last five.
        let bye = RTCPPacket.serialize([.senderReport(.init(ssrc: 0x1234, ntpTimestamp: 0, rtpTimestamp: 0,
                                                            packetCount: UInt32(frames.joined().count), octetCount: 0)),
                                        .goodbye(.init(sources: [0x1234]))])
        try socket.send(bye, toPort: UInt16(port + 1))
        try await Task.sleep(for: .milliseconds(400))
        for packet in frames[5...].joined() { try socket.send(packet.bytes, toPort: UInt16(port)) }
        let received = try await report
        #expect(received.ending == .goodbye && received.samples == 10, "\(received)")
    }

    /// RFC 3550 §6.4.1: a sender report's RTP timestamp is the RTP clock at the instant of its
    /// NTP timestamp. A receiver maps every packet's timestamp to the wall clock through it
    /// (lip sync across media): on a stream with B-frames (timestamps are presentation times,
    /// sent at their decode times), every report must tell the same linear clock, and no frame
    /// may map to a moment later than its reordering delay after it arrived. (Before: the last
    /// packet's timestamp against the moment of the report, moving by up to four frames from
    /// report to report.)
    @Test("sender reports pair the NTP time with the RTP clock at that instant: one linear clock across reports, each frame mapped to its moment (B-frames)")
    func senderReportsTellOneClock() async throws {
        let port = try freeUDPPortPair()
        let rtp = try LoopbackUDPSocket(port: UInt16(port), receiveTimeout: 3)
        let rtcp = try LoopbackUDPSocket(port: UInt16(port + 1), receiveTimeout: 3)
        // Each socket read on a thread of its own (a blocking read on the cooperative pool
        // would hold up the sender on two cores), stamped as it comes.
        @Sendable func collect(_ socket: LoopbackUDPSocket) async -> [(bytes: [UInt8], at: Double)] {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    var all: [(bytes: [UInt8], at: Double)] = []
                    while let bytes = socket.receive() {
                        all.append((bytes, Date().timeIntervalSince1970))
                        if all.count > 10_000 { break }
                    }
                    continuation.resume(returning: all)
                }
            }
        }
        async let packets = collect(rtp)
        async let reports = collect(rtcp)
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: port),
                                   options: .init(senderReportInterval: .milliseconds(100), sampleLimit: 60, goodbyeDelay: .milliseconds(100)))
        _ = try await sender.send(MediaFileSamples(path: Self.source))
        let (received, control) = await (packets, reports)
        let senderReports = control.flatMap { (try? RTCPPacket.parse(compound: $0.bytes)) ?? [] }.compactMap { packet -> RTCPPacket.SenderReport? in
            if case .senderReport(let report) = packet { return report }
            return nil
        }
        try #require(senderReports.count >= 10, "\(senderReports.count) sender reports")
        func seconds(_ ntp: UInt64) -> Double { Double(ntp >> 32) - 2_208_988_800 + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296 }
        // One clock: between any two reports, the RTP clock advanced by the wall time between them.
        let first = senderReports.first!
        var deviations: [Double] = []
        for report in senderReports.dropFirst() {
            let rtpSeconds = Double(Int32(bitPattern: report.rtpTimestamp &- first.rtpTimestamp)) / 90_000
            deviations.append(rtpSeconds - (seconds(report.ntpTimestamp) - seconds(first.ntpTimestamp)))
        }
        #expect(deviations.allSatisfy { abs($0) < 0.012 }, "RTP clock minus wall clock since the first report, ms: \(deviations.map { Int($0 * 1000) })")
        // Each frame mapped through the last report before it: never later than its arrival
        // plus its reordering delay (the source's largest presentation-minus-decode time), so
        // the reports' clock is not behind the decode times the frames went at. (Not bounded
        // below by arrival: a frame the loaded machine sent or read late maps before its
        // arrival by that lateness; seen in CI, up to 170 ms. The linear clock above is what
        // the old reports broke.)
        let source = try MediaSource(path: Self.source)
        var reordering = 0.0
        while let sample = try source.next() { reordering = max(reordering, (sample.presentationTime - sample.decodeTime).seconds) }
        var lags: [Double] = []
        for (bytes, arrived) in received {
            guard let packet = try? RTPPacket(parsing: bytes),
                  let report = senderReports.last(where: { seconds($0.ntpTimestamp) <= arrived }) ?? senderReports.first else { continue }
            let moment = seconds(report.ntpTimestamp) + Double(Int32(bitPattern: packet.timestamp &- report.rtpTimestamp)) / 90_000
            lags.append(moment - arrived)
        }
        try #require(!lags.isEmpty)
        #expect(lags.max()! < reordering + 0.015,
                "each frame's moment by the reports minus when it arrived, ms: \(Int(lags.min()! * 1000))...\(Int(lags.max()! * 1000)) (reordering \(Int(reordering * 1000)))")
    }

    @Test("a second receiver on a port in use fails with a clear error, and never takes the first one's packets")
    func aPortInUseIsRefused() async throws {
        let port = try freeUDPPortPair()
        let first = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: .init(idleTimeout: .seconds(20)))
        let receiving = Task(executorPreference: TimelyExecutor.shared) { try await first.receive { _ in } }
        defer { receiving.cancel() }
        try await Self.waitUntilBound(port)
        let second = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: .init(idleTimeout: .seconds(1)))
        await #expect { _ = try await second.receive { _ in } } throws: { error in
            guard case .socket(let what, _) = error as? StreamingError else { return false }
            return what.contains("\(port)")
        }
    }

    @Test("a receiver with nothing to receive ends at its idle timeout with a clear error for the empty output")
    func nothingArrives() async throws {
        let port = try freeUDPPortPair()
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: .init(idleTimeout: .milliseconds(300)))
        let report = try await receiver.receive { _ in Issue.record("no sample can arrive") }
        #expect(report.ending == .idleTimeout && report.samples == 0)
        #expect(throws: StreamingError.self) { _ = try RTPSender(destination: RTPDestination(host: "", port: port)) }
    }
}
