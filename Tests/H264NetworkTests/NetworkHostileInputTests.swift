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

    @Test func theRegressionInputsAreThere() {
        #expect(!Self.inputs.isEmpty)
    }

    @Test(arguments: inputs)
    func endsCleanly(_ name: String) throws {
        let bytes = try [UInt8](Data(contentsOf: Self.directory.appendingPathComponent(name)))
        if name.hasSuffix(".sdp") {
            #expect(throws: NetworkError.self) { _ = try SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) }
        } else if name.hasSuffix(".rtsp") {
            // FuzzRTSP's framing: a chunk-size byte, then the connection's bytes.
            var parser = RTSPMessageParser()
            for element in (try? parser.append(bytes.dropFirst())) ?? [] {
                if case .message(let message) = element, let transport = message["Transport"] { _ = try? RTSPTransport.parse(header: transport) }
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
