/// The CRC-32 of MPEG-2 sections (ISO/IEC 13818-1 Annex A): polynomial 0x04C11DB7, initial
/// value 0xFFFFFFFF, no reflection, no final XOR. A whole section including its CRC gives 0.
public enum MPEG2CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index) << 24
        for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        return crc
    }

    /// The CRC of `bytes`.
    public static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }
}
