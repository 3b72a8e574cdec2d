public import MediaCore

// The sample table: ISO/IEC 14496-12 §8.5–8.7.

/// `stbl`: the sample table.
public typealias SampleTableBox = Container<ContainerKinds.SampleTable>

/// `stsd`: the sample descriptions (sample entries), numbered from 1.
public struct SampleDescriptionBox: Box {
    /// How sample entries parse: H.264 visual entries, `mp4a` and G.711 (`ulaw`, `alaw`) audio
    /// entries and timecode entries; any other entry is kept as its bytes.
    public static let entryTable = BoxTable([
        "avc1": VisualSampleEntry.self, "avc3": VisualSampleEntry.self, "mp4a": AudioSampleEntry.self,
        "ulaw": AudioSampleEntry.self, "alaw": AudioSampleEntry.self,
        "tmcd": TimecodeSampleEntry.self, "tc64": TimecodeSampleEntry.self,
    ])

    /// The box type, `stsd`.
    public var type: FourCharCode { "stsd" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The sample entries, in order: ``VisualSampleEntry``, ``AudioSampleEntry``, ``TimecodeSampleEntry`` or ``UnknownBox``.
    public var entries: [AnyBox]
    /// Bytes after the last entry, fewer than a box header.
    public var trailer: [UInt8] = []
    /// The entry_count as stored when it disagrees with the entries found (a damaged file), so
    /// the box writes back as it was read; nil when it is the number of entries.
    public var declaredEntryCount: UInt32?

    /// A box holding `entries`, numbered from 1 in order.
    public init(entries: [AnyBox]) { self.entries = entries }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        (entries, trailer, declaredEntryCount) = try reader.countedChildren(Self.entryTable, "stsd")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.countedChildren(entries, trailer: trailer, declaredCount: declaredEntryCount)
    }
}

/// A run of samples with one value (`stts`, `ctts`).
public struct SampleRun<Value: Sendable & Hashable>: Sendable, Hashable {
    /// The number of consecutive samples with ``value``.
    public var count: UInt32
    /// The value the run's samples share.
    public var value: Value
    /// A run of `count` samples of `value`.
    public init(count: UInt32, value: Value) {
        self.count = count
        self.value = value
    }
}

extension Array {
    /// Appends one sample's value to runs, extending the last run when it has the same value.
    mutating func appendSample<Value>(_ value: Value) where Element == SampleRun<Value> {
        if let last = indices.last, self[last].value == value, self[last].count < UInt32.max {
            self[last].count += 1
        } else {
            append(SampleRun(count: 1, value: value))
        }
    }
}

/// `stts`: decode-time deltas (sample durations), as runs.
public struct TimeToSampleBox: Box {
    /// The box type, `stts`.
    public var type: FourCharCode { "stts" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// Runs of sample_count samples with the same sample_delta (duration), in the media timescale.
    public var entries: [SampleRun<UInt32>]

    /// A box holding `entries`.
    public init(entries: [SampleRun<UInt32>]) { self.entries = entries }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "stts")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count { entries.append(SampleRun(count: try reader.u32("sample_count"), value: try reader.u32("sample_delta"))) }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { writer.u32(entry.count); writer.u32(entry.value) }
    }
}

/// `ctts`: composition offsets (presentation minus decode time), as runs. Version 0 offsets
/// are unsigned, but writers put negative ones there too: they are read signed, as FFmpeg does.
public struct CompositionOffsetBox: Box {
    /// The box type, `ctts`.
    public var type: FourCharCode { "ctts" }
    /// The full box version: 1 when offsets are signed.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// Runs of sample_count samples with the same sample_offset, in the media timescale.
    public var entries: [SampleRun<Int32>]

    /// Offsets; version 1 (signed) when `signed`.
    public init(entries: [SampleRun<Int32>], signed: Bool) {
        self.entries = entries
        version = signed ? 1 : 0
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "ctts")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count { entries.append(SampleRun(count: try reader.u32("sample_count"), value: try reader.i32("sample_offset"))) }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { writer.u32(entry.count); writer.i32(entry.value) }
    }
}

/// `cslg`: how signed composition offsets map to the presentation timeline (§8.6.1.4).
public struct CompositionToDecodeBox: Box {
    /// The box type, `cslg`.
    public var type: FourCharCode { "cslg" }
    /// The full box version: 1 when the fields take 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// compositionToDTSShift: added to composition times so no decode time follows its presentation.
    public var compositionToDTSShift: Int64
    /// leastDecodeToDisplayDelta: the smallest composition offset in the track.
    public var leastDecodeToDisplayDelta: Int64
    /// greatestDecodeToDisplayDelta: the largest composition offset in the track.
    public var greatestDecodeToDisplayDelta: Int64
    /// compositionStartTime: the smallest presentation time in the track.
    public var compositionStartTime: Int64
    /// compositionEndTime: the largest presentation time plus its sample's duration.
    public var compositionEndTime: Int64

