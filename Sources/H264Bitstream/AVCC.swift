/// Length-prefixed NAL unit framing (ISO/IEC 14496-15 §5.3.3, "AVCC"): each NAL unit is
/// preceded by its size as a big-endian integer of 1, 2 or 4 bytes (lengthSizeMinusOne + 1).
public enum AVCC {
    /// Checks a length size is one the format allows (an avcC's lengthSizeMinusOne of 2 is
    /// untrusted data, so this throws rather than traps).
    public static func validate(lengthSize: Int) throws(BitstreamError) {
        guard lengthSize == 1 || lengthSize == 2 || lengthSize == 4 else {
            throw BitstreamError(.invalidLength, "NAL length size \(lengthSize) is not 1, 2 or 4")
        }
    }

    /// Calls `body` with the range of each NAL unit in a length-prefixed buffer (a sample).
    /// A length running past the end, or a truncated length field, is an error at its offset.
    public static func forEachNALUnit(
        in bytes: Span<UInt8>,
        lengthSize: Int,
        _ body: (Range<Int>) throws(BitstreamError) -> Void
    ) throws(BitstreamError) {
        try validate(lengthSize: lengthSize)
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= lengthSize else {
                throw BitstreamError(.truncated, "\(lengthSize)-byte NAL length prefix cut off (\(bytes.count - offset) bytes left)", byteOffset: offset)
            }
            var length = 0
            for i in 0..<lengthSize { length = length << 8 | Int(bytes[offset + i]) }
            let start = offset + lengthSize
            guard length <= bytes.count - start else {
                throw BitstreamError(.invalidLength, "NAL length \(length) runs past the end of the buffer (\(bytes.count - start) bytes left)", byteOffset: offset)
            }
            if length > 0 { try body(start..<(start + length)) }
            offset = start + length
        }
    }

    /// The NAL unit ranges of a length-prefixed buffer.
    public static func nalUnitRanges(in bytes: Span<UInt8>, lengthSize: Int) throws(BitstreamError) -> [Range<Int>] {
        var result: [Range<Int>] = []
        try forEachNALUnit(in: bytes, lengthSize: lengthSize) { result.append($0) }
        return result
    }

    /// Appends one NAL unit with its length prefix. A NAL unit too long for the prefix (over 255
    /// bytes with 1, over 65535 with 2) is an error, never a silently wrapped length.
    public static func append(nalUnit: Span<UInt8>, lengthSize: Int, to output: inout [UInt8]) throws(BitstreamError) {
        try appendLengthPrefix(nalUnit.count, lengthSize: lengthSize, to: &output)
        nalUnit.withUnsafeBufferPointer { output.append(contentsOf: $0) }
    }

    /// Appends the length prefix of a `length`-byte NAL unit (whose bytes go elsewhere), with
    /// the checks of ``append(nalUnit:lengthSize:to:)``.
    public static func appendLengthPrefix(_ length: Int, lengthSize: Int, to output: inout [UInt8]) throws(BitstreamError) {
        try validate(lengthSize: lengthSize)
        guard lengthSize == 4 ? UInt64(length) <= UInt64(UInt32.max) : length < 1 << (8 * lengthSize) else {
            throw BitstreamError(.invalidLength, "a \(length)-byte NAL unit does not fit a \(lengthSize)-byte length prefix")
        }
        for i in stride(from: lengthSize - 1, through: 0, by: -1) { output.append(UInt8(truncatingIfNeeded: length >> (8 * i))) }
    }
}
