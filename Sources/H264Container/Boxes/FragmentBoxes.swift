public import MediaCore

// Movie fragments: ISO/IEC 14496-12 §8.8.

/// `mvex`: the movie is fragmented; defaults for the fragments' samples.
public struct MovieExtendsBox: ContainerBox {
    public var type: FourCharCode { "mvex" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// `mehd`: the whole fragmented movie's duration.
public struct MovieExtendsHeaderBox: Box {
    public var type: FourCharCode { "mehd" }
    public var version: UInt8
    public var flags: UInt32 = 0
    public var fragmentDuration: UInt64

    public init(fragmentDuration: UInt64, version: UInt8 = 1) {
        self.fragmentDuration = fragmentDuration
        self.version = version
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        fragmentDuration = version == 1 ? try reader.u64("fragment_duration") : UInt64(try reader.u32("fragment_duration"))
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        if version == 1 { writer.u64(fragmentDuration) } else { writer.u32(UInt32(truncatingIfNeeded: fragmentDuration)) }
    }
}

/// `trex`: a track's default sample description, duration, size and flags in fragments.
public struct TrackExtendsBox: Box {
    public var type: FourCharCode { "trex" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var trackID: UInt32
    public var defaultSampleDescriptionIndex: UInt32
    public var defaultSampleDuration: UInt32
    public var defaultSampleSize: UInt32
    public var defaultSampleFlags: UInt32

    public init(trackID: UInt32, defaultSampleDescriptionIndex: UInt32 = 1, defaultSampleDuration: UInt32 = 0,
                defaultSampleSize: UInt32 = 0, defaultSampleFlags: UInt32 = 0) {
        self.trackID = trackID
        self.defaultSampleDescriptionIndex = defaultSampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        trackID = try reader.u32("track_ID")
        defaultSampleDescriptionIndex = try reader.u32("default_sample_description_index")
        defaultSampleDuration = try reader.u32("default_sample_duration")
        defaultSampleSize = try reader.u32("default_sample_size")
        defaultSampleFlags = try reader.u32("default_sample_flags")
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(trackID); writer.u32(defaultSampleDescriptionIndex); writer.u32(defaultSampleDuration)
        writer.u32(defaultSampleSize); writer.u32(defaultSampleFlags)
    }
}

/// `moof`: one movie fragment's index.
public struct MovieFragmentBox: ContainerBox {
    public var type: FourCharCode { "moof" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// `mfhd`: the fragment's sequence number.
public struct MovieFragmentHeaderBox: Box {
    public var type: FourCharCode { "mfhd" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var sequenceNumber: UInt32

    public init(sequenceNumber: UInt32) { self.sequenceNumber = sequenceNumber }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        sequenceNumber = try reader.u32("sequence_number")
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(sequenceNumber)
    }
}

/// `traf`: one track's part of a fragment.
public struct TrackFragmentBox: ContainerBox {
    public var type: FourCharCode { "traf" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// `tfhd`: the track fragment's track, data base and sample defaults; the fields present are
/// those the flags name.
public struct TrackFragmentHeaderBox: Box {
    /// Flag bits of the optional fields, and of the two modes.
    public static let baseDataOffsetPresent: UInt32 = 0x1, sampleDescriptionIndexPresent: UInt32 = 0x2
    public static let defaultSampleDurationPresent: UInt32 = 0x8, defaultSampleSizePresent: UInt32 = 0x10
    public static let defaultSampleFlagsPresent: UInt32 = 0x20, durationIsEmpty: UInt32 = 0x1_0000, defaultBaseIsMoof: UInt32 = 0x2_0000

    public var type: FourCharCode { "tfhd" }
    public var version: UInt8 = 0
    /// The flags; the optional fields are written when their bit is set.
    public var flags: UInt32
    public var trackID: UInt32
    public var baseDataOffset: UInt64?
    public var sampleDescriptionIndex: UInt32?
    public var defaultSampleDuration: UInt32?
    public var defaultSampleSize: UInt32?
    public var defaultSampleFlags: UInt32?

    /// A header for `trackID` with the given optional fields (their flag bits are set here).
    public init(trackID: UInt32, defaultBaseIsMoof: Bool, baseDataOffset: UInt64? = nil, sampleDescriptionIndex: UInt32? = nil,
                defaultSampleDuration: UInt32? = nil, defaultSampleSize: UInt32? = nil, defaultSampleFlags: UInt32? = nil) {
        self.trackID = trackID
        self.baseDataOffset = baseDataOffset
        self.sampleDescriptionIndex = sampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
        var flags: UInt32 = defaultBaseIsMoof ? Self.defaultBaseIsMoof : 0
        if baseDataOffset != nil { flags |= Self.baseDataOffsetPresent }
        if sampleDescriptionIndex != nil { flags |= Self.sampleDescriptionIndexPresent }
        if defaultSampleDuration != nil { flags |= Self.defaultSampleDurationPresent }
        if defaultSampleSize != nil { flags |= Self.defaultSampleSizePresent }
        if defaultSampleFlags != nil { flags |= Self.defaultSampleFlagsPresent }
        self.flags = flags
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        trackID = try reader.u32("track_ID")
        if flags & Self.baseDataOffsetPresent != 0 { baseDataOffset = try reader.u64("base_data_offset") }
        if flags & Self.sampleDescriptionIndexPresent != 0 { sampleDescriptionIndex = try reader.u32("sample_description_index") }
        if flags & Self.defaultSampleDurationPresent != 0 { defaultSampleDuration = try reader.u32("default_sample_duration") }
        if flags & Self.defaultSampleSizePresent != 0 { defaultSampleSize = try reader.u32("default_sample_size") }
        if flags & Self.defaultSampleFlagsPresent != 0 { defaultSampleFlags = try reader.u32("default_sample_flags") }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(trackID)
        if flags & Self.baseDataOffsetPresent != 0 { writer.u64(baseDataOffset ?? 0) }
        if flags & Self.sampleDescriptionIndexPresent != 0 { writer.u32(sampleDescriptionIndex ?? 1) }
        if flags & Self.defaultSampleDurationPresent != 0 { writer.u32(defaultSampleDuration ?? 0) }
        if flags & Self.defaultSampleSizePresent != 0 { writer.u32(defaultSampleSize ?? 0) }
        if flags & Self.defaultSampleFlagsPresent != 0 { writer.u32(defaultSampleFlags ?? 0) }
    }
}

/// `tfdt`: the decode time of the fragment's first sample.
public struct TrackFragmentBaseMediaDecodeTimeBox: Box {
    public var type: FourCharCode { "tfdt" }
    public var version: UInt8
    public var flags: UInt32 = 0
    public var baseMediaDecodeTime: UInt64

    public init(baseMediaDecodeTime: UInt64, version: UInt8 = 1) {
        self.baseMediaDecodeTime = baseMediaDecodeTime
        self.version = version
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        baseMediaDecodeTime = version == 1 ? try reader.u64("baseMediaDecodeTime") : UInt64(try reader.u32("baseMediaDecodeTime"))
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        if version == 1 { writer.u64(baseMediaDecodeTime) } else { writer.u32(UInt32(truncatingIfNeeded: baseMediaDecodeTime)) }
    }
}

/// `trun`: a run of samples in a fragment. Per-sample fields are those the flags name; when
/// none is, the samples take the defaults and ``entries`` is empty (``sampleCount`` says how
/// many there are: a count the box's bytes do not bound, which the reader checks against
/// the file before expanding it).
public struct TrackRunBox: Box {
    /// Flag bits.
    public static let dataOffsetPresent: UInt32 = 0x1, firstSampleFlagsPresent: UInt32 = 0x4
    public static let durationPresent: UInt32 = 0x100, sizePresent: UInt32 = 0x200, flagsPresent: UInt32 = 0x400
    public static let compositionOffsetPresent: UInt32 = 0x800

    /// One sample's fields (nil where the flags leave a field out).
    public struct Entry: Sendable, Hashable {
        public var duration: UInt32?
        public var size: UInt32?
        public var flags: UInt32?
        public var compositionOffset: Int32?
        public init(duration: UInt32? = nil, size: UInt32? = nil, flags: UInt32? = nil, compositionOffset: Int32? = nil) {
            self.duration = duration
            self.size = size
            self.flags = flags
            self.compositionOffset = compositionOffset
        }
    }

    public var type: FourCharCode { "trun" }
    public var version: UInt8
    public var flags: UInt32
    public var sampleCount: UInt32
    public var dataOffset: Int32?
    public var firstSampleFlags: UInt32?
    public var entries: [Entry]

    /// A run with every field of every sample present (and the data offset, patched later).
    public init(entries: [Entry], dataOffset: Int32, signedCompositionOffsets: Bool) {
        version = signedCompositionOffsets ? 1 : 0
        flags = Self.dataOffsetPresent | Self.durationPresent | Self.sizePresent | Self.flagsPresent | Self.compositionOffsetPresent
        sampleCount = UInt32(entries.count)
        self.dataOffset = dataOffset
        self.entries = entries
    }

    /// Bytes of one sample's fields, from the flags.
    public var entrySize: Int {
        [Self.durationPresent, Self.sizePresent, Self.flagsPresent, Self.compositionOffsetPresent].filter { flags & $0 != 0 }.count * 4
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        sampleCount = try reader.u32("sample_count")
        if flags & Self.dataOffsetPresent != 0 { dataOffset = try reader.i32("data_offset") }
        if flags & Self.firstSampleFlagsPresent != 0 { firstSampleFlags = try reader.u32("first_sample_flags") }
        entries = []
        let size = entrySize
        guard size > 0 else { return }
        try reader.checkEntries(sampleCount, size: size, "trun")
        entries.reserveCapacity(Int(sampleCount))
        for _ in 0..<sampleCount {
            var entry = Entry()
            if flags & Self.durationPresent != 0 { entry.duration = try reader.u32("sample_duration") }
            if flags & Self.sizePresent != 0 { entry.size = try reader.u32("sample_size") }
            if flags & Self.flagsPresent != 0 { entry.flags = try reader.u32("sample_flags") }
            if flags & Self.compositionOffsetPresent != 0 { entry.compositionOffset = try reader.i32("sample_composition_time_offset") }
            entries.append(entry)
        }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(entrySize > 0 ? UInt32(entries.count) : sampleCount)
        if flags & Self.dataOffsetPresent != 0 { writer.i32(dataOffset ?? 0) }
        if flags & Self.firstSampleFlagsPresent != 0 { writer.u32(firstSampleFlags ?? 0) }
        for entry in entries {
            if flags & Self.durationPresent != 0 { writer.u32(entry.duration ?? 0) }
            if flags & Self.sizePresent != 0 { writer.u32(entry.size ?? 0) }
            if flags & Self.flagsPresent != 0 { writer.u32(entry.flags ?? 0) }
            if flags & Self.compositionOffsetPresent != 0 { writer.i32(entry.compositionOffset ?? 0) }
        }
    }
}

/// `mfra`: the fragments' random-access index, at the end of the file.
public struct MovieFragmentRandomAccessBox: ContainerBox {
    public var type: FourCharCode { "mfra" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// `tfra`: a track's sync samples in fragments: time, `moof` offset, and traf/trun/sample numbers.
public struct TrackFragmentRandomAccessBox: Box {
    public struct Entry: Sendable, Hashable {
        public var time: UInt64
        public var moofOffset: UInt64
        public var trafNumber: UInt32
        public var trunNumber: UInt32
        public var sampleNumber: UInt32
        public init(time: UInt64, moofOffset: UInt64, trafNumber: UInt32 = 1, trunNumber: UInt32 = 1, sampleNumber: UInt32 = 1) {
            self.time = time
            self.moofOffset = moofOffset
            self.trafNumber = trafNumber
            self.trunNumber = trunNumber
            self.sampleNumber = sampleNumber
        }
    }

    public var type: FourCharCode { "tfra" }
    public var version: UInt8
    public var flags: UInt32 = 0
    public var trackID: UInt32
    /// The reserved bits and the three 2-bit length fields, as stored.
    public var lengthSizes: UInt32
    public var entries: [Entry]

    /// Entries with 64-bit times and offsets and one-byte numbers.
    public init(trackID: UInt32, entries: [Entry]) {
        version = 1
        self.trackID = trackID
        lengthSizes = 0
        self.entries = entries
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        trackID = try reader.u32("track_ID")
        lengthSizes = try reader.u32("length sizes")
        let count = try reader.u32("number_of_entry")
        let (traf, trun, sample) = (Int(lengthSizes >> 4 & 3) + 1, Int(lengthSizes >> 2 & 3) + 1, Int(lengthSizes & 3) + 1)
        try reader.checkEntries(count, size: (version == 1 ? 16 : 8) + traf + trun + sample, "tfra")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            let time = version == 1 ? try reader.u64("time") : UInt64(try reader.u32("time"))
            let offset = version == 1 ? try reader.u64("moof_offset") : UInt64(try reader.u32("moof_offset"))
            entries.append(Entry(time: time, moofOffset: offset, trafNumber: UInt32(try reader.unsigned(size: traf, "traf_number")),
                                 trunNumber: UInt32(try reader.unsigned(size: trun, "trun_number")),
                                 sampleNumber: UInt32(try reader.unsigned(size: sample, "sample_number"))))
        }
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(trackID)
        writer.u32(lengthSizes)
        writer.u32(UInt32(entries.count))
        let (traf, trun, sample) = (Int(lengthSizes >> 4 & 3) + 1, Int(lengthSizes >> 2 & 3) + 1, Int(lengthSizes & 3) + 1)
        for entry in entries {
            if version == 1 { writer.u64(entry.time); writer.u64(entry.moofOffset) } else {
                writer.u32(UInt32(truncatingIfNeeded: entry.time)); writer.u32(UInt32(truncatingIfNeeded: entry.moofOffset))
            }
            writer.unsigned(UInt64(entry.trafNumber), size: traf)
            writer.unsigned(UInt64(entry.trunNumber), size: trun)
            writer.unsigned(UInt64(entry.sampleNumber), size: sample)
        }
    }
}

/// `mfro`: the size of the `mfra` it ends, so a reader can find it from the end of the file.
public struct MovieFragmentRandomAccessOffsetBox: Box {
    public var type: FourCharCode { "mfro" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var size: UInt32

    public init(size: UInt32) { self.size = size }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        size = try reader.u32("size")
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(size)
    }
}
