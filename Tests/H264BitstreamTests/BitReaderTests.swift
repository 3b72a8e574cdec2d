import Testing
@testable import H264Bitstream

struct ExpGolombVector: Sendable, CustomTestStringConvertible {
    var value: UInt32
    var bits: String
    var testDescription: String { "ue(\(value)) = \(bits)" }
}

@Suite("Bit reader and writer")
struct BitReaderTests {
    /// §9.1 Table 9-2.
    static let ueVectors: [ExpGolombVector] = [
        .init(value: 0, bits: "1"), .init(value: 1, bits: "010"), .init(value: 2, bits: "011"),
        .init(value: 3, bits: "00100"), .init(value: 6, bits: "00111"), .init(value: 7, bits: "0001000"),
        .init(value: 14, bits: "0001111"), .init(value: 255, bits: "00000000100000000"),
    ]

    static func bytes(fromBits bits: String) -> [UInt8] {
        var writer = BitWriter()
        for c in bits { writer.flag(c == "1") }
        return writer.bytes
    }

    /// The error a throwing body raised, if any.
    static func error(_ body: () throws -> Void) -> BitstreamError? {
        do { try body(); return nil } catch { return error as? BitstreamError }
    }

    @Test(arguments: ueVectors)
    func ueDecodesTableValues(_ vector: ExpGolombVector) throws {
        let bytes = Self.bytes(fromBits: vector.bits + "1")
        var reader = BitReader(bytes.span)
        let value = try reader.ue()
        #expect(value == vector.value)
        let position = reader.bitPosition
        #expect(position == vector.bits.count)
        var writer = BitWriter()
        writer.ue(vector.value)
        #expect(writer.bitCount == vector.bits.count)
        #expect(writer.bytes == Self.bytes(fromBits: vector.bits))
    }

