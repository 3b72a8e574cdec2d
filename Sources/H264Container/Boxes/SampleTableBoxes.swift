public import MediaCore

// The sample table: ISO/IEC 14496-12 §8.5–8.7.

/// `stbl`: the sample table.
public struct SampleTableBox: ContainerBox {
    public var type: FourCharCode { "stbl" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// `stsd`: the sample descriptions (sample entries), numbered from 1.
public struct SampleDescriptionBox: Box {
    /// How sample entries parse: H.264 visual entries and timecode entries.
    public static let entryTable = BoxTable([
        "avc1": VisualSampleEntry.self, "avc3": VisualSampleEntry.self, "tmcd": TimecodeSampleEntry.self, "tc64": TimecodeSampleEntry.self,
    ])

    public var type: FourCharCode { "stsd" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var entries: [AnyBox]
    public var trailer: [UInt8] = []

    public init(entries: [AnyBox]) { self.entries = entries }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "stsd")
        (entries, trailer) = try reader.children(Self.entryTable)
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { entry.write(to: &writer) }
        writer.append(trailer)
    }
}

/// A run of samples with one value (`stts`, `ctts`).
public struct SampleRun<Value: Sendable & Hashable>: Sendable, Hashable {
    public var count: UInt32
    public var value: Value
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
    public var type: FourCharCode { "stts" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var entries: [SampleRun<UInt32>]

    public init(entries: [SampleRun<UInt32>]) { self.entries = entries }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "stts")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count { entries.append(SampleRun(count: try reader.u32("sample_count"), value: try reader.u32("sample_delta"))) }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { writer.u32(entry.count); writer.u32(entry.value) }
    }
}

/// `ctts`: composition offsets (presentation minus decode time), as runs. Version 0 offsets
/// are unsigned, but writers put negative ones there too: they are read signed, as FFmpeg does.
public struct CompositionOffsetBox: Box {
    public var type: FourCharCode { "ctts" }
    public var version: UInt8
    public var flags: UInt32 = 0
    public var entries: [SampleRun<Int32>]

    /// Offsets; version 1 (signed) when `signed`.
    public init(entries: [SampleRun<Int32>], signed: Bool) {
        self.entries = entries
        version = signed ? 1 : 0
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "ctts")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count { entries.append(SampleRun(count: try reader.u32("sample_count"), value: try reader.i32("sample_offset"))) }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { writer.u32(entry.count); writer.i32(entry.value) }
    }
}

/// `cslg`: how signed composition offsets map to the presentation timeline (§8.6.1.4).
public struct CompositionToDecodeBox: Box {
    public var type: FourCharCode { "cslg" }
    public var version: UInt8
    public var flags: UInt32 = 0
    public var compositionToDTSShift: Int64
    public var leastDecodeToDisplayDelta: Int64
    public var greatestDecodeToDisplayDelta: Int64
    public var compositionStartTime: Int64
    public var compositionEndTime: Int64

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

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        var values: [Int64] = []
        for _ in 0..<5 { values.append(version == 1 ? try reader.i64("cslg field") : Int64(try reader.i32("cslg field"))) }
        compositionToDTSShift = values[0]
        leastDecodeToDisplayDelta = values[1]
        greatestDecodeToDisplayDelta = values[2]
        compositionStartTime = values[3]
        compositionEndTime = values[4]
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        for value in [compositionToDTSShift, leastDecodeToDisplayDelta, greatestDecodeToDisplayDelta, compositionStartTime, compositionEndTime] {
            if version == 1 { writer.i64(value) } else { writer.i32(Int32(truncatingIfNeeded: value)) }
        }
    }
}

/// `stss`: the sync samples, by number from 1 (absent: every sample is a sync sample).
public struct SyncSampleBox: Box {
    public var type: FourCharCode { "stss" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var sampleNumbers: [UInt32]

    public init(sampleNumbers: [UInt32]) { self.sampleNumbers = sampleNumbers }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 4, "stss")
        sampleNumbers = []
        sampleNumbers.reserveCapacity(Int(count))
        for _ in 0..<count { sampleNumbers.append(try reader.u32("sample_number")) }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(sampleNumbers.count))
        for number in sampleNumbers { writer.u32(number) }
    }
}

/// `sdtp`: one byte per sample: is_leading, sample_depends_on, sample_is_depended_on,
/// sample_has_redundancy, two bits each.
public struct SampleDependencyTypeBox: Box {
    public var type: FourCharCode { "sdtp" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var entries: [UInt8]

    public init(entries: [UInt8]) { self.entries = entries }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        entries = reader.rest()
    }

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
    public var type: FourCharCode { "stsz" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    /// The size of every sample, or 0 when ``sizes`` lists them.
    public var constantSize: UInt32
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

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(constantSize)
        writer.u32(sampleCount)
        if constantSize == 0 { for size in sizes { writer.u32(size) } }
    }
}

/// `stz2`: compact sample sizes of 4, 8 or 16 bits.
public struct CompactSampleSizeBox: Box {
    public var type: FourCharCode { "stz2" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var reserved: UInt32 = 0
    public var fieldSize: UInt8
    public var sizes: [UInt32]

    public init(fieldSize: UInt8, sizes: [UInt32]) {
        self.fieldSize = fieldSize
        self.sizes = sizes
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        reserved = try reader.u24("reserved")
        fieldSize = try reader.u8("field_size")
        let count = try reader.u32("sample_count")
        guard [4, 8, 16].contains(fieldSize) else { throw reader.error("stz2 field size \(fieldSize) (4, 8 or 16)") }
        try reader.checkEntries(UInt32((UInt64(count) * UInt64(fieldSize) + 7) / 8), size: 1, "stz2")
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
        public var firstChunk: UInt32
        public var samplesPerChunk: UInt32
        public var sampleDescriptionIndex: UInt32
        public init(firstChunk: UInt32, samplesPerChunk: UInt32, sampleDescriptionIndex: UInt32) {
            self.firstChunk = firstChunk
            self.samplesPerChunk = samplesPerChunk
            self.sampleDescriptionIndex = sampleDescriptionIndex
        }
    }

    public var type: FourCharCode { "stsc" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

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

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries { writer.u32(entry.firstChunk); writer.u32(entry.samplesPerChunk); writer.u32(entry.sampleDescriptionIndex) }
    }
}

/// `stco`: 32-bit chunk offsets.
public struct ChunkOffsetBox: Box {
    public var type: FourCharCode { "stco" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var offsets: [UInt32]

    public init(offsets: [UInt32]) { self.offsets = offsets }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 4, "stco")
        offsets = []
        offsets.reserveCapacity(Int(count))
        for _ in 0..<count { offsets.append(try reader.u32("chunk_offset")) }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(offsets.count))
        for offset in offsets { writer.u32(offset) }
    }
}

/// `co64`: 64-bit chunk offsets (a file over 4 GiB).
public struct ChunkLargeOffsetBox: Box {
    public var type: FourCharCode { "co64" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var offsets: [UInt64]

    public init(offsets: [UInt64]) { self.offsets = offsets }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "co64")
        offsets = []
        offsets.reserveCapacity(Int(count))
        for _ in 0..<count { offsets.append(try reader.u64("chunk_offset")) }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(offsets.count))
        for offset in offsets { writer.u64(offset) }
    }
}
