import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Pictures encoded live by `h264kit stream` and recorded by `h264kit receive`, through a relay
/// (in this test, on loopback) that loses packets: the receiver's RTCP picture loss indications
/// reach the sender, whose next picture is an IDR picture. Sender and receiver are processes of
/// their own, so that the test process's other tests cannot hold up their clocks.
@Suite("Live encoding and picture loss", .requires(.ffmpeg, .ffprobe), .serialized, .timely)
struct LiveCommandTests {
    @Test("a live .y4m source through a relay that loses packets: each loss recovered by an IDR within 2 frame times (PLI), with no keyframe scheduled")
    func pictureLossRecovery() async throws {
        let pictures = StreamCommandTests.temporaryPath(".y4m"), movie = StreamCommandTests.temporaryPath(".mp4"), stats = StreamCommandTests.temporaryPath(".json")
        defer { for path in [pictures, movie, stats] { try? FileManager.default.removeItem(atPath: path) } }
        // 10 frames a second: the loop of loss, PLI and IDR has 100 ms a frame, room enough on a
        // loaded test machine (Benchmarks/rtp-pli.sh measures it at 25 fps on an idle one).
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10", "-frames:v", "60", "-pix_fmt", "yuv420p", pictures])
        try #require(made.status == 0, "\(made.stderrText)")

        // The relay: RTP from the sender to the receiver, losing packets 40, 90 and 140; RTCP
        // both ways (the sender's reports on, the receiver's reports and PLIs back).
        let port = try freeUDPPortPair()
        let relayRTP = try LoopbackUDPSocket(receiveTimeout: 1), relayRTCP = try LoopbackUDPSocket(port: relayRTP.port + 1, receiveTimeout: 1)
        let dropped = Atomic<Int>(0), stop = Atomic<Bool>(false)
        defer { stop.store(true, ordering: .relaxed) }
        Thread.detachNewThread {
            var index = 0
            while !stop.load(ordering: .relaxed) {
                guard let datagram = relayRTP.receive() else { continue }
                index += 1
                if [40, 90, 140].contains(index) { dropped.add(1, ordering: .relaxed); continue }
                try? relayRTP.send(datagram, toPort: UInt16(port))
            }
        }
        Thread.detachNewThread {
            var senderPort: UInt16?
            while !stop.load(ordering: .relaxed) {
                guard let (datagram, from) = relayRTCP.receiveWithSource() else { continue }
                if from == UInt16(port + 1) {
                    if let senderPort { try? relayRTCP.send(datagram, toPort: senderPort) }
                } else {
                    senderPort = from
                    try? relayRTCP.send(datagram, toPort: UInt16(port + 1))
                }
            }
        }
        let receiver = try ChildProcess(try h264kitURL(), ["receive", "rtp://127.0.0.1:\(port)", movie, "--timeout", "30", "--stats", stats])
        for _ in 0..<6000 where !udpPortIsBound(UInt16(port)) { try await Task.sleep(for: .milliseconds(10)) }
        let sent = try await offThePool {
            try h264kitProcess(["stream", pictures, "rtp://127.0.0.1:\(relayRTP.port)", "--preset", "veryfast", "--keyint", "1000", "-v"])
        }
        #expect(sent.status == 0, "\(sent.stderrText)")
        #expect(try await offThePool { receiver.wait() } == 0, "\(receiver.stderrText)")
        #expect(dropped.load(ordering: .relaxed) == 3 && sent.stderrText.contains("60 samples"), "\(sent.stderrText)")
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        #expect((counts["pictureLossIndications"] as? Int ?? 0) >= 3 && (counts["receiverReports"] as? Int ?? 0) > 0, "\(counts)")
        #expect(sent.stderrText.contains("picture loss indications") && !sent.stderrText.contains(" 0 picture loss indications"), "\(sent.stderrText)")

        // Each gap in the frames recorded ends at an IDR picture at most 2 frame times after the
        // first frame lost.
        let probed = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts,key_frame", "-of", "csv=p=0", movie])
        let frames = probed.stdoutText.split(separator: "\n").compactMap { line -> (Int, Bool)? in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let pts = Int(fields[1]) else { return nil }
            return (pts, fields[0] == "1")
        }
        let step = try #require(zip(frames, frames.dropFirst()).map { $1.0 - $0.0 }.filter { $0 > 0 }.min())
        #expect(frames.first?.1 == true && frames.count < 60 && frames.count >= 51, "\(frames.count) frames")
        var gaps = 0
        for (previous, next) in zip(frames, frames.dropFirst()) where next.0 - previous.0 > step {
            gaps += 1
            let missing = (next.0 - previous.0) / step - 1
            #expect(next.1, "the frame after a gap of \(missing) is an IDR picture")
            #expect(missing <= 2, "recovered after \(missing) frame times")
        }
        #expect(gaps == 3)
    }
}