    @Test func ueAndSeRoundTripAcrossTheRange() throws {
        let unsigned: [UInt32] = [0, 1, 2, 100, 65535, 1 << 20, UInt32.max - 1]
        let signed: [Int32] = [0, 1, -1, 2, -2, 1000, -1000, Int32.max, -Int32.max]
        var writer = BitWriter()
        for v in unsigned { writer.ue(v) }
        for v in signed { writer.se(v) }
        writer.bits(0x2A, 6)
        writer.rbspTrailingBits()
        var reader = BitReader(writer.bytes.span)
        for v in unsigned { let read = try reader.ue(); #expect(read == v) }
        for v in signed { let read = try reader.se(); #expect(read == v) }
        let tail = try reader.bits(6)
        #expect(tail == 0x2A)
        let more = reader.moreRBSPData()
        #expect(!more)
        try reader.rbspTrailingBits()
        let left = reader.bitsLeft
        #expect(left == 0)
    }

    @Test func seMapsCodeNumbersAsTable9_3() throws {
        // codeNum 0,1,2,3,4 → 0, 1, −1, 2, −2
        var writer = BitWriter()
        for k: UInt32 in 0...4 { writer.ue(k) }
        var reader = BitReader(writer.bytes.span)
        var values: [Int32] = []
        for _ in 0...4 { let v = try reader.se(); values.append(v) }
        #expect(values == [0, 1, -1, 2, -2])
    }

    @Test func uReadsBitsAcrossByteBoundaries() throws {
        let bytes: [UInt8] = [0b1010_1100, 0b0101_0011, 0xFF, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9A]
        var reader = BitReader(bytes.span)
        let a = try reader.bits(3), b = try reader.bits(7), c = try reader.flag(), d = try reader.bits(32)
        #expect(a == 0b101)
        #expect(b == 0b0_1100_01)
        #expect(c == false)
        #expect(d == 0b1_0011_1111_1111_0000_0000_0001_0010_001)
        let position = reader.bitPosition
        #expect(position == 43)
    }

    @Test func moreThan31LeadingZerosIsAnErrorNotACrash() {
        // 32 zero bits, then a one, then 40 more bits.
        let bytes: [UInt8] = [0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0xFF]
        #expect(Self.error { var r = BitReader(bytes.span); _ = try r.ue() }?.code == .invalidExpGolomb)
    }

    @Test func runningPastTheEndIsEndOfData() {
        let bytes: [UInt8] = [0x00, 0x01]  // 15 zeros then 1: needs 15 more bits
        #expect(Self.error { var r = BitReader(bytes.span); _ = try r.ue("x") }?.code == .endOfData)
        #expect(Self.error { var r = BitReader(bytes.span); _ = try r.bits(17) }?.code == .endOfData)
        let empty: [UInt8] = []
        #expect(Self.error { var r = BitReader(empty.span); _ = try r.flag() }?.code == .endOfData)
        let none = BitReader(empty.span)
        let more = none.moreRBSPData()
        #expect(!more)
    }

    @Test func boundedReadsRejectAbsurdValues() throws {
        var writer = BitWriter()
        writer.ue(300)
        let bytes = writer.bytes
        let error = Self.error { var r = BitReader(bytes.span); _ = try r.ue("num_ref_frames_in_pic_order_cnt_cycle", max: 255) }
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.reason.contains("num_ref_frames_in_pic_order_cnt_cycle = 300") == true)
    }

    @Test func moreRBSPDataStopsAtTheStopBit() throws {
        // 1 bit of data "1", then stop bit, then alignment: 0b1100_0000
        let bytes: [UInt8] = [0b1100_0000]
        var reader = BitReader(bytes.span)
        let before = reader.moreRBSPData()
        #expect(before)
        _ = try reader.flag()
        let after = reader.moreRBSPData()
        #expect(!after)
        try reader.rbspTrailingBits()
    }
}

@Suite("Emulation prevention")
struct RBSPTests {
    struct Vector: Sendable {
        var rbsp: [UInt8]
        var escaped: [UInt8]
    }
    static let vectors: [Vector] = [
        .init(rbsp: [0, 0, 0], escaped: [0, 0, 3, 0]),
        .init(rbsp: [0, 0, 1], escaped: [0, 0, 3, 1]),
        .init(rbsp: [0, 0, 2], escaped: [0, 0, 3, 2]),
        .init(rbsp: [0, 0, 3], escaped: [0, 0, 3, 3]),
        .init(rbsp: [0, 0, 4], escaped: [0, 0, 4]),
        .init(rbsp: [0, 0, 0, 0, 0], escaped: [0, 0, 3, 0, 0, 3, 0]),
        .init(rbsp: [0x65, 0, 0, 1, 0, 0, 2], escaped: [0x65, 0, 0, 3, 1, 0, 0, 3, 2]),
        .init(rbsp: [0x80, 0, 0], escaped: [0x80, 0, 0, 3]),  // cabac_zero_words at the end
        .init(rbsp: [], escaped: []),
    ]

    @Test(arguments: vectors)
    func escapeAndUnescapeAreInverse(_ vector: Vector) {
        #expect(RBSP.escape(vector.rbsp.span) == vector.escaped)
        #expect(RBSP.unescape(vector.escaped.span) == vector.rbsp)
        #expect(RBSP.containsEmulationPrevention(vector.escaped.span) == (vector.escaped.count != vector.rbsp.count))
    }

    @Test func randomPayloadsRoundTrip() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            // Bias toward zeros so start-code-like runs are common.
            let rbsp = (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...3, using: &rng) == 0 ? UInt8.random(in: 1...255, using: &rng) : 0 }
            let escaped = RBSP.escape(rbsp.span)
            #expect(RBSP.unescape(escaped.span) == rbsp)
            // No start code prefix survives escaping.
            var found = false
            escaped.withUnsafeBytes { found = AnnexB.nextStartCodePrefix(in: $0, from: 0) != nil }
            #expect(!found)
        }
    }
}
