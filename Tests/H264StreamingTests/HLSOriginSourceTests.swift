import Foundation
import H264Network
import H264Streaming
import MediaCore
import SampleFlow
import TestSupport
import Testing

/// The origin's one-call setups: its options from the URL a user types, and a live source
/// published as it is received.
@Suite("HLS origin: options from a URL, a live source published", .timely)
struct HLSOriginSourceTests {
    static let stream = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    @Test func optionsFromTheURL() throws {
        let plain = try HLSOrigin.Options(url: "http://127.0.0.1:8080/live/index.m3u8")
        #expect(plain.host == "127.0.0.1" && plain.port == 8080 && plain.path == "/live/index.m3u8")
        let defaultPort = try HLSOrigin.Options(url: "HTTP://example.test/a.M3U8")
        #expect(defaultPort.host == "example.test" && defaultPort.port == 80 && defaultPort.path == "/a.M3U8")
        let v6 = try HLSOrigin.Options(url: "http://[::1]:9000/x/y.m3u8")
        #expect(v6.host == "::1" && v6.port == 9000 && v6.path == "/x/y.m3u8")
        let v6NoPort = try HLSOrigin.Options(url: "http://[::1]/y.m3u8")
        #expect(v6NoPort.host == "::1" && v6NoPort.port == 80)
        for bad in ["https://h/a.m3u8", "http://h", "http://h:99999/a.m3u8", "http://h:x/a.m3u8", "http://h/a.mpd", "http://:80/a.m3u8", "rtsp://h/a.m3u8", ""] {
            #expect(throws: StreamingError.self, "\(bad)") { _ = try HLSOrigin.Options(url: bad) }
        }
    }

    @Test("what a live source receives is published in one call: the playlist ends at the sender's BYE and its segments decode to the source's frames",
          .requires(.ffmpeg), .timely)
    func liveSourcePublished() async throws {
        let rtpPort = try freeUDPPortPair(), httpPort = try freeTCPPort()
        let origin = try HLSOrigin(options: .init(url: "http://127.0.0.1:\(httpPort)/live/index.m3u8"))
        let serving = Task(executorPreference: TimelyExecutor.shared) { try await origin.run() }
        defer { serving.cancel() }
        #expect(await waitUntilListening(httpPort))
        async let report = origin.publish(try LiveSource(parsing: "rtp://127.0.0.1:\(rtpPort)"))
        for _ in 0..<500 where !udpPortIsBound(UInt16(rtpPort)) { try await Task.sleep(for: .milliseconds(10)) }
        let sender = try RTPSender(destination: RTPDestination(host: "127.0.0.1", port: rtpPort), options: .init(rate: 10))
        let sent = try await sender.send(MediaFileSamples(path: Self.stream))
        let received = try await report
        #expect(received.ending == .goodbye && received.samples == sent.samples, "\(received)")
        #expect(origin.statistics.segmentsPublished > 0)
        let decoded = try ffmpegFrameHashes(origin.url(port: httpPort))
        #expect(decoded == (try ffmpegFrameHashes(Self.stream)))
        // Published once: the rendition has ended, so the name is not taken again.
        await #expect(throws: StreamingError.self) { _ = try await origin.publish(try LiveSource(parsing: "rtp://127.0.0.1:\(rtpPort)")) }
    }
}