    /// A box of the given values; version 1 when one needs 64 bits.
    public init(compositionToDTSShift: Int64, leastDecodeToDisplayDelta: Int64, greatestDecodeToDisplayDelta: Int64,
                compositionStartTime: Int64, compositionEndTime: Int64) {
        self.compositionToDTSShift = compositionToDTSShift
        self.leastDecodeToDisplayDelta = leastDecodeToDisplayDelta
        self.greatestDecodeToDisplayDelta = greatestDecodeToDisplayDelta
        self.compositionStartTime = compositionStartTime
        self.compositionEndTime = compositionEndTime
        let values = [compositionToDTSShift, leastDecodeToDisplayDelta, greatestDecodeToDisplayDelta, compositionStartTime, compositionEndTime]
        version = values.allSatisfy { Int32(exactly: $0) != nil } ? 0 : 1
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        var values: [Int64] = []
        for _ in 0..<5 { values.append(try reader.versionedSigned(version, "cslg field")) }
        compositionToDTSShift = values[0]
        leastDecodeToDisplayDelta = values[1]
        greatestDecodeToDisplayDelta = values[2]
        compositionStartTime = values[3]
        compositionEndTime = values[4]
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        for value in [compositionToDTSShift, leastDecodeToDisplayDelta, greatestDecodeToDisplayDelta, compositionStartTime, compositionEndTime] {
            writer.versionedSigned(value, version: version)
        }
    }
}

/// `stss`: the sync samples, by number from 1 (absent: every sample is a sync sample).
public struct SyncSampleBox: Box {
    /// The box type, `stss`.
    public var type: FourCharCode { "stss" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// sample_number of each sync sample, 1-based, increasing.
    public var sampleNumbers: [UInt32]

    /// A box listing `sampleNumbers`.
    public init(sampleNumbers: [UInt32]) { self.sampleNumbers = sampleNumbers }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 4, "stss")
        sampleNumbers = []
        sampleNumbers.reserveCapacity(Int(count))
        for _ in 0..<count { sampleNumbers.append(try reader.u32("sample_number")) }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(sampleNumbers.count))
        for number in sampleNumbers { writer.u32(number) }
    }
}

/// `sdtp`: one byte per sample: is_leading, sample_depends_on, sample_is_depended_on,
/// sample_has_redundancy, two bits each.
public struct SampleDependencyTypeBox: Box {
    /// The box type, `sdtp`.
    public var type: FourCharCode { "sdtp" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// One dependency byte per sample, in decoding order.
    public var entries: [UInt8]

    /// A box holding `entries`.
    public init(entries: [UInt8]) { self.entries = entries }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        entries = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.append(entries)
    }

    /// The byte for a sample with these attachments (is_leading and redundancy unknown).
    public static func entry(_ attachments: SampleAttachments) -> UInt8 {
        let dependsOn: UInt8 = attachments.dependsOnOthers.map { $0 ? 1 : 2 } ?? 0
        let dependedOn: UInt8 = attachments.isDependedOnByOthers.map { $0 ? 1 : 2 } ?? 0
        return dependsOn << 4 | dependedOn << 2
    }
}

