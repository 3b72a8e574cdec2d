/// A reader of the bits of a raw byte sequence payload (RBSP), most significant bit first.
///
/// Implements the descriptors of ITU-T H.264 §7.2: `u(n)`, `f(n)`, `ue(v)`, `se(v)`,
/// `more_rbsp_data()` and the trailing bits of §7.3.2.11. The reader is a view over
/// borrowed bytes (a `Span`), so it copies nothing; emulation-prevention bytes must already
/// be removed (see `RBSP`).
public struct BitReader: ~Escapable {
    @usableFromInline let bytes: Span<UInt8>
    @usableFromInline var position: Int
    /// Bits consumed so far.
    @inlinable public var bitPosition: Int { position }

    /// A reader at the first bit of `bytes`, which must outlive it.
    @inlinable @_lifetime(copy bytes)
    public init(_ bytes: Span<UInt8>) {
        self.bytes = bytes
        self.position = 0
    }

    /// Total number of bits in the payload.
    @inlinable public var bitCount: Int { bytes.count &* 8 }
    /// Bits not yet consumed.
    @inlinable public var bitsLeft: Int { bitCount &- bitPosition }
    /// Whether the position is on a byte boundary.
    @inlinable public var isByteAligned: Bool { bitPosition & 7 == 0 }

    @inlinable
    func error(_ code: BitstreamError.Code, _ reason: String) -> BitstreamError {
        BitstreamError(code, reason, byteOffset: bitPosition >> 3, bitOffset: bitPosition)
    }

    /// Reads up to 8 bytes starting at the current position into the top of a 64-bit word.
    @inlinable
    func peek64() -> UInt64 {
        let byteIndex = bitPosition >> 3
        var word: UInt64 = 0
        let available = bytes.count &- byteIndex
        if available >= 8 {
            for i in 0..<8 { word = word << 8 | UInt64(bytes[unchecked: byteIndex &+ i]) }
        } else {
            var i = 0
            while i < 8 {
                word <<= 8
                if i < available { word |= UInt64(bytes[unchecked: byteIndex &+ i]) }
                i &+= 1
            }
        }
        return word << UInt64(bitPosition & 7)
    }

    /// `u(n)`: an unsigned integer of `count` bits, 0...32.
    @inlinable
    public mutating func bits(_ count: Int, _ name: @autoclosure () -> String = "u(n)") throws(BitstreamError) -> UInt32 {
        precondition(count >= 0 && count <= 32, "u(n) reads at most 32 bits")
        if count == 0 { return 0 }
        guard count <= bitsLeft else { throw error(.endOfData, "\(name()) needs \(count) bits, \(bitsLeft) left") }
        let value = peek64() >> UInt64(64 &- count)
        position &+= count
        return UInt32(truncatingIfNeeded: value)
    }

    /// `u(1)` read as a flag.
    @inlinable
    public mutating func flag(_ name: @autoclosure () -> String = "flag") throws(BitstreamError) -> Bool {
        guard bitPosition < bitCount else { throw error(.endOfData, "\(name()) needs 1 bit, 0 left") }
        let byte = bytes[unchecked: bitPosition >> 3]
        let bit = (byte >> UInt8(7 &- (bitPosition & 7))) & 1
        position &+= 1
        return bit == 1
    }

    /// `ue(v)`: an unsigned Exp-Golomb code (§9.1). A code with more than 31 leading zero bits
    /// would not fit 32 bits and is an error.
    @inlinable
    public mutating func ue(_ name: @autoclosure () -> String = "ue(v)") throws(BitstreamError) -> UInt32 {
        let word = peek64()
        let leadingZeros = word.leadingZeroBitCount
        // peek64 pads with zeros past the end, so a run of zeros reaching the end is truncation.
        if leadingZeros >= bitsLeft {
            throw error(.endOfData, "\(name()): Exp-Golomb code runs past the end of the data")
        }
        guard leadingZeros <= 31 else {
            throw error(.invalidExpGolomb, "\(name()): \(leadingZeros) leading zero bits (at most 31 allowed)")
        }
        let length = 2 &* leadingZeros &+ 1
        guard length <= bitsLeft else {
            throw error(.endOfData, "\(name()): Exp-Golomb code runs past the end of the data")
        }
        if length > 56 {
            // Longer than the 64-bit window holds after an unaligned start: read the suffix apart.
            // The leading one and the suffix are at most 32 bits (leadingZeros ≤ 31).
            position &+= leadingZeros
            return try bits(leadingZeros &+ 1) &- 1
        }
        position &+= length
        // The code sits in the top `length` bits of the word; its value is that number minus one.
        return UInt32(truncatingIfNeeded: (word >> UInt64(64 &- length)) &- 1)
    }

    /// `se(v)`: a signed Exp-Golomb code (§9.1.1).
    @inlinable
    public mutating func se(_ name: @autoclosure () -> String = "se(v)") throws(BitstreamError) -> Int32 {
        let k = try ue(name())
        // k = 0, 1, 2, 3, 4 ... maps to 0, 1, -1, 2, -2 ...
        let magnitude = Int64(k / 2) + Int64(k & 1)
        return Int32(truncatingIfNeeded: (k & 1) == 1 ? magnitude : -magnitude)
    }

    /// `ue(v)` checked against an inclusive upper bound, so absurd values become errors.
    @inlinable
    public mutating func ue(_ name: @autoclosure () -> String, max: UInt32) throws(BitstreamError) -> Int {
        let value = try ue(name())
        guard value <= max else { throw error(.valueOutOfRange, "\(name()) = \(value) exceeds \(max)") }
        return Int(value)
    }

    /// `se(v)` checked against an inclusive range.
    @inlinable
    public mutating func se(_ name: @autoclosure () -> String, in range: ClosedRange<Int32>) throws(BitstreamError) -> Int {
        let value = try se(name())
        guard range.contains(value) else { throw error(.valueOutOfRange, "\(name()) = \(value) outside \(range)") }
        return Int(value)
    }

    /// Skips `count` bits.
    @inlinable
    public mutating func skip(_ count: Int) throws(BitstreamError) {
        guard count >= 0, count <= bitsLeft else { throw error(.endOfData, "cannot skip \(count) bits, \(bitsLeft) left") }
        position &+= count
    }

    /// `more_rbsp_data()` (§7.2): true while data remains before the rbsp_stop_one_bit.
    public func moreRBSPData() -> Bool {
        guard bitPosition < bitCount else { return false }
        // Find the last 1 bit in the payload: the rbsp_stop_one_bit.
        var last = bytes.count - 1
        while last >= 0 && bytes[last] == 0 { last -= 1 }
        guard last >= 0 else { return false }
        let stopBit = last * 8 + (7 - bytes[last].trailingZeroBitCount)
        return bitPosition < stopBit
    }

    /// `rbsp_trailing_bits()` (§7.3.2.11): a one bit then zero bits to the byte boundary.
    public mutating func rbspTrailingBits() throws(BitstreamError) {
        guard try flag("rbsp_stop_one_bit") else { throw error(.invalidStructure, "rbsp_stop_one_bit is 0") }
        while !isByteAligned {
            if try flag("rbsp_alignment_zero_bit") { throw error(.invalidStructure, "rbsp_alignment_zero_bit is 1") }
        }
    }

    /// Skips to the next byte boundary.
    public mutating func byteAlign() {
        position = min((position + 7) & ~7, bitCount)
    }
}
