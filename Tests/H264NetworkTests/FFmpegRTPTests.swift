import Dispatch
import Foundation
import ISOBMFF
import MPEGTS
import H264Network
import MediaCore
import Synchronization
import TestSupport
import SampleFlow
import Testing

/// RTP between H264Kit and ffmpeg over loopback UDP: what we send, ffmpeg decodes to the
/// source's frame hashes; what ffmpeg sends, we rebuild into the source's access units.
@Suite("RTP with ffmpeg as the peer", .requires(.ffmpeg), .serialized, .timely)
struct FFmpegRTPTests {
    static let source = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    struct Shape: Sendable, CustomTestStringConvertible {
        var mode: Int
        var packetSize: Int
        var testDescription: String { "mode \(mode), \(packetSize)-byte packets" }
    }

    @Test(arguments: [Shape(mode: 1, packetSize: 1200), Shape(mode: 1, packetSize: 500), Shape(mode: 0, packetSize: 65_507)])
    func ffmpegDecodesWhatWeSendToTheSourceFrames(_ shape: Shape) throws {
        let reader = try SampleBufferReader(path: Self.source)
        var samples: [SampleBuffer] = []
        while let sample = try reader.next() { samples.append(sample) }
        let port = UInt16(try freeUDPPortPair())
        var packetizer = try H264Packetizer(configuration: .init(packetizationMode: shape.mode, maximumPacketSize: shape.packetSize))
        let format = H264PayloadFormat(formatDescription: samples[0].videoFormatDescription!, packetizationMode: shape.mode)
        let sdp = SessionDescription(connection: "IN IP4 127.0.0.1", media: [format.medium(port: Int(port))])
        let sdpPath = try Checkout.temporaryFile(Array(sdp.text.utf8), suffix: ".sdp")
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }

        // ffmpeg listens (bounded by `timeout`); we send once its socket is bound. Every decoded
        // frame is kept (-fps_mode passthrough): with its default VFR sync, ffmpeg drops the two
        // B-frames after the first IDR of any RTP source (its own sender's too), because its
        // decoder learns the reordering delay only from those first frames.
        let result = try ffmpegReceiving(sdpPath: sdpPath, port: port, output: ["-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"]) { socket in
            for sample in samples {
                for packet in try packetizer.packets(for: sample) { try socket.send(packet.bytes, toPort: port) }
                usleep(2_000)  // ffmpeg's UDP receive buffer is 64 KiB
            }
            return (packetizer.configuration.ssrc, packetizer.packetCount, packetizer.octetCount)
        }
        #expect(result.status == 0, "ffmpeg ends on our BYE: \(result.stderrText)")
        let expected = try ffmpegFrameHashes(Self.source)
        #expect(framemd5Hashes(result.stdoutText) == expected)
    }

    @Test(arguments: [false, true]) func weRebuildWhatFFmpegSends(modeZero: Bool) throws {
        let reader = try SampleBufferReader(path: Self.source)
        var samples: [SampleBuffer] = []
        while let sample = try reader.next() { samples.append(sample) }
        // ffmpeg sends a raw stream's packets all with one timestamp (and `-r` gives them in
        // decoding order): send an MP4 of it with the stream's own presentation times.
        let sent = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: sent) }
        let sentWriter = try MovieWriter(path: sent)
        for sample in samples { try sentWriter.append(sample) }
        _ = try sentWriter.finish()
        let socket = try LoopbackUDPSocket(receiveTimeout: 1)
        var arguments = ["10", "ffmpeg", "-v", "error", "-i", sent, "-c", "copy"]
        if modeZero { arguments += ["-rtpflags", "h264_mode0"] }
        let sdpPath = sent + ".sdp"
        defer { try? FileManager.default.removeItem(atPath: sdpPath) }
        arguments += ["-f", "rtp", "-sdp_file", sdpPath, "rtp://127.0.0.1:\(socket.port)?pkt_size=60000"]
        let sender = try run("timeout", arguments)
        #expect(sender.status == 0, "\(sender.stderrText)")
        var depacketizer = H264Depacketizer()
        var units: [H264Depacketizer.AccessUnit] = []
        while let datagram = socket.receive() { units += datagram.withUnsafeBytes { depacketizer.receive(datagram: $0) } }
        units += depacketizer.finish()
        let statistics = depacketizer.statistics
        #expect(statistics.packetsLost == 0 && statistics.packetsInvalid == 0 && statistics.accessUnitsDropped == 0, "\(statistics)")
        #expect(units.count == samples.count)
        for (unit, sample) in zip(units, samples) {
            // ffmpeg sends the stream's own in-band parameter sets; the samples carry them in their description.
            #expect(unit.nalUnits.filter { ![7, 8].contains($0[0] & 0x1F) } == (try sample.nalUnits()))
            #expect(unit.isIDR == sample.isSync)
        }
        // Into sample buffers (the description from the SDP ffmpeg wrote: it sends a movie's
        // parameter sets only there) and an MP4: ffmpeg decodes it to the source's frames.
        let sdp = try SessionDescription(parsing: String(decoding: try Data(contentsOf: URL(fileURLWithPath: sdpPath)), as: UTF8.self))
        let format = try H264PayloadFormat(medium: try #require(sdp.media.first))
        #expect(format.packetizationMode == (modeZero ? 0 : 1))
        var builder = RTPSampleBufferBuilder(formatDescription: try format.formatDescription())
        var rebuilt: [SampleBuffer] = []
        for unit in units { rebuilt += try builder.append(unit) }
        rebuilt += builder.finish()
        let movie = try Checkout.temporaryFile([], suffix: ".mp4")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let writer = try MovieWriter(path: movie)
        for sample in rebuilt { try writer.append(sample) }
        _ = try writer.finish()
        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(Self.source))
        // Every frame at the sent movie's presentation time (counted from the first).
        #expect(try ffprobePresentationTimes(movie) == ffprobePresentationTimes(sent))
    }
}
