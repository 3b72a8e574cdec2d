public import MediaCore

// Movie fragments: ISO/IEC 14496-12 §8.8.

/// `mvex`: the movie is fragmented; defaults for the fragments' samples.
public typealias MovieExtendsBox = Container<ContainerKinds.MovieExtends>

/// `mehd`: the whole fragmented movie's duration.
public struct MovieExtendsHeaderBox: Box {
    /// The box type, `mehd`.
    public var type: FourCharCode { "mehd" }
    /// The full box version: 1 when the duration takes 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// fragment_duration: the whole movie's duration, fragments included, in the movie timescale.
    public var fragmentDuration: UInt64

    /// A header for a movie of `fragmentDuration`; version 1 (64-bit) by default.
    public init(fragmentDuration: UInt64, version: UInt8 = 1) {
        self.fragmentDuration = fragmentDuration
        self.version = version
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        fragmentDuration = try reader.versioned(version, "fragment_duration")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.versioned(fragmentDuration, version: version)
    }
}

/// `trex`: a track's default sample description, duration, size and flags in fragments.
public struct TrackExtendsBox: Box {
    /// The box type, `trex`.
    public var type: FourCharCode { "trex" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// track_ID: the track the defaults apply to.
    public var trackID: UInt32
    /// default_sample_description_index of the fragments' samples (1-based).
    public var defaultSampleDescriptionIndex: UInt32
    /// default_sample_duration of the fragments' samples, in the media timescale.
    public var defaultSampleDuration: UInt32
    /// default_sample_size of the fragments' samples, in bytes.
    public var defaultSampleSize: UInt32
    /// default_sample_flags of the fragments' samples (§8.8.3.1: dependency and sync bits).
    public var defaultSampleFlags: UInt32

    /// Defaults for `trackID`; by default the first sample description and zeros.
    public init(trackID: UInt32, defaultSampleDescriptionIndex: UInt32 = 1, defaultSampleDuration: UInt32 = 0,
                defaultSampleSize: UInt32 = 0, defaultSampleFlags: UInt32 = 0) {
        self.trackID = trackID
        self.defaultSampleDescriptionIndex = defaultSampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        trackID = try reader.u32("track_ID")
        defaultSampleDescriptionIndex = try reader.u32("default_sample_description_index")
        defaultSampleDuration = try reader.u32("default_sample_duration")
        defaultSampleSize = try reader.u32("default_sample_size")
        defaultSampleFlags = try reader.u32("default_sample_flags")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(trackID); writer.u32(defaultSampleDescriptionIndex); writer.u32(defaultSampleDuration)
        writer.u32(defaultSampleSize); writer.u32(defaultSampleFlags)
    }
}

/// `moof`: one movie fragment's index.
public typealias MovieFragmentBox = Container<ContainerKinds.MovieFragment>

/// `mfhd`: the fragment's sequence number.
public struct MovieFragmentHeaderBox: Box {
    /// The box type, `mfhd`.
    public var type: FourCharCode { "mfhd" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// sequence_number: the fragment's number, increasing from 1 in file order.
    public var sequenceNumber: UInt32

    /// A header for fragment `sequenceNumber`.
    public init(sequenceNumber: UInt32) { self.sequenceNumber = sequenceNumber }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        sequenceNumber = try reader.u32("sequence_number")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(sequenceNumber)
    }
}

/// `traf`: one track's part of a fragment.
public typealias TrackFragmentBox = Container<ContainerKinds.TrackFragment>

/// `tfhd`: the track fragment's track, data base and sample defaults; the fields present are
/// those the flags name.
public struct TrackFragmentHeaderBox: Box {
    /// Flag bits of the optional fields, and of the two modes.
    public static let baseDataOffsetPresent: UInt32 = 0x1, sampleDescriptionIndexPresent: UInt32 = 0x2
    /// Flag bits: default_sample_duration and default_sample_size are present.
    public static let defaultSampleDurationPresent: UInt32 = 0x8, defaultSampleSizePresent: UInt32 = 0x10
    /// Flag bits: default_sample_flags is present; duration-is-empty (no samples); default-base-is-moof.
    public static let defaultSampleFlagsPresent: UInt32 = 0x20, durationIsEmpty: UInt32 = 0x1_0000, defaultBaseIsMoof: UInt32 = 0x2_0000

