import Dispatch
import Foundation
import H264Network
import ISOBMFF
import MediaCore
import Synchronization
import TestSupport
import Testing

/// AAC over RTP (RFC 3640) between H264Kit and ffmpeg over loopback UDP: what ffmpeg sends,
/// we rebuild into the source's AAC frames at their times; what we send, ffmpeg copies out as
/// the source's frames.
@Suite("AAC over RTP with ffmpeg as the peer", .requires(.ffmpeg), .serialized)
struct FFmpegAACRTPTests {
    /// 3 s of 48 kHz stereo AAC LC (and 44.1 kHz mono) by ffmpeg, made once.
    static let sources: [String] = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-aac-rtp-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return [("48k-stereo", "48000", "2"), ("44k-mono", "44100", "1")].map { name, rate, channels in
            let path = directory + "/\(name).m4a"
            _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate)", "-t", "3", "-ac", channels,
                                    "-c:a", "aac", "-b:a", "192k", path])
            return path
        }
    }()

    static func samples(_ path: String) throws -> [SampleBuffer] {
        let movie = try MovieReader(path: path)
        return Array(try movie.sampleBuffers(track: try #require(movie.firstAudioTrackIndex), editList: .shift))
    }

    /// ffmpeg's per-packet md5s of the audio copied out of `path`.
    static func copiedFrameHashes(_ arguments: [String]) throws -> [String] {
        packetDataHashes(try run("ffmpeg", ["-v", "error"] + arguments + ["-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]).stdoutText)
    }

    /// The packet data's md5 of each framemd5 line (its sixth field; side data, such as the
    /// priming a movie's first packet carries and RTP does not, follows it).
    static func packetDataHashes(_ text: String) -> [String] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return fields.count >= 6 ? fields[5] : nil
        }
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var source: Int
        var packetSize: Int
        var testDescription: String { "source \(source), \(packetSize)-byte packets" }
    }

    /// ffmpeg gathers frames into packets (up to its delay) and fragments those over the packet size.
    @Test(arguments: [Shape(source: 0, packetSize: 1472), Shape(source: 0, packetSize: 200), Shape(source: 1, packetSize: 1472)])
    func weRebuildWhatFFmpegSends(_ shape: Shape) throws {
        let source = Self.sources[shape.source]
        let samples = try Self.samples(source)
        let socket = try LoopbackUDPSocket(receiveTimeout: 1)
        let sdpPath = source + ".\(shape.packetSize).sdp"
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        let sender = try run("timeout", ["10", "ffmpeg", "-v", "error", "-re", "-i", source, "-c", "copy", "-f", "rtp", "-sdp_file", sdpPath,
                                         "rtp://127.0.0.1:\(socket.port)?pkt_size=\(shape.packetSize)"])
        #expect(sender.status == 0, "\(sender.stderrText)")
        let sdp = try SessionDescription(parsing: String(decoding: try Data(contentsOf: URL(fileURLWithPath: sdpPath)), as: UTF8.self))
        let format = try MPEG4GenericPayloadFormat(medium: try #require(sdp.media.first))
        let description = try format.formatDescription()
        #expect(description == samples[0].audioFormatDescription)
        var depacketizer = AACDepacketizer(configuration: .init(format: format))
        var frames: [AACDepacketizer.Frame] = []
        var packets = 0
        while let datagram = socket.receive() {
            packets += 1
            frames += datagram.withUnsafeBytes { depacketizer.receive(datagram: $0) }
        }
        frames += depacketizer.finish()
        let statistics = depacketizer.statistics
        #expect(statistics.packets.packetsLost == 0 && statistics.packetsInvalid == 0 && statistics.framesDropped == 0, "\(statistics)")
        // ffmpeg 5.1 does not send the frames still gathered when its input ends: a prefix of the
        // source comes (all but up to its packet's worth).
        #expect(frames.count <= samples.count && frames.count >= samples.count - 50, "\(frames.count) of \(samples.count) frames")
        #expect(frames.map(\.bytes) == samples.prefix(frames.count).map(\.data.bytes))
        let firstTime = samples[0].presentationTime.converted(toTimescale: Int32(format.clockRate)).value
        #expect(frames.map(\.extendedTimestamp) == samples.prefix(frames.count).map { $0.presentationTime.converted(toTimescale: Int32(format.clockRate)).value - firstTime })
        if shape.packetSize < 400 { #expect(packets > frames.count, "frames over \(shape.packetSize) bytes came in fragments") }
    }

    /// ffmpeg's `-rtpflags latm`: RFC 6416 MP4A-LATM, cpresent=0, its StreamMuxConfig in the SDP.
    @Test(arguments: [1472, 200])
    func weRebuildTheLATMFFmpegSends(packetSize: Int) throws {
        let source = Self.sources[0]
        let samples = try Self.samples(source)
        let socket = try LoopbackUDPSocket(receiveTimeout: 1)
        let sdpPath = source + ".latm.\(packetSize).sdp"
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        let sender = try run("timeout", ["10", "ffmpeg", "-v", "error", "-re", "-i", source, "-c", "copy", "-rtpflags", "latm", "-f", "rtp", "-sdp_file", sdpPath,
                                         "rtp://127.0.0.1:\(socket.port)?pkt_size=\(packetSize)"])
        #expect(sender.status == 0, "\(sender.stderrText)")
        let sdp = try SessionDescription(parsing: String(decoding: try Data(contentsOf: URL(fileURLWithPath: sdpPath)), as: UTF8.self))
        let format = try MP4ALATMPayloadFormat(medium: try #require(sdp.media.first))
        #expect(!format.muxConfigPresent)
        var depacketizer = LATMDepacketizer(configuration: .init(format: format))
        #expect(depacketizer.formatDescription?.sampleRate == 48_000 && depacketizer.formatDescription?.channelCount == 2)
        var frames: [AACDepacketizer.Frame] = []
        var packets = 0
        while let datagram = socket.receive() {
            packets += 1
            frames += datagram.withUnsafeBytes { depacketizer.receive(datagram: $0) }
        }
        frames += depacketizer.finish()
        let statistics = depacketizer.statistics
        #expect(statistics.packets.packetsLost == 0 && statistics.elementsInvalid == 0 && statistics.gatheringsDropped == 0, "\(statistics)")
        // ffmpeg sends LATM one frame an element, each sent at once: every frame comes.
        #expect(frames.map(\.bytes) == samples.map(\.data.bytes))
        #expect(frames.map(\.extendedTimestamp) == samples.indices.map { Int64(1024 * $0) })
        if packetSize < 400 { #expect(packets > frames.count, "elements over \(packetSize) bytes came in several packets") }
    }

    struct Sending: Sendable, CustomTestStringConvertible {
        var source: Int
        var packetSize: Int
        var framesPerPacket: Int
        var testDescription: String { "source \(source), \(packetSize)-byte packets, up to \(framesPerPacket) frame(s) each" }
    }

    @Test(arguments: [Sending(source: 0, packetSize: 1200, framesPerPacket: 1), Sending(source: 0, packetSize: 300, framesPerPacket: 1),
                      Sending(source: 1, packetSize: 1400, framesPerPacket: 5)])
    func ffmpegCopiesOutWhatWeSend(_ shape: Sending) throws {
        let source = Self.sources[shape.source]
        let samples = try Self.samples(source)
        let description = try #require(samples[0].audioFormatDescription)
        let port = UInt16(try freeUDPPortPair())
        var packetizer = try AACPacketizer(configuration: .init(maximumPacketSize: shape.packetSize, maximumFramesPerPacket: shape.framesPerPacket),
                                           clockRate: description.sampleRate)
        let format = MPEG4GenericPayloadFormat(formatDescription: description)
        let sdp = SessionDescription(connection: "IN IP4 127.0.0.1", media: [format.medium(port: Int(port))])
        let sdpPath = try Checkout.temporaryFile(Array(sdp.text.utf8), suffix: ".sdp")
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        let result = try ffmpegReceiving(sdpPath: sdpPath, port: port, output: ["-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"]) { socket in
            var sent = 0
            for sample in samples {
                for packet in try packetizer.packets(for: sample) { try socket.send(packet.bytes, toPort: port); sent += 1 }
                if sent % 8 == 0 { usleep(2_000) }
            }
            for packet in packetizer.flush() { try socket.send(packet.bytes, toPort: port) }
            return (packetizer.configuration.ssrc, packetizer.packetCount, packetizer.octetCount)
        }
        #expect(result.status == 0, "ffmpeg ends on our BYE: \(result.stderrText)")
        let expected = try Self.copiedFrameHashes(["-i", source])
        #expect(expected.count == samples.count)
        #expect(Self.packetDataHashes(result.stdoutText) == expected)
    }
}
