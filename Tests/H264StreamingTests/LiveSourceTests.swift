import Foundation
import H264Network
import H264Session
import H264Streaming
import MediaCore
import TestSupport
import SampleFlow
import Testing

/// The live sources `receive` and `preview` name, and the payload format a file or a live
/// sequence announces, as library calls.
@Suite("LiveSource and the announced payload format", .timely)
struct LiveSourceTests {
    static let stream = Checkout.root.path + "/Samples/Media/testsrc2-320x240-bframes.264"

    @Test func namesParseToTheirSource() throws {
        #expect(LiveSource.isLive("rtp://@:5004") && LiveSource.isLive("RTSP://127.0.0.1/x") && LiveSource.isLive("/tmp/a.sdp") && !LiveSource.isLive("a.mp4"))
        guard case .rtp(let receiver) = try LiveSource(parsing: "rtp://@:5004", options: .init(sampleLimit: 3)) else { Issue.record("not RTP"); return }
        #expect(receiver.endpoint.port == 5004 && receiver.options.sampleLimit == 3)
        guard case .rtsp(let client) = try LiveSource(parsing: "rtsp://127.0.0.1:8554/live", transport: .tcp) else { Issue.record("not RTSP"); return }
        #expect(client.options.transport == .tcp && client.url.path == "/live")
        guard case .publisher(let ingest) = try LiveSource(parsing: "rtsp://127.0.0.1:8554/in", listen: true, credentials: try RTSPCredentials(parsing: "u:p"))
        else { Issue.record("not a publisher's path"); return }
        #expect(ingest.serverOptions.credentials != nil)
        // Low latency reaches the source's receiver, whatever the kind.
        guard case .rtsp(let fast) = LiveSource.rtsp(client).withReceiverOptions({ $0.isLowLatency = true }) else { Issue.record("kind changed"); return }
        #expect(fast.options.receiver.isLowLatency && fast.options.transport == .tcp)
        // Serving for a publisher is for rtsp:// only; a session description is read whole or refused.
        #expect(throws: StreamingError.self) { try LiveSource(parsing: "rtp://@:5004", listen: true) }
        #expect(throws: StreamingError.self) { try LiveSource(parsing: "rtsp://127.0.0.1/live", credentials: try RTSPCredentials(parsing: "u:p")) }
        #expect(throws: StreamingError.self) { try LiveSource(parsing: "/nonexistent/stream.sdp") }
        let huge = try Checkout.temporaryFile(Array(repeating: UInt8(ascii: "a"), count: SessionDescription.maximumSize + 10), suffix: ".sdp")
        defer { try? FileManager.default.removeItem(atPath: huge) }
        #expect { try LiveSource(parsing: huge) } throws: { if case .network(let error) = $0 as? StreamingError { error.code == .tooLarge } else { false } }
        // An SDP a sender announces parses back into a receiver for its port.
        let format = try H264PayloadFormat(firstSampleOf: Self.stream)
        let sdp = try Checkout.temporaryFile(Array(try RTPDestination(parsing: "rtp://127.0.0.1:5006").sessionDescription(for: format).text.utf8), suffix: ".sdp")
        defer { try? FileManager.default.removeItem(atPath: sdp) }
        guard case .rtp(let described) = try LiveSource(parsing: sdp) else { Issue.record("an SDP is RTP"); return }
        #expect(described.endpoint.port == 5006 && described.payloadFormat?.parameterSets == format.parameterSets)
    }

    /// A file and the same samples as an async sequence announce the same payload format.
    @Test func theFirstSampleGivesThePayloadFormat() async throws {
        let fromFile = try H264PayloadFormat(firstSampleOf: Self.stream, payloadType: 97, packetizationMode: 0)
        let fromSequence = try await H264PayloadFormat(firstSampleOf: MediaFileSamples(path: Self.stream), payloadType: 97, packetizationMode: 0)
        #expect(fromFile == fromSequence && fromFile.payloadType == 97 && fromFile.packetizationMode == 0)
        #expect(throws: StreamingError.self) { try H264PayloadFormat(firstSampleOf: "/nonexistent.264") }
    }
}
