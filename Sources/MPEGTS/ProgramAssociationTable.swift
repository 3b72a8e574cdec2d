/// The program association table (ISO/IEC 13818-1 §2.4.4.3, Table 2-30), on PID 0: each
/// program's number and the PID of its program map table.
public struct ProgramAssociationTable: Sendable, Hashable {
    /// One program: its number and its PMT's PID.
    public struct Program: Sendable, Hashable {
        /// `program_number` (not 0).
        public var programNumber: UInt16
        /// `program_map_PID`.
        public var programMapPID: UInt16

        /// A program numbered `programNumber` whose PMT is on `programMapPID`.
        public init(programNumber: UInt16, programMapPID: UInt16) {
            self.programNumber = programNumber
            self.programMapPID = programMapPID
        }
    }

    /// The `table_id` of a PAT section.
    public static let tableID: UInt8 = 0x00

    /// `transport_stream_id`.
    public var transportStreamID: UInt16
    /// `version_number`.
    public var versionNumber: UInt8
    /// The programs, in the table's order.
    public var programs: [Program]
    /// `network_PID` (program number 0), when the table names one.
    public var networkPID: UInt16?

    /// A table with the given programs.
    public init(transportStreamID: UInt16 = 1, versionNumber: UInt8 = 0, programs: [Program], networkPID: UInt16? = nil) {
        self.transportStreamID = transportStreamID
        self.versionNumber = versionNumber
        self.programs = programs
        self.networkPID = networkPID
    }

    /// Reads the table from its section.
    public init(section: ProgramSpecificSection) throws(TransportStreamError) {
        guard section.tableID == Self.tableID else { throw TransportStreamError(.invalidSection, "table 0x\(String(section.tableID, radix: 16)) on the PAT's PID") }
        guard section.body.count % 4 == 0 else { throw TransportStreamError(.invalidSection, "a PAT of \(section.body.count) bytes: not a whole number of 4-byte entries") }
        transportStreamID = section.tableIDExtension
        versionNumber = section.versionNumber
        programs = []
        networkPID = nil
        let body = section.body
        for entry in stride(from: 0, to: body.count, by: 4) {
            let number = UInt16(body[entry]) << 8 | UInt16(body[entry + 1])
            let pid = UInt16(body[entry + 2] & 0x1F) << 8 | UInt16(body[entry + 3])
            if number == 0 { networkPID = pid } else { programs.append(Program(programNumber: number, programMapPID: pid)) }
        }
    }

    /// The table as a section.
    public var section: ProgramSpecificSection {
        var body: [UInt8] = []
        if let networkPID { body += [0, 0, 0xE0 | UInt8(networkPID >> 8), UInt8(networkPID & 0xFF)] }
        for program in programs {
            body += [UInt8(program.programNumber >> 8), UInt8(program.programNumber & 0xFF),
                     0xE0 | UInt8(program.programMapPID >> 8), UInt8(program.programMapPID & 0xFF)]
        }
        return ProgramSpecificSection(tableID: Self.tableID, tableIDExtension: transportStreamID, versionNumber: versionNumber, body: body)
    }
}
