/// Emulation prevention (ITU-T H.264 §7.3.1, §7.4.1): the byte-stuffing that keeps start codes
/// out of NAL unit payloads.
///
/// Inside a NAL unit, every `00 00 0x` with x ≤ 3 is written as `00 00 03 0x`; the `03` is an
/// emulation_prevention_three_byte. ``unescape(_:)`` removes them (the RBSP), ``escape(_:)``
/// inserts them; the two round-trip exactly for any RBSP produced by an encoder.
public enum RBSP {
    /// Whether the bytes contain an emulation-prevention sequence `00 00 03`.
    @inlinable
    public static func containsEmulationPrevention(_ bytes: Span<UInt8>) -> Bool {
        var zeros = 0
        for i in bytes.indices {
            let b = bytes[unchecked: i]
            if b == 3 && zeros >= 2 { return true }
            zeros = b == 0 ? zeros &+ 1 : 0
        }
        return false
    }

    /// Removes emulation_prevention_three_byte from a NAL unit payload (EBSP → RBSP).
    ///
    /// A `03` is removed only when it follows two zero bytes; the zero count restarts after it,
    /// so `00 00 03 00 00 03` loses both.
    public static func unescape(_ bytes: Span<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var zeros = 0
        for i in bytes.indices {
            let b = bytes[unchecked: i]
            if b == 3 && zeros >= 2 { zeros = 0; continue }
            output.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return output
    }

    /// Inserts emulation_prevention_three_byte where the RBSP would otherwise contain
    /// `00 00 00`, `00 00 01`, `00 00 02` or `00 00 03`, and after a final `00 00` (cabac_zero_words) — a payload
    /// may not end in a zero byte followed by a start code, so a trailing `00` (only possible
    /// with cabac_zero_words) is protected too (§7.4.1).
    public static func escape(_ rbsp: Span<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(rbsp.count + rbsp.count / 64 + 1)
        var zeros = 0
        for i in rbsp.indices {
            let b = rbsp[unchecked: i]
            if zeros >= 2 && b <= 3 { output.append(3); zeros = 0 }
            output.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        if zeros >= 2 { output.append(3) }
        return output
    }
}

extension Array where Element == UInt8 {
    /// Convenience over ``RBSP/unescape(_:)`` for owned bytes.
    public var unescapedRBSP: [UInt8] { RBSP.unescape(span) }
}
