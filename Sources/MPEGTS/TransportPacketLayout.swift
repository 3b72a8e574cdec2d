/// How transport packets are laid out in a file or stream: plain 188-byte packets, 192-byte
/// packets with a 4-byte arrival timestamp before each (M2TS, Blu-ray and AVCHD), or 204-byte
/// packets with 16 bytes of Reed-Solomon parity after each (DVB-ASI captures).
public enum TransportPacketLayout: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 188-byte packets (`.ts`).
    case plain = 188
    /// 192-byte packets: a 4-byte `TP_extra_header` (2 bits of copy permission, a 30-bit
    /// arrival time stamp at 27 MHz) before each packet (`.m2ts`, `.mts`).
    case timestamped = 192
    /// 204-byte packets: 16 bytes of parity after each.
    case withParity = 204

    /// The bytes from one packet's sync byte to the next.
    public var stride: Int { rawValue }
    /// Bytes before the sync byte in each unit.
    public var prefixSize: Int { self == .timestamped ? 4 : 0 }

    /// Packets in a row whose sync bytes a detection wants to see.
    public static let syncRun = 5

    /// The layout the first bytes of `bytes` show, with the offset of the first sync byte: a
    /// run of ``syncRun`` sync bytes (fewer when `bytes` holds fewer packets, at least two)
    /// one stride apart, starting within the first stride. By content only, never by a name.
    public static func detect(in bytes: UnsafeRawBufferPointer) -> (layout: TransportPacketLayout, firstSync: Int)? {
        // The plainest layout first: 192 and 204 strides never show a run of 188.
        for layout in [TransportPacketLayout.plain, .timestamped, .withParity] {
            let available = bytes.count / layout.stride
            let run = min(syncRun, available)
            guard run >= 2 || (run == 1 && bytes.count == layout.stride) else { continue }
            for start in 0..<layout.stride where start + (run - 1) * layout.stride < bytes.count {
                var matches = true
                for packet in 0..<run where bytes[start + packet * layout.stride] != TransportPacketHeader.syncByte {
                    matches = false
                    break
                }
                if matches { return (layout, start) }
            }
        }
        return nil
    }

    /// The layout of a file or stream whose first bytes are `prefix` (see ``detect(in:)``).
    public static func detect(in prefix: [UInt8]) -> (layout: TransportPacketLayout, firstSync: Int)? {
        prefix.withUnsafeBytes { detect(in: $0) }
    }

    /// "188-byte packets", "192-byte packets (M2TS)", "204-byte packets".
    public var description: String {
        switch self {
        case .plain: "188-byte packets"
        case .timestamped: "192-byte packets (M2TS)"
        case .withParity: "204-byte packets"
        }
    }
}
