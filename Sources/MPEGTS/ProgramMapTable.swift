public import MediaCore

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

extension ProgramMapTable.ElementaryStream {
    /// `registration_descriptor` (tag 5) `format_identifier`, when the stream has one ("AC-3",
    /// "Opus", "ID3 ").
    public var registration: FourCharCode? {
        guard let found = descriptors.first(where: { $0.tag == 5 && $0.data.count >= 4 }) else { return nil }
        return FourCharCode(rawValue: found.data.prefix(4).reduce(0) { $0 << 8 | UInt32($1) })
    }

    /// The stream's language, from its `ISO_639_language_descriptor` (tag 10): a lowercase
    /// three-letter code, nil when absent or undetermined (`und`).
    public var language: String? {
        guard let found = descriptors.first(where: { $0.tag == 10 && $0.data.count >= 3 }) else { return nil }
        let code = String(decoding: found.data.prefix(3), as: UTF8.self).lowercased()
        return code == "und" || !code.allSatisfy({ $0.isLetter && $0.isASCII }) ? nil : code
    }

    /// The kind of media the stream carries, by its type and descriptors: H.264, H.265 and MPEG
    /// video; AAC (ADTS or LATM), MPEG audio, AC-3, E-AC-3 (ATSC types, or private data with a
    /// DVB AC-3/E-AC-3 descriptor or an AC-3/Opus registration) and Opus as audio; DVB subtitles
    /// and teletext as subtitles; timed metadata (ID3) as metadata; anything else as data.
    public var mediaType: MediaType {
        switch streamType {
        case .h264, .h265, .mpeg1Video, .mpeg2Video, .mpeg4Video: return .video
        case .aacADTS, .aacLATM, .mpeg1Audio, .mpeg2Audio, .ac3, .eac3: return .audio
        case .metadata: return .metadata
        case .privateData:
            if descriptors.contains(where: { $0.tag == 0x6A || $0.tag == 0x7A }) { return .audio }  // DVB AC-3, enhanced AC-3
            if let registration, ["AC-3", "EAC3", "Opus"].contains(registration.description) { return .audio }
            if descriptors.contains(where: { $0.tag == 0x59 || $0.tag == 0x56 }) { return .subtitle }  // DVB subtitling, teletext
            if registration?.description == "ID3 " { return .metadata }
            return MediaType(rawValue: "data")
        default:
            return MediaType(rawValue: "data")
        }
    }

    /// A name for messages: "AAC", "AC-3", "Opus", "DVB subtitles", or the stream type.
    public var codecName: String {
        switch streamType {
        case .h264: return "H.264"
        case .h265: return "H.265"
        case .aacADTS: return "AAC"
        case .aacLATM: return "AAC (LATM)"
        case .mpeg1Audio, .mpeg2Audio: return "MPEG audio (MP2/MP3)"
        case .ac3: return "AC-3"
        case .eac3: return "E-AC-3"
        case .metadata: return "timed metadata"
        case .privateData:
            if descriptors.contains(where: { $0.tag == 0x6A }) { return "AC-3" }
            if descriptors.contains(where: { $0.tag == 0x7A }) { return "E-AC-3" }
            if let registration, registration.isPrintable { return String(registration.description.reversed().drop { $0 == " " }.reversed()) }
            if descriptors.contains(where: { $0.tag == 0x59 }) { return "DVB subtitles" }
            if descriptors.contains(where: { $0.tag == 0x56 }) { return "teletext" }
            return "private data"
        default: return streamType.description
        }
    }
}
