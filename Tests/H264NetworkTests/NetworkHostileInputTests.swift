import Foundation
import H264Network
import TestSupport
import Testing

/// The network inputs that once broke a rule (session descriptions, RTP datagram captures in
/// FuzzRTP's framing, RTSP connections in FuzzRTSP's), kept in `Tests/Fixtures/Hostile`: each parses or fails cleanly.
@Suite("Hostile network inputs: a clean error or a result, never a trap")
struct NetworkHostileInputTests {
    static let directory = Checkout.fixtures.appendingPathComponent("Hostile")
    static let inputs: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { $0.hasSuffix(".sdp") || $0.hasSuffix(".rtp") || $0.hasSuffix(".rtsp") }.sorted()

    /// What FuzzRTSP serves at /live (Constrained Baseline 320x240).
    static let format = try! H264PayloadFormat(medium: .init(type: "video", port: 0, formats: ["96"], attributes: [
        "rtpmap:96 H264/90000", "fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0LAHtoCgL/lhAAAAwAEAAADAPA8WLqA,aM4PLIA=", "control:trackID=0",
    ]))

    @Test func theRegressionInputsAreThere() {
        #expect(!Self.inputs.isEmpty)
    }

    @Test(arguments: inputs)
    func endsCleanly(_ name: String) throws {
        let bytes = try [UInt8](Data(contentsOf: Self.directory.appendingPathComponent(name)))
        if name.hasSuffix(".sdp") {
            #expect(throws: NetworkError.self) { _ = try SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) }
        } else if name.hasSuffix(".rtsp") {
            // FuzzRTSP's framing: a chunk-size byte, then the connection's bytes; each request
            // through a server's state machine (/live playable, as FuzzRTSP serves it), which
            // answers every one.
            var parser = RTSPMessageParser()
            var server = RTSPServerConnection(configuration: .init(serverPorts: 6970...6971), seed: 1)
            for element in (try? parser.append(bytes.dropFirst())) ?? [] {
                guard case .message(let message) = element else { continue }
                if let transport = message["Transport"] { _ = try? RTSPTransport.parse(header: transport) }
                if case .request = message.startLine {
                    let (response, _) = server.respond(to: message) { path in path == "/live" ? .playable(Self.format) : nil }
                    guard case .response(let status, _) = response.startLine else { Issue.record("\(name): a request answered with a request"); continue }
                    #expect((100...599).contains(status), "\(name)")
                }
            }
        } else {
            // FuzzRTP's framing: two option bytes, then datagrams each after a 2-byte length.
            var depacketizer = H264Depacketizer()
            var rest = bytes.dropFirst(2)
            while rest.count >= 2 {
                let length = min(rest.count - 2, Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1]))
                let datagram = Array(rest.dropFirst(2).prefix(length))
                rest = rest.dropFirst(2 + length)
                _ = datagram.withUnsafeBytes { depacketizer.receive(datagram: $0) }
            }
            _ = depacketizer.finish()
        }
    }
}
