import ArgumentParser
import H264Kit

struct Stream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Send INPUT as RTP over UDP (RFC 6184), RTCP on the next port, paced by its timestamps.",
        discussion: """
            Packets leave in decode order as each sample's decode time comes (as ffmpeg -re does); RTCP \
            sender reports go to PORT+1 and a BYE ends the stream, which ends ffmpeg's and GStreamer's \
            receivers. --sdp writes what `h264kit sdp` prints, for the receiver \
            (ffmpeg -protocol_whitelist file,udp,rtp -i FILE.sdp). RTSP serving is not built yet.
            """
    )

    @Argument(help: "An Annex-B stream (or - for standard input), MP4 or MOV.")
    var input: String

    @Argument(help: ArgumentHelp("Where the RTP goes.", valueName: "rtp://HOST:PORT"))
    var destination: String

    @Option(help: ArgumentHelp("Write the session description to FILE first.", valueName: "FILE"))
    var sdp: String?

    @Option(help: "The largest RTP packet in bytes, header included (the path MTU less IP and UDP headers).")
    var mtu = 1200

    @Option(help: "Packetization mode: 0 (single NAL unit) or 1 (STAP-A and FU-A).")
    var packetizationMode = 1

    @Option(help: "The RTP payload type (dynamic: 96-127).")
    var payloadType: UInt8 = 96

    @Flag(help: "Send as fast as the socket takes packets instead of at the stream's pace.")
    var noPace = false

    @Option(help: "Pace at this many times real time (ffmpeg's -readrate).")
    var rate: Double = 1

    @Flag(help: "Start again at the first sample after the last, times rising, until interrupted.")
    var loop = false

    @Option(help: "Stop after N samples.")
    var frames: Int?

    @Flag(name: .shortAndLong, help: "Print what was sent at the end.")
    var verbose = false

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        guard (0...1).contains(packetizationMode) else { throw ValidationError("--packetization-mode \(packetizationMode): 0 or 1") }
        guard (96...127).contains(payloadType) else { throw ValidationError("--payload-type \(payloadType): a dynamic type, 96-127") }
        guard (H264Packetizer.smallestPacketSize...H264Packetizer.largestPacketSize).contains(mtu) else {
            throw ValidationError("--mtu \(mtu): \(H264Packetizer.smallestPacketSize)-\(H264Packetizer.largestPacketSize) bytes")
        }
        if sdp != nil, input == "-" { throw ValidationError("--sdp reads the input's first sample before sending: give a file, not standard input") }
        guard rate > 0, rate <= 1000 else { throw ValidationError("--rate \(rate): more than 0, at most 1000") }
        if let frames, frames < 1 { throw ValidationError("--frames \(frames): at least 1") }
    }

    func run() async throws {
        var options = MediaSource.Options()
        options.movieLimits = limits.movie
        let summary: RTPSender.Summary
        do {
            let target = try RTPDestination(parsing: destination)
            let packetizer = H264Packetizer.Configuration(packetizationMode: packetizationMode, maximumPacketSize: mtu, payloadType: payloadType)
            let sender = try RTPSender(destination: target, options: .init(packetizer: packetizer, paced: !noPace, rate: rate, sampleLimit: frames))
            if let sdp {
                let source = try MediaSource(path: input, options: options)
                guard let first = try source.next() else { throw ToolError("\(input): no samples") }
                let format = H264PayloadFormat(formatDescription: first.formatDescription, payloadType: payloadType, packetizationMode: packetizationMode)
                try writeFile(sdp, Array(target.sessionDescription(for: format).text.utf8))
            }
            // SIGINT and SIGTERM stop the stream the way its end does: with an RTCP BYE.
            let samples = MediaFileSamples(path: input, options: options, loops: loop)
            let task = Task { try await sender.send(samples) }
            let stop = InterruptionSignals { task.cancel() }
            defer { stop.restore() }
            summary = try await task.value
        } catch let error as ToolError { throw error } catch { throw ToolError("\(error)") }
        if verbose {
            printError("\(summary.samples) samples, \(summary.packets) RTP packets, \(summary.octets) payload bytes, \(summary.controlPackets) RTCP packets, SSRC \(summary.ssrc)")
        }
    }
}
