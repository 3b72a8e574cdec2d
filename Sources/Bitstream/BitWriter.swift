/// A writer of RBSP bits, most significant bit first: the inverse of ``BitReader``.
public struct BitWriter: Sendable {
    /// Bytes written so far; the last one may be partial.
    public private(set) var bytes: [UInt8] = []
    @usableFromInline var bitsInLastByte = 8

    /// An empty writer.
    public init() {}

    /// Total number of bits written.
    public var bitCount: Int { bytes.isEmpty ? 0 : (bytes.count - 1) * 8 + bitsInLastByte }
    /// Whether the bits written end on a byte boundary.
    public var isByteAligned: Bool { bitsInLastByte == 8 }

    /// `u(n)`: writes the low `count` bits of `value`.
    public mutating func bits(_ value: UInt32, _ count: Int) {
        precondition(count >= 0 && count <= 32, "u(n) writes at most 32 bits")
        precondition(count == 32 || UInt64(value) < (1 << UInt64(count)), "value \(value) does not fit \(count) bits")
        var remaining = count
        while remaining > 0 {
            if bitsInLastByte == 8 { bytes.append(0); bitsInLastByte = 0 }
            let space = 8 - bitsInLastByte
            let take = min(space, remaining)
            let chunk = UInt8(truncatingIfNeeded: (value >> UInt32(remaining - take)) & ((1 << UInt32(take)) - 1))
            bytes[bytes.count - 1] |= chunk << UInt8(space - take)
            bitsInLastByte += take
            remaining -= take
        }
    }

    /// `u(1)`: writes a flag as one bit.
    public mutating func flag(_ value: Bool) { bits(value ? 1 : 0, 1) }

    /// `ue(v)`: unsigned Exp-Golomb (§9.1).
    public mutating func ue(_ value: UInt32) {
        let codeNum = UInt64(value) + 1
        let length = 64 - codeNum.leadingZeroBitCount  // bits of codeNum
        let leadingZeros = length - 1
        // leading zeros then codeNum (which starts with a 1): at most 32 + 33 bits, write in pieces.
        var zeros = leadingZeros
        while zeros > 0 { let n = min(zeros, 32); bits(0, n); zeros -= n }
        if length > 32 {
            bits(UInt32(truncatingIfNeeded: codeNum >> 32), length - 32)
            bits(UInt32(truncatingIfNeeded: codeNum), 32)
        } else {
            bits(UInt32(truncatingIfNeeded: codeNum), length)
        }
    }

    /// `se(v)`: signed Exp-Golomb (§9.1.1).
    public mutating func se(_ value: Int32) {
        let v = Int64(value)
        ue(UInt32(truncatingIfNeeded: v > 0 ? 2 * v - 1 : -2 * v))
    }

    /// `rbsp_trailing_bits()`: a one bit, then zeros to the byte boundary.
    public mutating func rbspTrailingBits() {
        flag(true)
        if bitsInLastByte != 8 { bitsInLastByte = 8 }
    }
}
