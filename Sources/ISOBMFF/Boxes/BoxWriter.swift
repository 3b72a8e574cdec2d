public import MediaCore

/// Builds ISO BMFF / QuickTime boxes in memory, big-endian, back-patching each box's size
/// when its body is done (the swift-nio `writeLengthPrefixed` pattern).
public struct BoxWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty writer.
    public init() {}

    /// The number of bytes written.
    public var count: Int { bytes.count }

    /// Writes an 8-bit value.
    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    /// Writes a 16-bit value, big-endian.
    public mutating func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xFF)) }
    /// Writes the low 24 bits of `value`, big-endian.
    public mutating func u24(_ value: UInt32) { for shift in [16, 8, 0] { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) } }
    /// Writes a 32-bit value, big-endian.
    public mutating func u32(_ value: UInt32) { for shift in [24, 16, 8, 0] { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) } }
    /// Writes a 64-bit value, big-endian.
    public mutating func u64(_ value: UInt64) { u32(UInt32(value >> 32)); u32(UInt32(truncatingIfNeeded: value)) }
    /// Writes a 16-bit signed value, big-endian.
    public mutating func i16(_ value: Int16) { u16(UInt16(bitPattern: value)) }
    /// Writes a 32-bit signed value, big-endian.
    public mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    /// Writes a 64-bit signed value, big-endian.
    public mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    /// A field of `size` bytes (1, 2, 3, 4 or 8), big-endian, truncated to fit.
    public mutating func unsigned(_ value: UInt64, size: Int) {
        for index in (0..<size).reversed() { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
    }
    /// A field of 64 bits in version 1 of a box and 32 (truncated) in version 0.
    public mutating func versioned(_ value: UInt64, version: UInt8) {
        if version == 1 { u64(value) } else { u32(UInt32(truncatingIfNeeded: value)) }
    }

    /// A signed field of 64 bits in version 1 and 32 (truncated) in version 0.
    public mutating func versionedSigned(_ value: Int64, version: UInt8) {
        if version == 1 { i64(value) } else { i32(Int32(truncatingIfNeeded: value)) }
    }

    /// An entry count (the declared one when given) and the child boxes (`stsd`, `dref`).
    public mutating func countedChildren(_ boxes: [AnyBox], trailer: [UInt8], declaredCount: UInt32?) {
        u32(declaredCount ?? UInt32(boxes.count))
        for box in boxes { box.write(to: &self) }
        append(trailer)
    }

    /// The version and flags that start a full box's payload.
    public mutating func versionAndFlags(_ version: UInt8, _ flags: UInt32) {
        u8(version)
        u24(flags)
    }
    /// Writes a four-character code.
    public mutating func fourCC(_ code: FourCharCode) { u32(code.rawValue) }
    /// Writes `data` as it is.
    public mutating func append(_ data: [UInt8]) { bytes.append(contentsOf: data) }
    /// Writes `count` zero bytes.
    public mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
    /// A 16.16 fixed-point number.
    public mutating func fixed16(_ value: Double) { u32(UInt32(truncatingIfNeeded: Int64((value * 65536).rounded()))) }

    /// The unity matrix of `mvhd`/`tkhd`.
    public mutating func unityMatrix() {
        for value: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { u32(value) }
    }

    /// A box: size, type, then whatever `body` writes; the size is filled in afterwards.
    public mutating func box(_ type: FourCharCode, _ body: (inout BoxWriter) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        body(&self)
        patchSize(at: start)
    }

    /// A full box: a box whose body starts with a version byte and 24 bits of flags.
    public mutating func fullBox(_ type: FourCharCode, version: UInt8 = 0, flags: UInt32 = 0, _ body: (inout BoxWriter) -> Void) {
        box(type) { w in
            w.u8(version)
            w.u24(flags)
            body(&w)
        }
    }

    private mutating func patchSize(at start: Int) {
        let size = bytes.count - start
        precondition(size <= Int(UInt32.max), "an in-memory box over 4 GiB")
        for i in 0..<4 { bytes[start + i] = UInt8(truncatingIfNeeded: size >> (24 - 8 * i)) }
    }
}
