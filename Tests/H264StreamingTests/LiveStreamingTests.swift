import Dispatch
import Foundation
import H264Bitstream
import H264Codec
import H264Network
import H264Session
import H264Streaming
import MediaCore
import MediaIO
import Synchronization
import TestSupport
import Testing

/// Pictures encoded live and sent over RTP, through a relay that loses packets: the receiver's
/// RTCP picture loss indications reach the sender, whose next picture is an IDR picture.
@Suite("Live encoding and picture loss", .requires(.ffmpeg), .serialized)
struct LiveStreamingTests {
    @Test("a live .y4m source through a relay that loses packets: each loss recovered by an IDR within 2 frame times (PLI), with no keyframe scheduled")
    func pictureLossRecovery() async throws {
        let pictures = try Checkout.temporaryFile([], suffix: ".y4m")
        defer { try? FileManager.default.removeItem(atPath: pictures) }
        // 10 frames a second: the loop of loss, PLI and IDR has 100 ms a frame, room enough on a
        // loaded test machine (Benchmarks/rtp-pli.sh measures it at 25 fps on an idle one).
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10", "-frames:v", "60", "-pix_fmt", "yuv420p", pictures])
        try #require(made.status == 0, "\(made.stderrText)")
        var settings = EncoderSettings(width: 320, height: 240, frameRate: FrameRate(10, 1), preset: "veryfast")
        settings.maximumKeyframeInterval = 1000  // no IDR but the first and the asked-for ones
        let live = try LivePictureSamples(settings: settings) { () throws(MediaIOError) in try Y4MReader(path: pictures) }

        // The relay: RTP from the sender to the receiver, losing packets 40, 90 and 140;
        // RTCP both ways (the sender's reports on, the receiver's reports and PLIs back).
        let port = try freeUDPPortPair()
        let relayRTP = try LoopbackUDPSocket(receiveTimeout: 10), relayRTCP = try LoopbackUDPSocket(port: relayRTP.port + 1, receiveTimeout: 10)
        let dropped = Atomic<Int>(0)
        DispatchQueue.global().async {
            var index = 0
            while let datagram = relayRTP.receive() {
                index += 1
                if [40, 90, 140].contains(index) { dropped.add(1, ordering: .relaxed); continue }
                try? relayRTP.send(datagram, toPort: UInt16(port))
            }
        }
        DispatchQueue.global().async {
            var senderPort: UInt16?
            while let (datagram, from) = relayRTCP.receiveWithSource() {
                if from == UInt16(port + 1) {
                    if let senderPort { try? relayRTCP.send(datagram, toPort: senderPort) }
                } else {
                    senderPort = from
                    try? relayRTCP.send(datagram, toPort: UInt16(port + 1))
                }
            }
        }
        let receiver = RTPReceiver(endpoint: RTPDestination(host: "127.0.0.1", port: port), options: .init(idleTimeout: .seconds(2)))
        let received = Mutex<[(time: MediaTime, sync: Bool)]>([])
        async let report = receiver.receive { sample in received.withLock { $0.append((sample.presentationTime, sample.isSync)) } }
        for _ in 0..<500 where !udpPortIsBound(UInt16(port)) { try await Task.sleep(for: .milliseconds(10)) }
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: Int(relayRTP.port)))
        let summary = try await sender.send(live, onPictureLoss: { live.requestKeyframe() })
        let result = try await report
        #expect(dropped.load(ordering: .relaxed) == 3 && summary.samples == 60)
        #expect(result.pictureLossIndications >= 3 && summary.receiverFeedback.pictureLossIndications >= 3 && live.keyframesRequested >= 3, "\(result) \(summary)")
        #expect(summary.receiverFeedback.receptionReports > 0 && summary.receiverFeedback.lastCumulativeLost == 3)
        // Each gap in the frames received ends at an IDR picture at most 2 frame times after
        // the first frame lost.
        let frames = received.withLock { $0 }.map { (Int($0.time.converted(toTimescale: 10, rounding: .halfAwayFromZero).value), $0.sync) }
        #expect(frames.first?.1 == true && frames.count < 60 && frames.count >= 51, "\(frames.count) frames")
        var gaps = 0
        for (previous, next) in zip(frames, frames.dropFirst()) where next.0 != previous.0 + 1 {
            gaps += 1
            #expect(next.1, "frame \(next.0), after the gap from \(previous.0), is an IDR picture")
            #expect(next.0 - (previous.0 + 1) <= 2, "frames \(previous.0 + 1)..<\(next.0) missing: recovered after \(next.0 - previous.0 - 1) frame times")
        }
        #expect(gaps == 3)
    }
}
