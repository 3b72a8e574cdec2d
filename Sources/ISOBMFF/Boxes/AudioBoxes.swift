public import Bitstream
public import MediaCore
public import MPEG4Audio

// Audio: ISO/IEC 14496-12 §12.2 (AudioSampleEntry, smhd), ISO/IEC 14496-14 §5.6 (esds), the
// QuickTime File Format's sound sample description (versions 1 and 2, `wave`, `frma`, `chan`),
// and sample groups (§8.9: `sgpd`, `sbgp`), which carry AAC's pre-roll.

/// An audio sample entry (`mp4a`; the same layout for `Opus`, `ac-3`, `ulaw`, ...): the fields
/// of an ISO AudioSampleEntry, or of a QuickTime sound description of version 1 or 2 (which
/// adds the packet and frame sizes, or a 64-bit rate), followed by child boxes (`esds`,
/// `wave`, `chan`, `btrt`). Written back byte for byte as read.
public struct AudioSampleEntry: BoxList {
    /// How the entry's child boxes parse.
    public static let childTable = BoxTable([
        "esds": ElementaryStreamDescriptorBox.self, "wave": SoundInformationBox.self, "btrt": BitRateBox.self,
    ])

    /// The box type: `mp4a`, or another codec's.
    public var type: FourCharCode
    /// The six reserved bytes of SampleEntry, as stored.
    public var reserved: [UInt8] = Array(repeating: 0, count: 6)
    /// data_reference_index: the `dref` entry locating the data, 1-based.
    public var dataReferenceIndex: UInt16 = 1
    /// The QuickTime sound description version (0, 1 or 2); ISO reserved (0).
    public var version: UInt16 = 0
    /// QuickTime revision level; ISO reserved.
    public var revision: UInt16 = 0
    /// QuickTime vendor; ISO reserved.
    public var vendor: UInt32 = 0
    /// channelcount (for version 2: 3, with the count in ``version2``).
    public var channelCount: UInt16
    /// samplesize: 16.
    public var sampleSize: UInt16 = 16
    /// QuickTime compression ID (-2 for compressed audio of version 1); ISO pre_defined.
    public var compressionID: Int16 = 0
    /// QuickTime packet size; ISO reserved.
    public var packetSize: UInt16 = 0
    /// samplerate, 16.16 (the rate above 65535 Hz does not fit: 0 then, and a version 2 entry
    /// has its own).
    public var sampleRate: UInt32
    /// The QuickTime version 1 fields.
    public var version1: PacketSizes?
    /// A QuickTime version 1 sound description's sizes: samples per packet, bytes per packet,
    /// per frame, per sample.
    public struct PacketSizes: Sendable, Hashable {
        /// samplesPerPacket (AAC: 1024).
        public var samplesPerPacket: UInt32
        /// bytesPerPacket (0: variable).
        public var bytesPerPacket: UInt32
        /// bytesPerFrame (0: variable).
        public var bytesPerFrame: UInt32
        /// bytesPerSample (2).
        public var bytesPerSample: UInt32

        /// Sizes of these values.
        public init(samplesPerPacket: UInt32, bytesPerPacket: UInt32, bytesPerFrame: UInt32, bytesPerSample: UInt32) {
            self.samplesPerPacket = samplesPerPacket
            self.bytesPerPacket = bytesPerPacket
            self.bytesPerFrame = bytesPerFrame
            self.bytesPerSample = bytesPerSample
        }
    }
    /// The QuickTime version 2 fields, as their 36 bytes.
    public var version2: [UInt8]?
    /// The child boxes (`esds`, `wave`, `chan`, `btrt`, ...), in file order.
    public var children: [AnyBox]
    /// Bytes after the last child, fewer than a box header.
    public var trailer: [UInt8] = []