    /// The box type, `tfhd`.
    public var type: FourCharCode { "tfhd" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The flags; the optional fields are written when their bit is set.
    public var flags: UInt32
    /// track_ID: the track the fragment's samples belong to.
    public var trackID: UInt32
    /// base_data_offset: where data offsets count from, present with ``baseDataOffsetPresent``.
    public var baseDataOffset: UInt64?
    /// sample_description_index (1-based), present with ``sampleDescriptionIndexPresent``.
    public var sampleDescriptionIndex: UInt32?
    /// default_sample_duration, in the media timescale, present with ``defaultSampleDurationPresent``.
    public var defaultSampleDuration: UInt32?
    /// default_sample_size, in bytes, present with ``defaultSampleSizePresent``.
    public var defaultSampleSize: UInt32?
    /// default_sample_flags, present with ``defaultSampleFlagsPresent``.
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

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        trackID = try reader.u32("track_ID")
        if flags & Self.baseDataOffsetPresent != 0 { baseDataOffset = try reader.u64("base_data_offset") }
        if flags & Self.sampleDescriptionIndexPresent != 0 { sampleDescriptionIndex = try reader.u32("sample_description_index") }
        if flags & Self.defaultSampleDurationPresent != 0 { defaultSampleDuration = try reader.u32("default_sample_duration") }
        if flags & Self.defaultSampleSizePresent != 0 { defaultSampleSize = try reader.u32("default_sample_size") }
        if flags & Self.defaultSampleFlagsPresent != 0 { defaultSampleFlags = try reader.u32("default_sample_flags") }
    }

    /// Writes the box's payload (everything after the size and type).
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
    /// The box type, `tfdt`.
    public var type: FourCharCode { "tfdt" }
    /// The full box version: 1 when the decode time takes 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// baseMediaDecodeTime: the decode time of the fragment's first sample, in the media timescale.
    public var baseMediaDecodeTime: UInt64

    /// A box for `baseMediaDecodeTime`; version 1 (64-bit) by default.
    public init(baseMediaDecodeTime: UInt64, version: UInt8 = 1) {
        self.baseMediaDecodeTime = baseMediaDecodeTime
        self.version = version
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        baseMediaDecodeTime = try reader.versioned(version, "baseMediaDecodeTime")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.versioned(baseMediaDecodeTime, version: version)
    }
}

/// `trun`: a run of samples in a fragment. Per-sample fields are those the flags name; when
/// none is, the samples take the defaults and ``entries`` is empty (``sampleCount`` says how
/// many there are: a count the box's bytes do not bound, which the reader checks against
/// the file before expanding it).
public struct TrackRunBox: Box {
    /// Flag bits.
    public static let dataOffsetPresent: UInt32 = 0x1, firstSampleFlagsPresent: UInt32 = 0x4
    /// Flag bits: sample_duration, sample_size and sample_flags are present per sample.
    public static let durationPresent: UInt32 = 0x100, sizePresent: UInt32 = 0x200, flagsPresent: UInt32 = 0x400
    /// Flag bits: sample_composition_time_offset is present per sample.
    public static let compositionOffsetPresent: UInt32 = 0x800

    /// One sample's fields (nil where the flags leave a field out).
    public struct Entry: Sendable, Hashable {
        /// sample_duration, in the media timescale.
        public var duration: UInt32?
        /// sample_size, in bytes.
        public var size: UInt32?
        /// sample_flags (§8.8.3.1: dependency and sync bits).
        public var flags: UInt32?
        /// sample_composition_time_offset: presentation less decode time, in the media timescale.
        public var compositionOffset: Int32?
        /// A sample's fields; nil leaves a field to the defaults.
        public init(duration: UInt32? = nil, size: UInt32? = nil, flags: UInt32? = nil, compositionOffset: Int32? = nil) {
            self.duration = duration
            self.size = size
            self.flags = flags
            self.compositionOffset = compositionOffset
        }
    }

