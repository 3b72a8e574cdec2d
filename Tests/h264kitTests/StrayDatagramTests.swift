import Foundation
import Synchronization
import TestSupport
import Testing

/// `h264kit receive` while ffmpeg sends a real stream (SSRC 1234) and 400 stray datagrams
/// arrive in between and before it: random bytes of 0–1400 bytes, single bytes, FU-A middles
/// and STAP-As whose sizes run past their end (these with SSRC 0, numbered in sequence). Every
/// frame is recorded, and the counts say what happened: nothing lost of the real stream, the
/// strays counted apart (RFC 3550 A.1: a packet of another source, or one that does not
/// parse, never changes the stream's state).
@Suite("Stray datagrams at the RTP receiver", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct StrayDatagramTests {
    /// The strays, made up front: kinds in turn, SSRC 0 for the well-framed ones.
    static func strays(count: Int) -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        var sequence: UInt16 = 500
        func header(payloadType: UInt8 = 96) -> [UInt8] {
            sequence &+= 1
            return [0x80, payloadType, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0x10, 0, 0, 0, 0, 0]
        }
        return (0..<count).map { index -> [UInt8] in
            switch index % 4 {
            case 0: return (0..<Int.random(in: 0...1400, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case 1: return [UInt8.random(in: 0...255, using: &generator)]
            case 2: return header() + [0x7C, 0x05] + (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }  // FU-A middle of an IDR slice
            default: return header() + [0x78, 0x10, 0x00, 0x65, 0x88, 0x84]  // STAP-A: a 4096-byte unit in 6 bytes
            }
        }
    }

    @Test func everyFrameRecordedAndTheStraysCountedApart() async throws {
        let source = StreamCommandTests.temporaryPath(".264"), movie = StreamCommandTests.temporaryPath(".mp4"), stats = StreamCommandTests.temporaryPath(".json")
        defer { for path in [source, movie, stats] { try? FileManager.default.removeItem(atPath: path) } }
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "30", "-c:v", "libx264",
                                      "-preset", "veryfast", "-bf", "0", "-g", "30", "-f", "h264", source])
        try #require(made.status == 0, "\(made.stderrText)")

        // A relay between ffmpeg and the receiver that puts 20 strays before the first packet
        // and the rest after every packet, a few at a time; RTCP passed on as it is.
        let port = try freeUDPPortPair()
        let relayRTP = try LoopbackUDPSocket(receiveTimeout: 1), relayRTCP = try LoopbackUDPSocket(port: relayRTP.port + 1, receiveTimeout: 1)
        let strays = Self.strays(count: 400)
        let stop = Atomic<Bool>(false), forwarded = Atomic<Int>(0), straysSent = Atomic<Int>(0)
        defer { stop.store(true, ordering: .relaxed) }
        Thread.detachNewThread {
            var next = 0
            func send(_ count: Int) {
                for _ in 0..<count where next < strays.count {
                    try? relayRTP.send(strays[next], toPort: UInt16(port))
                    next += 1
                    straysSent.add(1, ordering: .relaxed)
                }
            }
            send(20)
            while !stop.load(ordering: .relaxed) {
                guard let datagram = relayRTP.receive() else { continue }
                try? relayRTP.send(datagram, toPort: UInt16(port))
                forwarded.add(1, ordering: .relaxed)
                send(10)
            }
        }
        Thread.detachNewThread {
            while !stop.load(ordering: .relaxed) {
                guard let (datagram, from) = relayRTCP.receiveWithSource() else { continue }
                if from != UInt16(port + 1) { try? relayRTCP.send(datagram, toPort: UInt16(port + 1)) }
            }
        }
        // (--timeout 15: ffmpeg, started after the receiver listens, took over 5 s to send its
        // first packet in CI here beside the corpus suites.)
        let receiver = try ChildProcess(try h264kitURL(), ["receive", "rtp://127.0.0.1:\(port)", movie, "--timeout", "15", "--stats", stats])
        try await offThePool { try receiver.waitUntil("its port \(port) bound") { udpPortIsBound(UInt16(port)) } }
        let sent = try await offThePool {
            // (An elementary stream: its parameter sets go in band, as the receiver has no SDP.)
            try run("ffmpeg", ["-v", "error", "-re", "-f", "h264", "-framerate", "30", "-i", source, "-c", "copy", "-f", "rtp", "-ssrc", "1234",
                               "rtp://127.0.0.1:\(relayRTP.port)"])
        }
        #expect(sent.status == 0, "\(sent.stderrText)")
        #expect(try await offThePool { receiver.wait() } == 0, "\(receiver.stderrText)")
        #expect(straysSent.load(ordering: .relaxed) >= 200, "\(straysSent.load(ordering: .relaxed)) strays sent")

        #expect(try ffmpegFrameHashes(movie) == ffmpegFrameHashes(source, format: "h264"), "\(receiver.stderrText)")
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        let depacketizer = counts["depacketizer"] as? [String: Any] ?? [:]
        let validation = counts["sourceValidation"] as? [String: Any] ?? [:]
        #expect(counts["ssrc"] as? Int == 1234, "\(counts)")
        #expect(depacketizer["packetsLost"] as? Int == 0 && depacketizer["packetsDuplicated"] as? Int == 0, "\(counts)")
        #expect(depacketizer["packetsReceived"] as? Int == forwarded.load(ordering: .relaxed), "only the stream's packets reach the depacketizer: \(counts)")
        #expect(counts["pictureLossIndications"] as? Int == 0, "\(counts)")
        let apart = ["packetsUnparsable", "packetsMalformed", "packetsFromOtherSources", "packetsDroppedInProbation", "packetsOfOtherPayloadTypes"]
            .reduce(0) { $0 + (validation[$1] as? Int ?? 0) }
        #expect(apart > 0 && apart <= straysSent.load(ordering: .relaxed), "strays counted apart: \(validation)")
    }
}
