public import ArgumentParser
import H264Kit
import SystemIO

struct Receive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive",
        abstract: "Receive H.264 over RTP or RTSP into a movie, an MPEG-TS or an Annex-B stream.",
        discussion: """
            SOURCE is a session description (FILE.sdp, as ffmpeg's -sdp_file or `h264kit sdp` writes) or \
            rtp://@:PORT (listen on every address; parameter sets in band) or rtp://127.0.0.1:PORT. RTCP is \
            read on PORT+1. Receiving ends at the sender's RTCP BYE, after --frames samples, after --timeout \
            seconds without a packet, or at SIGINT/SIGTERM; in every case OUTPUT is finished and holds every \
            whole access unit received. Lost packets drop their access unit, an RTCP picture loss indication \
            asks the sender for an IDR picture, and decoding resumes at the next one.
            rtsp://[USER:PASS@]HOST:PORT/PATH plays a stream from an RTSP server (UDP, then TCP interleaved when \
            UDP fails; --rtsp-transport picks one). With --listen, serves PATH on HOST:PORT and records what a \
            publisher pushes to it (ffmpeg -f rtsp rtsp://HOST:PORT/PATH), until its TEARDOWN. rtsps:// plays \
            over TLS, the packets interleaved in the connection (--cacert FILE trusts a private certificate).
            """
    )

    @Argument(help: ArgumentHelp("A session description file, rtp://@:PORT, or rtsp://HOST:PORT/PATH (rtsps:// over TLS).", valueName: "SOURCE"))
    var source: String

    @Argument(help: "An .mp4/.mov movie, a .ts/.m2ts transport stream, or an Annex-B stream (- for standard output).")
    var output: String

    @Option(help: "Stop after this many seconds without a packet.")
    var timeout: Double = 5

    @Option(help: "Stop after N samples.")
    var frames: Int?

    @Option(help: ArgumentHelp("Write the reception counts as JSON to FILE.", valueName: "FILE"))
    var stats: String?

    @Option(help: "Packets held waiting for a missing one before it counts as lost.")
    var reorderDepth = 64

    @Flag(help: "rtsp:// and .sdp: record the picture alone (by default the first AAC or G.711 sound is recorded too, in lip sync; G.711 into .mov or .mp4).")
    var noAudio = false

    @Flag(help: "rtsp://: serve the path and record what a publisher pushes (ANNOUNCE/RECORD).")
    var listen = false

    @Option(help: "rtsp://: automatic (UDP, then TCP), udp or tcp.")
    var rtspTransport: RTSPClient.TransportPreference = .automatic

    @Option(help: ArgumentHelp("With --listen: publishers must give this user and password.", valueName: "USER:PASS"))
    var user: String?

    @OptionGroup var tls: TLSClientOptions

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout \(timeout): more than 0 seconds, at most a day") }
        if let frames, frames < 1 { throw ValidationError("--frames \(frames): at least 1") }
        guard (0...4096).contains(reorderDepth) else { throw ValidationError("--reorder-depth \(reorderDepth): 0-4096 packets") }
        let rtsp = source.lowercased().hasPrefix("rtsp://")
        if listen, !rtsp { throw ValidationError("--listen serves an rtsp:// path") }
        if tls.cacert != nil || tls.insecure, !source.lowercased().hasPrefix("rtsps://") { throw ValidationError("--cacert and --insecure are for an rtsps:// source") }
        if user != nil, !listen { throw ValidationError("--user is for --listen (a client gives credentials in the URL: rtsp://USER:PASS@HOST/PATH)") }
        if let user { _ = try RTSPCredentials(parsing: user) }
    }

    func run() async throws {
        let options = RTPReceiver.Options(depacketizer: .init(reorderDepth: reorderDepth), idleTimeout: .milliseconds(Int64(timeout * 1000)),
                                          sampleLimit: frames)
        // SIGINT and SIGTERM end receiving the way a BYE does: the output is finished.
        let output = SampleOutput(path: output)
        let live: LiveSource
        do {
            live = try LiveSource(parsing: source, options: options, transport: rtspTransport, listen: listen,
                                  credentials: try user.map(RTSPCredentials.init(parsing:)), audio: !noAudio, trust: tls.trust)
        } catch { throw ToolError("\(source): \(error)") }
        let task = Task { try await live.record(to: output) }
        let token = Interruption.shared.onInterrupt { task.cancel() }
        defer { Interruption.shared.remove(token) }
        let report: RTPReceiver.Report
        do { report = try await task.value } catch { throw ToolError("\(self.output): \(error)") }
        if let stats {
            try writeFile(stats, try jsonBytes(report))
        }
        let counts = report.depacketizer
        printError("\(self.output): \(report.samples) samples (\(report.ending.rawValue)); \(counts.packetsReceived) packets, \(counts.packetsLost) lost, "
                   + "\(counts.accessUnitsDropped) access units dropped, \(counts.accessUnitsSkipped) skipped to the next IDR")
        if let sound = report.sound {
            printError("\(self.output): sound: \(sound.samples) \(sound.format.hasPrefix("mp4a") ? "AAC frames" : "packets of samples") (\(sound.format)); \(sound.packetsReceived) packets, \(sound.packetsLost) lost, "
                       + "\(sound.framesDropped) frames dropped; placed by the \(sound.lipSync?.rawValue ?? "nothing")"
                       + (sound.offset.map { ", starting \(Int((abs($0) * 1000).rounded())) ms \($0 < 0 ? "before" : "after") the picture" } ?? ""))
        }
        for medium in report.mediaNotReceived {
            printError("\(self.output): warning: \(source): \(medium) not received (receive records the H.264 video"
                       + (noAudio ? "; --no-audio" : " and, from rtsp:// or a session description, the first AAC or G.711 sound") + ")")
        }
    }
}

/// `--rtsp-transport`.
extension RTSPClient.TransportPreference: ExpressibleByArgument {}
