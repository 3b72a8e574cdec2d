/// A program clock reference (ISO/IEC 13818-1 §2.4.3.5): the 27 MHz system clock of a
/// program, sampled when the byte holding its last bit leaves the encoder. A 33-bit base in
/// 90 kHz units and a 9-bit extension (0 to 299) in 27 MHz units.
public struct ProgramClockReference: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// `program_clock_reference_base`: 90 kHz ticks, 33 bits.
    public var base: UInt64
    /// `program_clock_reference_extension`: 27 MHz ticks past the base, 0 to 299.
    public var `extension`: UInt16

    /// The clock's period in 27 MHz ticks: the base wraps at 2^33.
    public static let period: UInt64 = (1 << 33) * 300

    /// A reference of `base` (kept to 33 bits) and `extension` (kept below 300).
    public init(base: UInt64, extension: UInt16 = 0) {
        self.base = base & ((1 << 33) - 1)
        self.extension = min(`extension`, 299)
    }

    /// The reference for a 27 MHz clock reading (taken modulo the clock's period).
    public init(ticks27MHz ticks: UInt64) {
        let wrapped = ticks % Self.period
        base = wrapped / 300
        self.extension = UInt16(wrapped % 300)
    }

    /// The clock in 27 MHz ticks.
    public var ticks27MHz: UInt64 { base * 300 + UInt64(self.extension) }

    /// The clock in seconds.
    public var seconds: Double { Double(ticks27MHz) / 27_000_000 }

    /// Ordered by the clock reading.
    public static func < (a: ProgramClockReference, b: ProgramClockReference) -> Bool { a.ticks27MHz < b.ticks27MHz }

    /// The reading in seconds, e.g. "1.400000 s".
    public var description: String { "\(seconds) s" }

    /// Reads the six bytes of a PCR or OPCR field.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer, at offset: Int) {
        let b0 = UInt64(bytes[offset]), b1 = UInt64(bytes[offset + 1]), b2 = UInt64(bytes[offset + 2])
        let b3 = UInt64(bytes[offset + 3]), b4 = UInt64(bytes[offset + 4]), b5 = UInt64(bytes[offset + 5])
        base = b0 << 25 | b1 << 17 | b2 << 9 | b3 << 1 | b4 >> 7
        self.extension = UInt16((b4 & 1) << 8 | b5)
    }

    /// The six bytes of the field: the base, six reserved bits set, the extension.
    public var encoded: [UInt8] {
        [UInt8(truncatingIfNeeded: base >> 25), UInt8(truncatingIfNeeded: base >> 17), UInt8(truncatingIfNeeded: base >> 9),
         UInt8(truncatingIfNeeded: base >> 1), UInt8(truncatingIfNeeded: (base & 1) << 7) | 0x7E | UInt8(self.extension >> 8),
         UInt8(truncatingIfNeeded: self.extension)]
    }
}