    /// An ISO entry (version 0) of `type` for `channelCount` channels at `sampleRate` Hz.
    public init(type: FourCharCode, channelCount: Int, sampleRate: Int, children: [AnyBox]) {
        self.type = type
        self.channelCount = UInt16(clamping: channelCount)
        self.sampleRate = sampleRate <= 0xFFFF ? UInt32(sampleRate) << 16 : 0
        self.children = children
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        reserved = try reader.bytes(6, "reserved")
        dataReferenceIndex = try reader.u16("data_reference_index")
        version = try reader.u16("version")
        revision = try reader.u16("revision")
        vendor = try reader.u32("vendor")
        channelCount = try reader.u16("channelcount")
        sampleSize = try reader.u16("samplesize")
        compressionID = try reader.i16("pre_defined")
        packetSize = try reader.u16("reserved")
        sampleRate = try reader.u32("samplerate")
        switch version {
        case 1:
            version1 = PacketSizes(samplesPerPacket: try reader.u32("samplesPerPacket"), bytesPerPacket: try reader.u32("bytesPerPacket"),
                                   bytesPerFrame: try reader.u32("bytesPerFrame"), bytesPerSample: try reader.u32("bytesPerSample"))
        case 2:
            version2 = try reader.bytes(36, "sound description version 2")
        default:
            break
        }
        (children, trailer) = try reader.children(Self.childTable)
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.append(reserved)
        writer.u16(dataReferenceIndex)
        writer.u16(version); writer.u16(revision); writer.u32(vendor)
        writer.u16(channelCount); writer.u16(sampleSize)
        writer.i16(compressionID); writer.u16(packetSize)
        writer.u32(sampleRate)
        if version == 1, let v1 = version1 {
            writer.u32(v1.samplesPerPacket); writer.u32(v1.bytesPerPacket); writer.u32(v1.bytesPerFrame); writer.u32(v1.bytesPerSample)
        } else if version == 2, let v2 = version2 {
            writer.append(v2)
        }
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }

    /// The `esds` of the entry, or of its QuickTime `wave` box.
    public var elementaryStreamDescriptor: ElementaryStreamDescriptorBox? {
        first(ElementaryStreamDescriptorBox.self) ?? first(SoundInformationBox.self)?.first(ElementaryStreamDescriptorBox.self)
    }

    /// The rate in Hz: the 16.16 field's integer part, or a version 2 entry's 64-bit rate.
    public var samplesPerSecond: Int {
        if version == 2, let v2 = version2, v2.count >= 12 {
            let bits = v2[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let rate = Double(bitPattern: bits)
            return rate.isFinite && rate > 0 && rate < 1e7 ? Int(rate) : 0
        }
        return Int(sampleRate >> 16)
    }

    /// The channels: the field, or a version 2 entry's count.
    public var channels: Int {
        if version == 2, let v2 = version2, v2.count >= 16 { return Int(v2[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) }
        return Int(channelCount)
    }
}

/// `esds` (ISO/IEC 14496-14 §5.6): a full box holding an ES_Descriptor, kept as its bytes so
/// that it writes back as read; ``descriptor()`` reads it.
public struct ElementaryStreamDescriptorBox: Box {
    /// The box type, `esds`.
    public var type: FourCharCode { "esds" }
    /// The full box version (0).
    public var version: UInt8 = 0
    /// The full box flags (0).
    public var flags: UInt32 = 0
    /// The ES_Descriptor's bytes.
    public var descriptorBytes: [UInt8]

    /// A box holding `descriptor`.
    public init(_ descriptor: ElementaryStreamDescriptor) { descriptorBytes = descriptor.serialized }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        descriptorBytes = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.append(descriptorBytes)
    }

    /// The ES_Descriptor, read.
    public func descriptor() throws(BitstreamError) -> ElementaryStreamDescriptor { try ElementaryStreamDescriptor(bytes: descriptorBytes) }
}

extension ContainerKinds {
    /// Tells SoundInformationBox apart: its type, `wave`, and how its children parse.
    public enum SoundInformation: ContainerKind {
        /// `wave`.
        public static let type: FourCharCode = "wave"
        /// How the children of `wave` parse.
        public static var childTable: BoxTable { BoxTable(["frma": FormatBox.self, "esds": ElementaryStreamDescriptorBox.self]) }
    }
}

/// The QuickTime `wave` box of a sound description: `frma`, the codec's own box, an `esds` for
/// AAC, and a terminator.
public typealias SoundInformationBox = Container<ContainerKinds.SoundInformation>

/// `frma` (QuickTime, and ISO/IEC 14496-12 §8.12.2): the original format of a sample entry.
public struct FormatBox: Box {
    /// The box type, `frma`.
    public var type: FourCharCode { "frma" }
    /// data_format: the codec's four-character code.
    public var dataFormat: FourCharCode

