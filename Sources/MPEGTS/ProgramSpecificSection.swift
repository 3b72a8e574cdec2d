/// One section of program specific information (ISO/IEC 13818-1 §2.4.4): the long form the
/// PAT and PMT use, with `section_syntax_indicator` set and a CRC-32 at its end.
public struct ProgramSpecificSection: Sendable, Hashable {
    /// `table_id`: 0x00 PAT, 0x01 CAT, 0x02 PMT.
    public var tableID: UInt8
    /// `table_id_extension`: the transport stream ID of a PAT, the program number of a PMT.
    public var tableIDExtension: UInt16
    /// `version_number` (5 bits): changes when the table does.
    public var versionNumber: UInt8
    /// `current_next_indicator`: the table applies now (not next).
    public var currentNextIndicator: Bool
    /// `section_number`.
    public var sectionNumber: UInt8
    /// `last_section_number`.
    public var lastSectionNumber: UInt8
    /// The bytes between the header and the CRC: the table's own fields.
    public var body: [UInt8]

    /// The longest section: `section_length` is at most 1021 for these tables (§2.4.4.5).
    public static let maximumSectionLength = 1021

    /// A section with the given fields.
    public init(tableID: UInt8, tableIDExtension: UInt16, versionNumber: UInt8 = 0, currentNextIndicator: Bool = true,
                sectionNumber: UInt8 = 0, lastSectionNumber: UInt8 = 0, body: [UInt8]) {
        self.tableID = tableID
        self.tableIDExtension = tableIDExtension
        self.versionNumber = versionNumber & 0x1F
        self.currentNextIndicator = currentNextIndicator
        self.sectionNumber = sectionNumber
        self.lastSectionNumber = lastSectionNumber
        self.body = body
    }

    /// Reads a whole section (from `table_id` to the end of its CRC), checking its length
    /// fields and its CRC-32.
    public init(parsing bytes: [UInt8]) throws(TransportStreamError) {
        guard bytes.count >= 12 else { throw TransportStreamError(.invalidSection, "a \(bytes.count)-byte section is shorter than its header and CRC (12 bytes)") }
        guard bytes[1] & 0x80 != 0 else { throw TransportStreamError(.invalidSection, "table 0x\(String(bytes[0], radix: 16)) without section_syntax_indicator") }
        let length = Int(bytes[1] & 0x0F) << 8 | Int(bytes[2])
        guard length + 3 == bytes.count else {
            throw TransportStreamError(.invalidSection, "section_length \(length) does not match the section's \(bytes.count - 3) bytes")
        }
        let stored = UInt32(bytes[bytes.count - 4]) << 24 | UInt32(bytes[bytes.count - 3]) << 16 | UInt32(bytes[bytes.count - 2]) << 8 | UInt32(bytes[bytes.count - 1])
        let computed = MPEG2CRC32.checksum(bytes[..<(bytes.count - 4)])
        guard stored == computed else {
            throw TransportStreamError(.invalidSection, "table 0x\(String(bytes[0], radix: 16)): CRC 0x\(String(stored, radix: 16)) where the bytes give 0x\(String(computed, radix: 16))")
        }
        tableID = bytes[0]
        tableIDExtension = UInt16(bytes[3]) << 8 | UInt16(bytes[4])
        versionNumber = (bytes[5] >> 1) & 0x1F
        currentNextIndicator = bytes[5] & 1 != 0
        sectionNumber = bytes[6]
        lastSectionNumber = bytes[7]
        body = Array(bytes[8..<(bytes.count - 4)])
    }

    /// The whole section, with its length fields and CRC-32.
    public var encoded: [UInt8] {
        let length = 5 + body.count + 4
        var bytes: [UInt8] = [tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF),
                              UInt8(tableIDExtension >> 8), UInt8(tableIDExtension & 0xFF),
                              0xC0 | versionNumber << 1 | (currentNextIndicator ? 1 : 0), sectionNumber, lastSectionNumber]
        bytes += body
        let crc = MPEG2CRC32.checksum(bytes[...])
        bytes += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        return bytes
    }
}
