/// `samplingFrequencyIndex` (ISO/IEC 14496-3 §1.6.3.4, Table 1.18): the rates an MPEG-4 Audio
/// configuration and an ADTS header name by a 4-bit index; index 15 escapes to an explicit
/// 24-bit rate.
public enum SamplingFrequency {
    /// The rates of indices 0 to 12, Hz (13 and 14 are reserved).
    public static let table: [Int] = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]

    /// The index that escapes to an explicit 24-bit rate.
    public static let escapeIndex: UInt8 = 15

    /// The rate of `index`, nil for a reserved index (13, 14) or the escape.
    public static func rate(index: UInt8) -> Int? { Int(index) < table.count ? table[Int(index)] : nil }

    /// The index of `rate` when the table has it.
    public static func index(of rate: Int) -> UInt8? { table.firstIndex(of: rate).map(UInt8.init) }
}
