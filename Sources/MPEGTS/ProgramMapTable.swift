/// A program map table (ISO/IEC 13818-1 §2.4.4.8, Table 2-33): the elementary streams of one
/// program, their types and PIDs, and the PID carrying the program's clock.
public struct ProgramMapTable: Sendable, Hashable {
    /// One elementary stream of the program.
    public struct ElementaryStream: Sendable, Hashable {
        /// `stream_type`: what the stream carries.
        public var streamType: StreamType
        /// `elementary_PID`.
        public var pid: UInt16
        /// The stream's descriptors (`ES_info`).
        public var descriptors: [Descriptor]

        /// A stream of `streamType` on `pid`.
        public init(streamType: StreamType, pid: UInt16, descriptors: [Descriptor] = []) {
            self.streamType = streamType
            self.pid = pid
            self.descriptors = descriptors
        }
    }

    /// The `table_id` of a PMT section.
    public static let tableID: UInt8 = 0x02

    /// `program_number`.
    public var programNumber: UInt16
    /// `version_number`.
    public var versionNumber: UInt8
    /// `PCR_PID`: the PID whose adaptation fields carry the program clock (0x1FFF: none).
    public var pcrPID: UInt16
    /// The program's descriptors (`program_info`).
    public var programDescriptors: [Descriptor]
    /// The elementary streams, in the table's order.
    public var streams: [ElementaryStream]

    /// A table with the given streams.
    public init(programNumber: UInt16, versionNumber: UInt8 = 0, pcrPID: UInt16, programDescriptors: [Descriptor] = [], streams: [ElementaryStream]) {
        self.programNumber = programNumber
        self.versionNumber = versionNumber
        self.pcrPID = pcrPID
        self.programDescriptors = programDescriptors
        self.streams = streams
    }

    /// Reads the table from its section.
    public init(section: ProgramSpecificSection) throws(TransportStreamError) {
        guard section.tableID == Self.tableID else { throw TransportStreamError(.invalidSection, "table 0x\(String(section.tableID, radix: 16)) where a PMT was expected") }
        let body = section.body
        guard body.count >= 4 else { throw TransportStreamError(.invalidSection, "a PMT of \(body.count) bytes (at least 4)") }
        programNumber = section.tableIDExtension
        versionNumber = section.versionNumber
        pcrPID = UInt16(body[0] & 0x1F) << 8 | UInt16(body[1])
        let infoLength = Int(body[2] & 0x0F) << 8 | Int(body[3])
        guard 4 + infoLength <= body.count else { throw TransportStreamError(.invalidSection, "program_info_length \(infoLength) runs past the PMT's \(body.count) bytes") }
        programDescriptors = try Descriptor.list(in: body[4..<(4 + infoLength)])
        streams = []
        var offset = 4 + infoLength
        while offset < body.count {
            guard offset + 5 <= body.count else { throw TransportStreamError(.invalidSection, "a PMT stream entry cut off at byte \(offset) of \(body.count)") }
            let type = StreamType(rawValue: body[offset])
            let pid = UInt16(body[offset + 1] & 0x1F) << 8 | UInt16(body[offset + 2])
            let length = Int(body[offset + 3] & 0x0F) << 8 | Int(body[offset + 4])
            offset += 5
            guard offset + length <= body.count else { throw TransportStreamError(.invalidSection, "ES_info_length \(length) of PID \(pid) runs past the PMT") }
            streams.append(ElementaryStream(streamType: type, pid: pid, descriptors: try Descriptor.list(in: body[offset..<(offset + length)])))
            offset += length
        }
    }

    /// The table as a section.
    public var section: ProgramSpecificSection {
        var body: [UInt8] = [0xE0 | UInt8(pcrPID >> 8), UInt8(pcrPID & 0xFF)]
        let info = programDescriptors.flatMap(\.encoded)
        body += [0xF0 | UInt8(info.count >> 8), UInt8(info.count & 0xFF)] + info
        for stream in streams {
            let descriptors = stream.descriptors.flatMap(\.encoded)
            body += [stream.streamType.rawValue, 0xE0 | UInt8(stream.pid >> 8), UInt8(stream.pid & 0xFF),
                     0xF0 | UInt8(descriptors.count >> 8), UInt8(descriptors.count & 0xFF)] + descriptors
        }
        return ProgramSpecificSection(tableID: Self.tableID, tableIDExtension: programNumber, versionNumber: versionNumber, body: body)
    }
}
