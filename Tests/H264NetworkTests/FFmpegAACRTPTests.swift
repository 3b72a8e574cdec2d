import Dispatch
import Foundation
import H264Network
import ISOBMFF
import MediaCore
import MPEG4Audio
import Synchronization
import TestSupport
import Testing

/// AAC over RTP (RFC 3640) between H264Kit and ffmpeg over loopback UDP: what ffmpeg sends,
/// we rebuild into the source's AAC frames at their times; what we send, ffmpeg copies out as
/// the source's frames.
@Suite("AAC over RTP with ffmpeg as the peer", .requires(.ffmpeg), .serialized, .timely)
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

    /// MP4A-LATM with `cpresent=1` and no `config=` (as some cameras describe it): the session
    /// learns the format from the stream. The elements are ffmpeg's own (its LOAS muxer puts the
    /// StreamMuxConfig in band every 20th element; the others reuse it), one an RTP packet.
    @Test("MP4A-LATM with its configuration in band only (cpresent=1, no config=): the session learns the format from ffmpeg's elements and hands the source's AAC frames byte for byte, each at its time",
          arguments: [0, 1])
    func latmWithItsConfigurationInBand(source index: Int) throws {
        let source = Self.sources[index]
        let loas = try Checkout.temporaryFile([], suffix: ".latm")
        defer { try? FileManager.default.removeItem(atPath: loas) }
        _ = try run("ffmpeg", ["-v", "error", "-y", "-i", source, "-c", "copy", "-f", "latm", loas])
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: loas)))
        // AudioSyncStream (ISO/IEC 14496-3 §1.7.2): 0x2B7 in 11 bits, 13 bits of length, the element.
        var elements: [[UInt8]] = []
        var offset = 0
        while offset + 3 <= bytes.count {
            try #require(bytes[offset] == 0x56 && bytes[offset + 1] & 0xE0 == 0xE0, "a LOAS sync word at \(offset)")
            let length = Int(bytes[offset + 1] & 0x1F) << 8 | Int(bytes[offset + 2])
            elements.append(Array(bytes[(offset + 3)..<min(bytes.count, offset + 3 + length)]))
            offset += 3 + length
        }
        let medium = SessionDescription.Media(type: "audio", port: 5004, formats: ["97"], attributes: ["rtpmap:97 MP4A-LATM/\(index == 0 ? 48000 : 44100)", "fmtp:97 cpresent=1"])
        let format = try #require(AudioPayloadFormat(medium: medium))
        let described = try format.describedFormat()
        #expect(format.carriesItsConfigurationInBand && format.isReceivable && described == nil)
        var session = try RTPAudioReceivingSession(configuration: .init(format: format))
        #expect(session.formatDescription == nil)
        var received: [SampleBuffer] = []
        for (number, element) in elements.enumerated() {
            let packet = RTPPacket(marker: true, payloadType: 97, sequenceNumber: UInt16(truncatingIfNeeded: number), timestamp: UInt32(1024 * number), ssrc: 7, payload: element)
            received += session.receiveRTP(packet.bytes, arrival: Double(number) / 50)
        }
        received += session.finish()
        let expected = try Self.samples(source)
        let learned = try #require(session.formatDescription)
        let sourceFormat = try #require(expected.first?.formatDescription.audio)
        // (The movie's configuration also signals "no SBR" in a sync extension; ffmpeg's LATM leaves that out.)
        let (ours, theirs) = (try #require(learned.audioSpecificConfig), try #require(sourceFormat.audioSpecificConfig))
        #expect(learned.sampleRate == sourceFormat.sampleRate && learned.channelCount == sourceFormat.channelCount && ours.audioObjectType == theirs.audioObjectType
                && ours.samplingFrequencyIndex == theirs.samplingFrequencyIndex && ours.specificConfig == theirs.specificConfig, "\(ours) / \(theirs)")
        #expect(received.map { Array($0.data.bytes) } == expected.map { Array($0.data.bytes) }, "\(received.count) of \(expected.count) frames")
        #expect(received.map(\.decodeTime.value) == (0..<Int64(received.count)).map { $0 * 1024 })
        #expect(received.allSatisfy { $0.duration.value == 1024 && $0.formatDescription.audio == learned })
        #expect(session.depacketizer.framesDropped == 0)
    }
}
