import H264Network
import Testing

@Suite("RTPPacket")
struct RTPPacketTests {
    @Test func roundTripsEveryHeaderField() throws {
        var packet = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0xFFFE, timestamp: 0xDEAD_BEEF, ssrc: 0x1234_5678, payload: [0x65, 1, 2, 3])
        packet.csrcs = [1, 2]
        packet.headerExtension = (profile: 0xBEDE, data: [1, 2, 3, 4])
        let parsed = try RTPPacket(parsing: packet.bytes)
        #expect(parsed == packet)
        #expect(parsed.headerExtension?.profile == 0xBEDE && parsed.headerExtension?.data == [1, 2, 3, 4])
    }

    @Test func paddingIsRemoved() throws {
        var bytes = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: [0x41, 9]).bytes
        bytes[0] |= 0x20
        bytes += [0, 0, 3]
        #expect(try RTPPacket(parsing: bytes).payload == [0x41, 9])
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var code: NetworkError.Code
        var testDescription: String { name }
    }

    static let bad: [Bad] = [
        Bad(name: "short", bytes: [0x80, 96, 0, 1], code: .truncated),
        Bad(name: "version 1", bytes: [0x40, 96] + [UInt8](repeating: 0, count: 10), code: .invalidHeader),
        Bad(name: "CSRCs past the end", bytes: [0x8F, 96] + [UInt8](repeating: 0, count: 14), code: .truncated),
        Bad(name: "extension past the end", bytes: [0x90, 96] + [UInt8](repeating: 0, count: 10) + [0xBE, 0xDE, 0x00, 0x09], code: .truncated),
        Bad(name: "padding past the payload", bytes: [0xA0, 96] + [UInt8](repeating: 0, count: 10) + [1, 200], code: .invalidHeader),
        Bad(name: "padding of zero", bytes: [0xA0, 96] + [UInt8](repeating: 0, count: 10) + [1, 0], code: .invalidHeader),
    ]

    @Test(arguments: bad) func malformedDatagramsAreErrors(_ case: Bad) {
        #expect { try RTPPacket(parsing: `case`.bytes) } throws: { ($0 as? NetworkError)?.code == `case`.code }
    }
}