    /// A box naming `dataFormat`.
    public init(dataFormat: FourCharCode) { self.dataFormat = dataFormat }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) { dataFormat = try reader.fourCC("data_format") }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) { writer.fourCC(dataFormat) }
}

/// `smhd` (§12.2.2): the sound media header.
public struct SoundMediaHeaderBox: Box {
    /// The box type, `smhd`.
    public var type: FourCharCode { "smhd" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// balance, 8.8 (0: centre).
    public var balance: Int16 = 0
    /// reserved.
    public var reserved: UInt16 = 0

    /// A centred sound header.
    public init() {}

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        balance = try reader.i16("balance")
        reserved = try reader.u16("reserved")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.i16(balance)
        writer.u16(reserved)
    }
}

/// `sgpd` (§8.9.3): the descriptions of a sample grouping, each kept as its bytes (for `roll`:
/// a signed 16-bit roll distance; ``rollDistances`` reads them).
public struct SampleGroupDescriptionBox: Box {
    /// The box type, `sgpd`.
    public var type: FourCharCode { "sgpd" }
    /// The full box version (1 writes a default length; 0 is deprecated, 2 adds a default index).
    public var version: UInt8 = 1
    /// The full box flags.
    public var flags: UInt32 = 0
    /// grouping_type: `roll`, `prol`, `sync`, ...
    public var groupingType: FourCharCode
    /// default_length (version 1 and later): 0 when each entry gives its own length.
    public var defaultLength: UInt32 = 0
    /// default_sample_description_index (version 2 and later).
    public var defaultSampleDescriptionIndex: UInt32 = 0
    /// The entries' bytes. A version 0 box of a grouping type whose entries' size is not known
    /// here holds all of them as one run of bytes, and ``undelimitedEntryCount`` their number.
    public var entries: [[UInt8]]
    /// For a version 0 box whose entries could not be told apart (no lengths in the box, and a
    /// grouping type other than `roll`/`prol`): the entry_count read, written back as it was.
    public private(set) var undelimitedEntryCount: UInt32?

    /// The most entries read.
    public static let maximumEntries = 1 << 20