    /// The box type, `trun`.
    public var type: FourCharCode { "trun" }
    /// The full box version: 1 when composition offsets are signed.
    public var version: UInt8
    /// The full box flags: which optional fields are present.
    public var flags: UInt32
    /// sample_count: the number of samples in the run.
    public var sampleCount: UInt32
    /// data_offset: where the run's data starts, from the base data offset, present with ``dataOffsetPresent``.
    public var dataOffset: Int32?
    /// first_sample_flags: the first sample's flags, present with ``firstSampleFlagsPresent``.
    public var firstSampleFlags: UInt32?
    /// One entry per sample when any per-sample field is present; empty otherwise.
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

    /// Parses the box's payload from `reader`.
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

    /// Writes the box's payload (everything after the size and type).
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
public typealias MovieFragmentRandomAccessBox = Container<ContainerKinds.MovieFragmentRandomAccess>

/// `tfra`: a track's sync samples in fragments: time, `moof` offset, and traf/trun/sample numbers.
public struct TrackFragmentRandomAccessBox: Box {
    /// One sync sample: its time, its fragment and its place in that fragment.
    public struct Entry: Sendable, Hashable {
        /// The sample's presentation time, in the media timescale.
        public var time: UInt64
        /// moof_offset: the file offset of the `moof` holding the sample.
        public var moofOffset: UInt64
        /// traf_number: the `traf` holding the sample, 1-based.
        public var trafNumber: UInt32
        /// trun_number: the `trun` holding the sample, 1-based.
        public var trunNumber: UInt32
        /// sample_number: the sample within its `trun`, 1-based.
        public var sampleNumber: UInt32
        /// An entry; by default the first sample of the first `trun` of the first `traf`.
        public init(time: UInt64, moofOffset: UInt64, trafNumber: UInt32 = 1, trunNumber: UInt32 = 1, sampleNumber: UInt32 = 1) {
            self.time = time
            self.moofOffset = moofOffset
            self.trafNumber = trafNumber
            self.trunNumber = trunNumber
            self.sampleNumber = sampleNumber
        }
    }

    /// The box type, `tfra`.
    public var type: FourCharCode { "tfra" }
    /// The full box version: 1 when times and offsets take 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// track_ID: the track the entries index.
    public var trackID: UInt32
    /// The reserved bits and the three 2-bit length fields, as stored.
    public var lengthSizes: UInt32
    /// The entries, in time order.
    public var entries: [Entry]

    /// Entries with 64-bit times and offsets and one-byte numbers.
    public init(trackID: UInt32, entries: [Entry]) {
        version = 1
        self.trackID = trackID
        lengthSizes = 0
        self.entries = entries
    }

    /// Parses the box's payload from `reader`.
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
            let time = try reader.versioned(version, "time")
            let offset = try reader.versioned(version, "moof_offset")
            entries.append(Entry(time: time, moofOffset: offset, trafNumber: UInt32(try reader.unsigned(size: traf, "traf_number")),
                                 trunNumber: UInt32(try reader.unsigned(size: trun, "trun_number")),
                                 sampleNumber: UInt32(try reader.unsigned(size: sample, "sample_number"))))
        }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(trackID)
        writer.u32(lengthSizes)
        writer.u32(UInt32(entries.count))
        let (traf, trun, sample) = (Int(lengthSizes >> 4 & 3) + 1, Int(lengthSizes >> 2 & 3) + 1, Int(lengthSizes & 3) + 1)
        for entry in entries {
            writer.versioned(entry.time, version: version)
            writer.versioned(entry.moofOffset, version: version)
            writer.unsigned(UInt64(entry.trafNumber), size: traf)
            writer.unsigned(UInt64(entry.trunNumber), size: trun)
            writer.unsigned(UInt64(entry.sampleNumber), size: sample)
        }
    }
}

/// `mfro`: the size of the `mfra` it ends, so a reader can find it from the end of the file.
public struct MovieFragmentRandomAccessOffsetBox: Box {
    /// The box type, `mfro`.
    public var type: FourCharCode { "mfro" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The size of the enclosing `mfra` in bytes, this box included.
    public var size: UInt32

    /// A box recording an `mfra` of `size` bytes.
    public init(size: UInt32) { self.size = size }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        size = try reader.u32("size")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(size)
    }
}