/// `stsz`: sample sizes, one constant or one per sample. A constant size is kept as it is
/// (not expanded here: its count is not bounded by the box's bytes).
public struct SampleSizeBox: Box {
    /// The box type, `stsz`.
    public var type: FourCharCode { "stsz" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The size of every sample, or 0 when ``sizes`` lists them.
    public var constantSize: UInt32
    /// sample_count: the number of samples in the track.
    public var sampleCount: UInt32
    /// The sizes, when ``constantSize`` is 0.
    public var sizes: [UInt32]

    /// One size per sample.
    public init(sizes: [UInt32]) {
        constantSize = 0
        sampleCount = UInt32(sizes.count)
        self.sizes = sizes
    }

    /// `count` samples of `size` bytes each.
    public init(constantSize size: UInt32, count: UInt32) {
        constantSize = size
        sampleCount = count
        sizes = []
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        constantSize = try reader.u32("sample_size")
        sampleCount = try reader.u32("sample_count")
        sizes = []
        if constantSize == 0 {
            try reader.checkEntries(sampleCount, size: 4, "stsz")
            sizes.reserveCapacity(Int(sampleCount))
            for _ in 0..<sampleCount { sizes.append(try reader.u32("entry_size")) }
        }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(constantSize)
        writer.u32(sampleCount)
        if constantSize == 0 { for size in sizes { writer.u32(size) } }
    }
}

/// `stz2`: compact sample sizes of 4, 8 or 16 bits.
public struct CompactSampleSizeBox: Box {
    /// The box type, `stz2`.
    public var type: FourCharCode { "stz2" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The reserved 24 bits before the field size, as stored.
    public var reserved: UInt32 = 0
    /// field_size: bits per entry, 4, 8 or 16.
    public var fieldSize: UInt8
    /// The sample sizes, one per sample.
    public var sizes: [UInt32]

    /// A box of `sizes` in fields of `fieldSize` bits (4, 8 or 16); larger sizes are truncated when written.
    public init(fieldSize: UInt8, sizes: [UInt32]) {
        self.fieldSize = fieldSize
        self.sizes = sizes
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        reserved = try reader.u24("reserved")
        fieldSize = try reader.u8("field_size")
        let count = try reader.u32("sample_count")
        guard [4, 8, 16].contains(fieldSize) else { throw reader.error("stz2 field size \(fieldSize) (4, 8 or 16)") }
        let bytes = (UInt64(count) * UInt64(fieldSize) + 7) / 8
        guard bytes <= UInt64(reader.remaining) else {
            throw reader.error("stz2 declares \(count) samples of \(fieldSize) bits, only \(reader.remaining) bytes remain")
        }
        sizes = []
        sizes.reserveCapacity(Int(count))
        while sizes.count < Int(count) {
            switch fieldSize {
            case 4:
                let byte = try reader.u8("entry_size")
                sizes.append(UInt32(byte >> 4))
                if sizes.count < Int(count) { sizes.append(UInt32(byte & 15)) }
            case 8: sizes.append(UInt32(try reader.u8("entry_size")))
            default: sizes.append(UInt32(try reader.u16("entry_size")))
            }
        }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u24(reserved)
        writer.u8(fieldSize)
        writer.u32(UInt32(sizes.count))
        switch fieldSize {
        case 4:
            for index in stride(from: 0, to: sizes.count, by: 2) {
                let high = UInt8(truncatingIfNeeded: sizes[index]) & 15
                let low = index + 1 < sizes.count ? UInt8(truncatingIfNeeded: sizes[index + 1]) & 15 : 0
                writer.u8(high << 4 | low)
            }
        case 8: for size in sizes { writer.u8(UInt8(truncatingIfNeeded: size)) }
        default: for size in sizes { writer.u16(UInt16(truncatingIfNeeded: size)) }
        }
    }
}

/// `stsc`: which chunks hold how many samples, with which description, as runs of chunks.
public struct SampleToChunkBox: Box {
    /// From chunk `firstChunk` (1-based) on, each chunk holds `samplesPerChunk` samples of
    /// description `sampleDescriptionIndex` (1-based).
    public struct Entry: Sendable, Hashable {
        /// first_chunk: the run's first chunk, 1-based.
        public var firstChunk: UInt32
        /// samples_per_chunk: the samples in each chunk of the run.
        public var samplesPerChunk: UInt32
        /// sample_description_index: the run's sample entry, 1-based.
        public var sampleDescriptionIndex: UInt32
        /// An entry from `firstChunk` on.
        public init(firstChunk: UInt32, samplesPerChunk: UInt32, sampleDescriptionIndex: UInt32) {
            self.firstChunk = firstChunk
            self.samplesPerChunk = samplesPerChunk
            self.sampleDescriptionIndex = sampleDescriptionIndex
        }
    }

    /// The box type, `stsc`.
    public var type: FourCharCode { "stsc" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The runs, by increasing first chunk.
    public var entries: [Entry]

    /// A box holding `entries`.
    public init(entries: [Entry]) { self.entries = entries }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 12, "stsc")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            entries.append(Entry(firstChunk: try reader.u32("first_chunk"), samplesPerChunk: try reader.u32("samples_per_chunk"),
                                 sampleDescriptionIndex: try reader.u32("sample_description_index")))
        }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { writer.u32(entry.firstChunk); writer.u32(entry.samplesPerChunk); writer.u32(entry.sampleDescriptionIndex) }
    }
}

/// `stco`: 32-bit chunk offsets.
public struct ChunkOffsetBox: Box {
    /// The box type, `stco`.
    public var type: FourCharCode { "stco" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// chunk_offset of each chunk: its first byte in the file.
    public var offsets: [UInt32]

    /// A box of `offsets`.
    public init(offsets: [UInt32]) { self.offsets = offsets }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 4, "stco")
        offsets = []
        offsets.reserveCapacity(Int(count))
        for _ in 0..<count { offsets.append(try reader.u32("chunk_offset")) }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(offsets.count))
        for offset in offsets { writer.u32(offset) }
    }
}

/// `co64`: 64-bit chunk offsets (a file over 4 GiB).
public struct ChunkLargeOffsetBox: Box {
    /// The box type, `co64`.
    public var type: FourCharCode { "co64" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// chunk_offset of each chunk: its first byte in the file.
    public var offsets: [UInt64]

    /// A box of `offsets`.
    public init(offsets: [UInt64]) { self.offsets = offsets }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "co64")
        offsets = []
        offsets.reserveCapacity(Int(count))
        for _ in 0..<count { offsets.append(try reader.u64("chunk_offset")) }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(offsets.count))
        for offset in offsets { writer.u64(offset) }
    }
}