    /// A `roll` grouping of one entry per distance (AAC: -1; Opus: -4 at 48 kHz).
    public init(rollDistances: [Int16]) {
        groupingType = "roll"
        defaultLength = 2
        entries = rollDistances.map { [UInt8(truncatingIfNeeded: UInt16(bitPattern: $0) >> 8), UInt8(truncatingIfNeeded: UInt16(bitPattern: $0))] }
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        groupingType = try reader.fourCC("grouping_type")
        // ISO/IEC 14496-12 §8.9.3.2: default_length from version 1 on, the default index from 2.
        if version >= 1 { defaultLength = try reader.u32("default_length") }
        if version >= 2 { defaultSampleDescriptionIndex = try reader.u32("default_sample_description_index") }
        let count = Int(try reader.u32("entry_count"))
        let knownLength = groupingType == "roll" || groupingType == "prol"
        // The fewest bytes one entry takes; 0 when version 0 gives no way to tell entries apart.
        let smallest = version >= 1 ? (defaultLength == 0 ? 4 : Int(defaultLength)) : (knownLength ? 2 : 0)
        guard count <= Self.maximumEntries, smallest == 0 || count <= reader.remaining / smallest else {
            throw ContainerError(.invalidBox, "sgpd entry_count \(count): more than the \(reader.remaining) bytes left can hold")
        }
        guard smallest > 0 else {
            // Version 0 gives no lengths: only a roll grouping's 2 bytes can be known.
            entries = count == 0 && reader.remaining == 0 ? [] : [reader.rest()]
            undelimitedEntryCount = UInt32(count)
            return
        }
        var read: [[UInt8]] = []
        read.reserveCapacity(count)
        for _ in 0..<count {
            var length = smallest
            if version >= 1 && defaultLength == 0 { length = Int(try reader.u32("description_length")) }
            read.append(try reader.bytes(length, "sample group entry"))
        }
        entries = read
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.fourCC(groupingType)
        if version >= 1 { writer.u32(defaultLength) }
        if version >= 2 { writer.u32(defaultSampleDescriptionIndex) }
        writer.u32(undelimitedEntryCount ?? UInt32(entries.count))
        for entry in entries {
            if version >= 1 && defaultLength == 0 { writer.u32(UInt32(entry.count)) }
            writer.append(entry)
        }
    }

    /// For a `roll` or `prol` grouping, each entry's roll distance.
    public var rollDistances: [Int16] {
        entries.compactMap { $0.count >= 2 ? Int16(bitPattern: UInt16($0[0]) << 8 | UInt16($0[1])) : nil }
    }
}

/// `sbgp` (§8.9.2): which samples belong to which group description, as runs.
public struct SampleToGroupBox: Box {
    /// One run: `sampleCount` samples in description `groupDescriptionIndex` (0: none).
    public struct Entry: Sendable, Hashable {
        /// sample_count.
        public var sampleCount: UInt32
        /// group_description_index (1-based; 0: the samples are in no group of this type).
        public var groupDescriptionIndex: UInt32

        /// A run of these values.
        public init(sampleCount: UInt32, groupDescriptionIndex: UInt32) {
            self.sampleCount = sampleCount
            self.groupDescriptionIndex = groupDescriptionIndex
        }
    }

    /// The box type, `sbgp`.
    public var type: FourCharCode { "sbgp" }
    /// The full box version (1 adds a grouping type parameter).
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// grouping_type.
    public var groupingType: FourCharCode
    /// grouping_type_parameter (version 1).
    public var groupingTypeParameter: UInt32 = 0
    /// The runs.
    public var entries: [Entry]

    /// The most runs read.
    public static let maximumEntries = 1 << 24

    /// A grouping of `groupingType` with these runs.
    public init(groupingType: FourCharCode, entries: [Entry]) {
        self.groupingType = groupingType
        self.entries = entries
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        groupingType = try reader.fourCC("grouping_type")
        if version == 1 { groupingTypeParameter = try reader.u32("grouping_type_parameter") }
        let count = Int(try reader.u32("entry_count"))
        guard count <= min(Self.maximumEntries, reader.remaining / 8) else {
            throw ContainerError(.invalidBox, "sbgp entry_count \(count): more than the \(reader.remaining) bytes left can hold")
        }
        var read: [Entry] = []
        read.reserveCapacity(count)
        for _ in 0..<count { read.append(Entry(sampleCount: try reader.u32("sample_count"), groupDescriptionIndex: try reader.u32("group_description_index"))) }
        entries = read
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.fourCC(groupingType)
        if version == 1 { writer.u32(groupingTypeParameter) }
        writer.u32(UInt32(entries.count))
        for entry in entries {
            writer.u32(entry.sampleCount)
            writer.u32(entry.groupDescriptionIndex)
        }
    }
}
