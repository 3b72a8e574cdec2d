import Dispatch
import Foundation
import ISOBMFF
import MPEGTS
import H264Network
import H264Session
import H264Streaming
import MediaCore
import TestSupport
import SampleFlow
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// RTSP over loopback with real peers: ffmpeg and GStreamer play what ``RTSPServer`` serves (UDP
/// and TCP interleaved) to the source's frames; ``RTSPClient`` plays a GStreamer RTSP server and
/// ours; ``RTSPIngest`` records what ffmpeg publishes; and the server under hostile and heavy use.
@Suite("RTSP: server, client and ingest", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct RTSPTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    /// A server of `media` at /live on a free port, running until the returned task is cancelled.
    static func startServer(_ media: RTSPServer.Media, options: RTSPServer.Options = .init()) async throws -> (RTSPServer, Task<Void, any Error>, Int) {
        var options = options
        // Any free port, as the server binds it (a port chosen before and bound after can be
        // taken in between by another suite's client: CI saw it).
        options.port = 0
        let server = try RTSPServer(options: options)
        try server.serve(media, at: "/live")
        let bound = BoundPort()
        let task = Task(executorPreference: TimelyExecutor.shared) { try await server.run(onListening: { bound.set($0) }) }
        let port = try #require(await bound.value(within: 60), "the server never listened")
        return (server, task, port)
    }

    /// The source as an MP4 (so that peers that publish send its presentation times).
    static func sourceMovie() throws -> String {
        let path = try Checkout.temporaryFile([], suffix: ".mp4")
        let writer = try MovieWriter(path: path)
        let reader = try SampleBufferReader(path: source)
        while let sample = try reader.next() { try writer.append(sample) }
        _ = try writer.finish()
        return path
    }

    static func runInBackground(_ program: String, _ arguments: [String]) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try run(program, arguments) }) }
        }
    }

    @Test("ffmpeg plays what RTSPServer serves (a file, each client from its start) and decodes the source's frames; the BYE ends it",
          arguments: ["udp", "tcp"])
    func ffmpegPlays(transport: String) async throws {
        let (server, task, port) = try await Self.startServer(.file(path: Self.source))
        defer { task.cancel() }
        let result = try await Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-rtsp_transport", transport, "-i", "rtsp://127.0.0.1:\(port)/live",
                                                                "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"])
        #expect(result.status == 0, "ffmpeg ends on our BYE: \(result.stderrText)")
        #expect(framemd5Hashes(result.stdoutText) == (try ffmpegFrameHashes(Self.source)))
        let statistics = server.statistics
        #expect(statistics.sessionsPlayed == 1 && statistics.errorsAnswered == 0, "\(statistics)")
    }

    @Test("GStreamer (rtspsrc ! rtph264depay ! avdec_h264) plays what RTSPServer serves: every picture is the source's", .requires(.gstLaunch),
          arguments: ["udp", "tcp"])
    func gstreamerPlays(transport: String) async throws {
        let (server, task, port) = try await Self.startServer(.file(path: Self.source))
        defer { task.cancel() }
        let pictures = try Checkout.temporaryFile([], suffix: ".yuv")
        defer { try? FileManager.default.removeItem(atPath: pictures) }
        // rtspsrc's own log (its requests and what ended them), said if GStreamer fails.
        let gstreamerLog = try Checkout.temporaryFile([], suffix: ".log")
        defer { try? FileManager.default.removeItem(atPath: gstreamerLog) }
        let gstreamer = try ChildProcess(try #require(which("gst-launch-1.0")), [
            "-q", "-e", "rtspsrc", "location=rtsp://127.0.0.1:\(port)/live", "protocols=\(transport)", "latency=1000", "!", "rtph264depay", "!", "h264parse", "!",
            "avdec_h264", "!", "video/x-raw,format=I420", "!", "filesink", "location=\(pictures)",
        ], environment: ["GST_DEBUG": "rtspsrc:5", "GST_DEBUG_NO_COLOR": "1", "GST_DEBUG_FILE": gstreamerLog])
        // The stream lasts 3.6 s, and GStreamer's start (its first builds a plugin registry)
        // can take seconds more under load. rtspsrc ends with end-of-stream on SIGINT (-e),
        // which also lets out the pictures the decoder holds for reordering: sent once the server
        // has sent everything (its count stands still for a second), the rest is written, and
        // the jitter buffer's latency has passed (a second: GStreamer starved by the suite beside
        // it must not give late packets up as lost).
        let source = [UInt8](try run("ffmpeg", ["-v", "error", "-i", Self.source, "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]).stdout)
        let pictureSize = 320 * 240 * 3 / 2
        var sent = 0
        for _ in 0..<60 {
            try await Task.sleep(for: .seconds(1))
            let now = server.statistics.packetsSent
            if now > 0, now == sent { break }
            sent = now
        }
        _ = await waitUntilFileHolds(pictures, bytes: source.count - 4 * pictureSize, seconds: 30)
        try await Task.sleep(for: .milliseconds(1500))
        let beforeEnd = server.statistics
        kill(gstreamer.pid, SIGINT)
        let status = gstreamer.wait()
        // What each side did, said with any failure: the server's counts (its connections and
        // sessions) as GStreamer was told to end, and rtspsrc's requests, responses and errors.
        func told() -> String {
            let lines = (try? String(contentsOfFile: gstreamerLog, encoding: .utf8))?.split(separator: "\n") ?? []
            let rtspsrc = lines.suffix(100).map { $0.prefix(240) }.joined(separator: "\n")
            return "server before the end: \(beforeEnd)\nserver after: \(server.statistics)\nrtspsrc's log:\n\(rtspsrc)"
        }
        if status != 0 {
            // rtspsrc's own race: at the BYE it ends the stream, gst-launch takes the pipeline
            // down, and rtspsrc's CLOSE flushes the connection while its PAUSE is in flight, which
            // then fails as "end-of-file" (the PAUSE never reaches the server; its TEARDOWN
            // does). Seen once in CI with every picture right. Said as a known issue, and only
            // when its log shows exactly that.
            let log = (try? String(contentsOfFile: gstreamerLog, encoding: .utf8)) ?? ""
            let ownRace = log.contains("connection flush busy PAUSE") && gstreamer.stderrText.contains("gst_rtspsrc_pause")
                && server.statistics.errorsAnswered == 0
            if ownRace {
                withKnownIssue("rtspsrc's CLOSE raced its own PAUSE") { Issue.record("GStreamer exit \(status): \(gstreamer.stderrText)") }
            } else {
                Issue.record("GStreamer exit \(status): \(gstreamer.stderrText)\n\(told())")
            }
        }
        let decoded = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pictures)))
        let difference = differingPictures(decoded, source, pictureSize: pictureSize)
        #expect(difference == nil, "\(difference ?? "")\n\(difference == nil ? "" : told())")
    }

    @Test("RTSPClient plays our server over UDP, TCP, and UDP refused (461) then TCP: the source's frames and times", arguments: RTSPClient.TransportPreference.allCases)
    func ourClientPlaysOurServer(preference: RTSPClient.TransportPreference) async throws {
        var options = RTSPServer.Options()
        if preference == .automatic { options.transports = [.tcp] }  // UDP refused: the client must fall back
        let (server, task, port) = try await Self.startServer(.file(path: Self.source), options: options)
        defer { task.cancel() }
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(transport: preference))
        let report = try await client.record(to: .init(path: movie))
        #expect(report.ending == .goodbye && report.samples == 90, "\(report)")
        #expect(report.depacketizer.packetsLost == 0 && report.receiverReports > 0, "\(report)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        let movieSource = try Self.sourceMovie()
        defer { try? FileManager.default.removeItem(atPath: movieSource) }
        #expect(try ffprobePresentationTimes(movie) == ffprobePresentationTimes(movieSource))
        #expect(server.statistics.errorsAnswered == (preference == .automatic ? 1 : 0), "\(server.statistics)")
    }

    @Test("RTSPClient over TCP with room for one packet at a time (maximumQueuedBytes 1): the reader waits for each to be taken, nothing is lost, every frame arrives")
    func tcpReaderWaitsForRoom() async throws {
        let (_, task, port) = try await Self.startServer(.file(path: Self.source), options: RTSPServer.Options())
        defer { task.cancel() }
        var receiver = RTPReceiver.Options()
        receiver.maximumQueuedBytes = 1
        let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(receiver: receiver, transport: .tcp))
        let report = try await client.receive { _ in }
        #expect(report.ending == .goodbye && report.samples == 90 && report.depacketizer.packetsLost == 0, "\(report)")
    }

    /// A 600-frame 720p file with an IDR picture every 60 (made once).
    static let longSource: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-rtsp-600-\(getpid()).264").path
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-frames:v", "600", "-c:v", "libx264",
                                "-preset", "ultrafast", "-g", "60", "-bf", "2", "-f", "h264", path])
        return path
    }()

    @Test("unpaced (paced: false) over TCP: a file goes at its client's pace and nothing is dropped: 600 of 600, three runs in a row")
    func unpacedOverTCPLosesNothing() async throws {
        let (server, task, port) = try await Self.startServer(.file(path: Self.longSource), options: .init(paced: false))
        defer { task.cancel() }
        let expected = try ffmpegFrameHashes(Self.longSource)
        #expect(expected.count == 600)
        for run in 1...3 {
            let movie = try Checkout.temporaryFile([], suffix: ".mp4")
            defer { try? FileManager.default.removeItem(atPath: movie) }
            let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(transport: .tcp))
            let report = try await client.record(to: .init(path: movie))
            #expect(report.samples == 600 && report.depacketizer.packetsLost == 0, "run \(run): \(report)")
            #expect(try ffmpegFrameHashes(movie) == expected, "run \(run)")
        }
        #expect(server.statistics.accessUnitsDroppedBehind == 0 && server.statistics.clientsFellBehind == 0, "\(server.statistics)")
    }

    @Test("unpaced over TCP to a reader slower than the file: it still gets every frame (the server waits for its socket)")
    func unpacedToASlowReaderLosesNothing() async throws {
        let (server, task, port) = try await Self.startServer(.file(path: Self.longSource), options: .init(paced: false, clientQueueLimit: 64 << 10))
        defer { task.cancel() }
        var receiver = RTPReceiver.Options()
        receiver.maximumQueuedBytes = 256 << 10
        let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(receiver: receiver, transport: .tcp))
        var count = 0
        let report = try await client.receive { _ in
            count += 1
            usleep(5_000)  // 200 frames a second: slower than the server can send
        }
        #expect(report.samples == 600 && count == 600 && report.depacketizer.packetsLost == 0, "\(report)")
        #expect(server.statistics.accessUnitsDroppedBehind == 0, "\(server.statistics)")
    }

    /// This process's UDP sockets: inode → (local address, port), from /proc.
    static func ownUDPSockets() -> [String: (address: String, port: Int)] {
        let inodes = Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { fd -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd), target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst(8).dropLast())
        })
        let table = String(decoding: (try? readFile("/proc/net/udp")) ?? Data(), as: UTF8.self)
        var sockets: [String: (String, Int)] = [:]
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, inodes.contains(String(fields[9])) else { continue }
            let local = fields[1].split(separator: ":")
            guard local.count == 2, let hex = UInt32(local[0], radix: 16), let port = Int(local[1], radix: 16) else { continue }
            let address = "\(hex & 0xFF).\(hex >> 8 & 0xFF).\(hex >> 16 & 0xFF).\(hex >> 24)"
            sockets[String(fields[9])] = (address, port)
        }
        return sockets
    }

    @Test("RTSPClient binds its UDP ports to the connection's local address (loopback for a server on loopback), not every address; an option chooses")
    func udpPortsOnTheConnectionsAddress() async throws {
        let (_, task, port) = try await Self.startServer(.file(path: Self.source))
        defer { task.cancel() }
        for (bind, expected) in [(nil, "127.0.0.1"), ("0.0.0.0", "0.0.0.0")] as [(String?, String)] {
            // The sockets new in this process while the client plays are its pair, and whatever
            // a test of another suite opened meanwhile (seen in a full run: a loopback pair
            // beside this client's 0.0.0.0 one): one of three tries must show its pair alone.
            var tries: [[(address: String, port: Int)]] = []
            for _ in 0..<3 {
                let before = Set(Self.ownUDPSockets().keys)
                let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"),
                                        options: .init(receiver: .init(sampleLimit: 5), transport: .udp, udpBindAddress: bind))
                var seen: [(address: String, port: Int)] = []
                _ = try await client.receive { _ in
                    if seen.isEmpty { seen = Self.ownUDPSockets().filter { !before.contains($0.key) }.map(\.value) }
                }
                // The client's pair: an even port and the next, both new.
                let pair = seen.filter { socket in socket.port % 2 == 0 && seen.contains { $0.port == socket.port + 1 && $0.address == socket.address } }
                tries.append(pair)
                if !pair.isEmpty && pair.allSatisfy({ $0.address == expected }) { break }
            }
            #expect(tries.contains { !$0.isEmpty && $0.allSatisfy { $0.address == expected } }, "bound to \(tries), expected \(expected)")
        }
    }

    @Test("credentials: Digest and Basic accepted, none or wrong ones refused with 401; ffmpeg authenticates with Digest")
    func authentication() async throws {
        let (server, task, port) = try await Self.startServer(.file(path: Self.source), options: .init(credentials: .init(user: "alice", password: "s3cret")))
        defer { task.cancel() }
        let wrong = RTSPClient(url: try RTSPURL(parsing: "rtsp://alice:wrong@127.0.0.1:\(port)/live"), options: .init(transport: .tcp))
        await #expect(throws: StreamingError.self) { _ = try await wrong.receive { _ in } }
        let none = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(transport: .tcp))
        await #expect(throws: StreamingError.self) { _ = try await none.receive { _ in } }
        let right = RTSPClient(url: try RTSPURL(parsing: "rtsp://alice:s3cret@127.0.0.1:\(port)/live"), options: .init(receiver: .init(sampleLimit: 10), transport: .tcp))
        #expect(try await right.receive { _ in }.samples == 10)
        let result = try await Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", "rtsp://alice:s3cret@127.0.0.1:\(port)/live",
                                                                "-frames:v", "10", "-f", "framemd5", "-"])
        #expect(result.status == 0 && framemd5Hashes(result.stdoutText).count == 10, "\(result.stderrText)")
        #expect(server.statistics.errorsAnswered >= 4, "\(server.statistics)")
    }

    /// The session timeout is shorter than the stream: a publisher that sends no request while
    /// it records (ffmpeg) is kept alive by its packets (the ingest cut ffmpeg off after 60 s).
    @Test("RTSPIngest records what ffmpeg publishes (ANNOUNCE/RECORD, UDP and TCP): the source's frames and times, past the session timeout", arguments: ["udp", "tcp"])
    func ingestFromFFmpeg(transport: String) async throws {
        let sent = try Self.sourceMovie()
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { for path in [sent, movie] { try? FileManager.default.removeItem(atPath: path) } }
        let port = try freeTCPPort()
        var ingest = RTSPIngest(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(idleTimeout: .seconds(5)))
        ingest.serverOptions.sessionTimeout = 1  // (the source lasts 3.6 s)
        async let report = ingest.record(to: .init(path: movie))
        try #require(await waitUntilListening(port, seconds: 60))
        let publisher = try await Self.runInBackground("timeout", ["30", "ffmpeg", "-v", "error", "-re", "-i", sent, "-c", "copy", "-f", "rtsp",
                                                                   "-rtsp_transport", transport, "rtsp://127.0.0.1:\(port)/live"])
        #expect(publisher.status == 0, "\(publisher.stderrText)")
        let received = try await report
        #expect(received.ending == .teardown && received.samples == 90, "\(received)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        #expect(try ffprobePresentationTimes(movie) == ffprobePresentationTimes(sent))
    }

    /// A Python that has GStreamer's RTSP server through GObject introspection (Debian's
    /// python3 with python3-gi and gir1.2-gst-rtsp-server-1.0; a pyenv Python has no `gi`).
    static let gstreamerPython: String? = ["/usr/bin/python3", which("python3")?.path].compactMap { $0 }.first { python in
        (try? run(python, ["-c", "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer"]))?.status == 0
    }

    /// How long a recording from GStreamer's RTSP server waits without a packet before it ends
    /// (that server sends no BYE at the end of its file). Not 2 s: in CI of 8c6565c, with
    /// several such servers and Chromium's real-time suites on two cores, a recording ended
    /// before its sound began (a server starved that long is the likely cause; not reproduced
    /// alone or under `yes` load).
    static let gstreamerQuiet = Duration.seconds(5)

    /// GStreamer's RTSP server (gst-rtsp-server, from Python) serving `launch` at
    /// rtsp://127.0.0.1:PORT/live for at most 300 s (the test ends it sooner).

    static func gstreamerServer(python: String, port: Int, launch: String) throws -> ChildProcess {
        let script = """
            import sys, gi
            gi.require_version('Gst', '1.0'); gi.require_version('GstRtspServer', '1.0')
            from gi.repository import Gst, GstRtspServer, GLib
            Gst.init(None)
            server = GstRtspServer.RTSPServer(); server.set_address('127.0.0.1'); server.set_service(sys.argv[1])
            factory = GstRtspServer.RTSPMediaFactory()
            factory.set_launch(sys.argv[2])
            server.get_mount_points().add_factory('/live', factory)
            server.attach(None)
            GLib.timeout_add_seconds(300, lambda: sys.exit(0))
            GLib.MainLoop().run()
            """
        return try ChildProcess(URL(fileURLWithPath: python), ["-c", script, String(port), launch])
    }

    @Test("RTSPClient plays a GStreamer RTSP server (gst-rtsp-server, from Python): the source's frames and times",
          .enabled(if: gstreamerPython != nil, "needs python3-gi and gir1.2-gst-rtsp-server-1.0 (a python3 that imports GstRtspServer)"))
    func ourClientPlaysGStreamer() async throws {
        let python = try #require(Self.gstreamerPython)
        let sent = try Self.sourceMovie()
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { for path in [sent, movie] { try? FileManager.default.removeItem(atPath: path) } }
        let port = try freeTCPPort()
        let gstreamer = try Self.gstreamerServer(python: python, port: port,
                                                 launch: "( filesrc location=\(sent) ! qtdemux ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=-1 )")
        defer { kill(gstreamer.pid, SIGTERM) }
        try #require(await waitUntilListening(port, seconds: 60), "gst-rtsp-server never listened: \(gstreamer.stderrText)")
        let client = RTSPClient(url: try RTSPURL(parsing: "rtsp://127.0.0.1:\(port)/live"), options: .init(receiver: .init(idleTimeout: Self.gstreamerQuiet)))
        let report = try await client.record(to: .init(path: movie))
        #expect(report.samples == 90, "\(report)")
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        #expect(try ffprobePresentationTimes(movie) == ffprobePresentationTimes(sent))
    }
}
