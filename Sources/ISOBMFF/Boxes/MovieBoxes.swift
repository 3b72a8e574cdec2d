public import MediaCore

// The movie and track structure: ISO/IEC 14496-12 §8.2–8.4, §8.6.5–8.6.6 and the QuickTime
// File Format's movie, track and media atoms.

/// A 3×3 transformation matrix as stored (`mvhd`, `tkhd`): a, b, u, c, d, v, x, y, w, with
/// u, v, w in 2.30 fixed point and the rest in 16.16.
public struct TransformationMatrix: Sendable, Hashable {
    /// The nine values as stored.
    public var values: [Int32]

    /// The identity: no rotation, no scaling.
    public static let identity = TransformationMatrix(values: [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000])

    /// A matrix of the nine values as stored, in file order; there must be nine.
    public init(values: [Int32]) {
        precondition(values.count == 9, "a transformation matrix has nine values")
        self.values = values
    }

    init(reading reader: inout BoxReader) throws(ContainerError) {
        var values: [Int32] = []
        for _ in 0..<9 { values.append(try reader.i32("matrix")) }
        self.values = values
    }

    func write(to writer: inout BoxWriter) { for value in values { writer.i32(value) } }

    /// The rotation the matrix applies, in degrees counter-clockwise as FFmpeg reports it
    /// (0, 90, 180 or 270; nil for any other transform).
    public var rotation: Int? {
        let (a, b, c, d) = (values[0], values[1], values[3], values[4])
        let one: Int32 = 0x0001_0000
        switch (a, b, c, d) {
        case (one, 0, 0, one): return 0
        case (0, one, -one, 0): return 270
        case (-one, 0, 0, -one): return 180
        case (0, -one, one, 0): return 90
        default: return nil
        }
    }
}

/// `moov`: the movie's index.
public typealias MovieBox = Container<ContainerKinds.Movie>

/// `mvhd`: the movie's timescale, duration and next track ID.
public struct MovieHeaderBox: Box {
    /// The box type, `mvhd`.
    public var type: FourCharCode { "mvhd" }
    /// The full box version: 1 when times and durations take 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// creation_time, in seconds since 1904-01-01 UTC; 0 as this package writes it.
    public var creationTime: UInt64 = 0
    /// modification_time, in seconds since 1904-01-01 UTC; 0 as this package writes it.
    public var modificationTime: UInt64 = 0
    /// Movie time units per second.
    public var timescale: UInt32
    /// The movie's duration (its longest track's, edits applied), in the movie timescale.
    public var duration: UInt64
    /// Preferred rate, 16.16 fixed point (0x00010000 is 1.0).
    public var rate: Int32 = 0x0001_0000
    /// Preferred volume, 8.8 fixed point.
    public var volume: Int16 = 0x0100
    /// The 10 reserved bytes after the volume, as stored.
    public var reserved: [UInt8] = Array(repeating: 0, count: 10)
    /// The transformation matrix applied to the whole movie.
    public var matrix: TransformationMatrix = .identity
    /// ISO pre_defined; QuickTime preview, poster and selection times.
    public var predefined: [UInt8] = Array(repeating: 0, count: 24)
    /// next_track_ID: one more than the largest track ID in use.
    public var nextTrackID: UInt32

    /// A header; version 1 when the duration needs 64 bits.
    public init(timescale: UInt32, duration: UInt64, nextTrackID: UInt32) {
        version = duration > UInt64(UInt32.max) ? 1 : 0
        self.timescale = timescale
        self.duration = duration
        self.nextTrackID = nextTrackID
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        creationTime = try reader.versioned(version, "creation_time")
        modificationTime = try reader.versioned(version, "modification_time")
        timescale = try reader.u32("timescale")
        duration = try reader.versioned(version, "duration")
        rate = try reader.i32("rate")
        volume = try reader.i16("volume")
        reserved = try reader.bytes(10, "reserved")
        matrix = try TransformationMatrix(reading: &reader)
        predefined = try reader.bytes(24, "pre_defined")
        nextTrackID = try reader.u32("next_track_ID")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.versioned(creationTime, version: version)
        writer.versioned(modificationTime, version: version)
        writer.u32(timescale)
        writer.versioned(duration, version: version)
        writer.i32(rate)
        writer.i16(volume)
        writer.append(reserved)
        matrix.write(to: &writer)
        writer.append(predefined)
        writer.u32(nextTrackID)
    }
}

/// `trak`: one track.
public typealias TrackBox = Container<ContainerKinds.Track>

/// `tkhd`: the track's ID, duration, layer, matrix and display size.
public struct TrackHeaderBox: Box {
    /// Flag bits: the track is enabled, used in the movie, used in previews.
    public static let enabled: UInt32 = 1, inMovie: UInt32 = 2, inPreview: UInt32 = 4

    /// The box type, `tkhd`.
    public var type: FourCharCode { "tkhd" }
    /// The full box version: 1 when times and durations take 64 bits.
    public var version: UInt8
    /// The full box flags: ``enabled``, ``inMovie`` and ``inPreview``.
    public var flags: UInt32
    /// creation_time, in seconds since 1904-01-01 UTC; 0 as this package writes it.
    public var creationTime: UInt64 = 0
    /// modification_time, in seconds since 1904-01-01 UTC; 0 as this package writes it.
    public var modificationTime: UInt64 = 0
    /// track_ID: the track's ID, unique in the movie and never 0.
    public var trackID: UInt32
    /// The reserved 32 bits after track_ID, as stored.
    public var reserved1: UInt32 = 0
    /// The track's duration, edits applied, in the movie timescale.
    public var duration: UInt64
    /// The 8 reserved bytes after the duration, as stored.
    public var reserved2: [UInt8] = Array(repeating: 0, count: 8)
    /// layer: the front-to-back order of video tracks; lower is closer to the viewer.
    public var layer: Int16 = 0
    /// alternate_group: tracks of the same non-zero group are alternatives to each other.
    public var alternateGroup: Int16 = 0
    /// 8.8 fixed point; 0 for video.
    public var volume: Int16 = 0
    /// The reserved 16 bits after the volume, as stored.
    public var reserved3: UInt16 = 0
    /// The track's display transform.
    public var matrix: TransformationMatrix = .identity
    /// Display size, 16.16 fixed point.
    public var width: UInt32
    /// Display height, 16.16 fixed point.
    public var height: UInt32

    /// A header; version 1 when the duration needs 64 bits.
    public init(trackID: UInt32, duration: UInt64, flags: UInt32, width: Double = 0, height: Double = 0) {
        version = duration > UInt64(UInt32.max) ? 1 : 0
        self.flags = flags
        self.trackID = trackID
        self.duration = duration
        self.width = UInt32(truncatingIfNeeded: Int64((width * 65536).rounded()))
        self.height = UInt32(truncatingIfNeeded: Int64((height * 65536).rounded()))
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        creationTime = try reader.versioned(version, "creation_time")
        modificationTime = try reader.versioned(version, "modification_time")
        trackID = try reader.u32("track_ID")
        reserved1 = try reader.u32("reserved")
        duration = try reader.versioned(version, "duration")
        reserved2 = try reader.bytes(8, "reserved")
        layer = try reader.i16("layer")
        alternateGroup = try reader.i16("alternate_group")
        volume = try reader.i16("volume")
        reserved3 = try reader.u16("reserved")
        matrix = try TransformationMatrix(reading: &reader)
        width = try reader.u32("width")
        height = try reader.u32("height")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.versioned(creationTime, version: version)
        writer.versioned(modificationTime, version: version)
        writer.u32(trackID)
        writer.u32(reserved1)
        writer.versioned(duration, version: version)
        writer.append(reserved2)
        writer.i16(layer); writer.i16(alternateGroup); writer.i16(volume); writer.u16(reserved3)
        matrix.write(to: &writer)
        writer.u32(width)
        writer.u32(height)
    }

    /// The display width in pixels.
    public var displayWidth: Double { Double(width) / 65536 }
    /// The display height in pixels.
    public var displayHeight: Double { Double(height) / 65536 }
}

/// `edts`: the track's edits.
public typealias EditBox = Container<ContainerKinds.Edit>

/// `elst`: which parts of the media the movie shows, and when.
public struct EditListBox: Box {
    /// One edit: `segmentDuration` in the movie timescale, from `mediaTime` in the media's
    /// (-1: an empty edit, nothing shown), at `rate` (16.16 as integer and fraction).
    public struct Entry: Sendable, Hashable {
        /// segment_duration: how long the edit lasts, in the movie timescale.
        public var segmentDuration: UInt64
        /// media_time: where the edit starts in the media, in the media timescale; -1 for an empty edit.
        public var mediaTime: Int64
        /// media_rate_integer: the integer part of the playback rate (1 for normal speed).
        public var mediaRateInteger: Int16
        /// media_rate_fraction: the fractional part of the playback rate, in 1/65536.
        public var mediaRateFraction: Int16
        /// An edit; by default at normal speed.
        public init(segmentDuration: UInt64, mediaTime: Int64, mediaRateInteger: Int16 = 1, mediaRateFraction: Int16 = 0) {
            self.segmentDuration = segmentDuration
            self.mediaTime = mediaTime
            self.mediaRateInteger = mediaRateInteger
            self.mediaRateFraction = mediaRateFraction
        }
        /// The rate as a number.
        public var rate: Double { Double(mediaRateInteger) + Double(mediaRateFraction) / 65536 }
    }

    /// The box type, `elst`.
    public var type: FourCharCode { "elst" }
    /// The full box version: 1 when durations and media times take 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The edits, in presentation order.
    public var entries: [Entry]

    /// Edits; version 1 when a value needs 64 bits.
    public init(entries: [Entry]) {
        self.entries = entries
        version = entries.contains { $0.segmentDuration > UInt64(UInt32.max) || $0.mediaTime > Int64(Int32.max) || $0.mediaTime < Int64(Int32.min) } ? 1 : 0
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: version == 1 ? 20 : 12, "elst")
        entries = []
        entries.reserveCapacity(Int(count))
        for _ in 0..<count {
            let duration = try reader.versioned(version, "segment_duration")
            let mediaTime = try reader.versionedSigned(version, "media_time")
            entries.append(Entry(segmentDuration: duration, mediaTime: mediaTime, mediaRateInteger: try reader.i16("media_rate_integer"),
                                 mediaRateFraction: try reader.i16("media_rate_fraction")))
        }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(entries.count))
        for entry in entries {
            writer.versioned(entry.segmentDuration, version: version)
            writer.versionedSigned(entry.mediaTime, version: version)
            writer.i16(entry.mediaRateInteger)
            writer.i16(entry.mediaRateFraction)
        }
    }
}

/// `tref`: references from this track to others, one child per reference type.
public typealias TrackReferenceBox = Container<ContainerKinds.TrackReference>

/// A `tref` child: the tracks referenced for one reason (`tmcd`: the timecode track).
public struct TrackReferenceTypeBox: Box {
    /// The reference type (`tmcd`, `chap`, `hint`, ...).
    public var type: FourCharCode
    /// track_IDs: the referenced tracks.
    public var trackIDs: [UInt32]
    /// Bytes after the last whole track ID.
    public var trailer: [UInt8] = []

    /// A reference of `type` to `trackIDs`.
    public init(type: FourCharCode, trackIDs: [UInt32]) {
        self.type = type
        self.trackIDs = trackIDs
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        trackIDs = []
        while reader.remaining >= 4 { trackIDs.append(try reader.u32("track_IDs")) }
        trailer = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        for id in trackIDs { writer.u32(id) }
        writer.append(trailer)
    }
}

/// `mdia`: the track's media.
public typealias MediaBox = Container<ContainerKinds.Media>

/// `mdhd`: the media's timescale, duration and language.
public struct MediaHeaderBox: Box {
    /// The box type, `mdhd`.
    public var type: FourCharCode { "mdhd" }
    /// The full box version: 1 when times and durations take 64 bits.
    public var version: UInt8
    /// The full box flags.
    public var flags: UInt32 = 0
    /// creation_time, in seconds since 1904-01-01 UTC; 0 as this package writes it.
    public var creationTime: UInt64 = 0
    /// modification_time, in seconds since 1904-01-01 UTC; 0 as this package writes it.
    public var modificationTime: UInt64 = 0
    /// Media time units per second: the time base of the track's samples.
    public var timescale: UInt32
    /// The media's duration (the sum of sample durations), in the media timescale.
    public var duration: UInt64
    /// ISO-639-2/T packed in 15 bits (0x55C4 is "und"), or a QuickTime language code.
    public var language: UInt16
    /// ISO pre_defined; QuickTime quality.
    public var quality: UInt16 = 0

    /// A header; version 1 when the duration needs 64 bits.
    public init(timescale: UInt32, duration: UInt64, language: UInt16 = 0x55C4) {
        version = duration > UInt64(UInt32.max) ? 1 : 0
        self.timescale = timescale
        self.duration = duration
        self.language = language
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        creationTime = try reader.versioned(version, "creation_time")
        modificationTime = try reader.versioned(version, "modification_time")
        timescale = try reader.u32("timescale")
        duration = try reader.versioned(version, "duration")
        language = try reader.u16("language")
        quality = try reader.u16("pre_defined")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.versioned(creationTime, version: version)
        writer.versioned(modificationTime, version: version)
        writer.u32(timescale)
        writer.versioned(duration, version: version)
        writer.u16(language)
        writer.u16(quality)
    }

    /// The ISO 639-2/T code of a `language` field: three letters packed five bits each (a
    /// value over 0x3FF), or one of QuickTime's Macintosh language codes (below); nil for
    /// `und` and codes not known.
    public static func languageCode(_ value: UInt16) -> String? {
        if value > 0x3FF {
            let letters = [(value >> 10) & 31, (value >> 5) & 31, value & 31].map { Character(Unicode.Scalar(UInt8($0 + 0x60))) }
            let code = String(letters)
            return code == "und" || !code.allSatisfy({ $0.isLetter }) ? nil : code
        }
        return Int(value) < macintoshLanguages.count ? macintoshLanguages[Int(value)] : nil
    }

    /// The `language` field of an ISO 639-2/T code (`eng` packs to 0x15C7); `und` (0x55C4) for
    /// anything not three lowercase letters.
    public static func packedLanguage(_ code: String?) -> UInt16 {
        guard let code, code.count == 3, code.unicodeScalars.allSatisfy({ (0x61...0x7A).contains($0.value) }) else { return 0x55C4 }
        return code.unicodeScalars.reduce(0) { $0 << 5 | UInt16($1.value - 0x60) }
    }

    /// QuickTime's Macintosh language codes 0 to 32, as ISO 639-2/T.
    static let macintoshLanguages = ["eng", "fra", "deu", "ita", "nld", "swe", "spa", "dan", "por", "nor", "heb", "jpn", "ara", "fin", "ell", "isl",
                                     "mlt", "tur", "hrv", "zho", "urd", "hin", "tha", "kor", "lit", "pol", "hun", "est", "lav", "sme", "fao", "fas", "rus"]
}

/// `hdlr`: what the media (or metadata) is: `vide`, `soun`, `tmcd`, `mdta`, `mdir`, ...
public struct HandlerBox: Box {
    /// The box type, `hdlr`.
    public var type: FourCharCode { "hdlr" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// ISO pre_defined (0); QuickTime's component type (`mhlr`, `dhlr`).
    public var componentType: FourCharCode
    /// handler_type: what the media is (`vide`, `soun`, `tmcd`), or the metadata format (`mdta`, `mdir`).
    public var handlerType: FourCharCode
    /// ISO reserved; QuickTime manufacturer, flags and flags mask.
    public var reserved: [UInt8] = Array(repeating: 0, count: 12)
    /// The name as stored: a C string in ISO files, a counted (Pascal) string in QuickTime.
    public var name: [UInt8]

    /// A handler with `name` stored as MOV (counted) or MP4 (NUL-terminated) stores it.
    public init(componentType: FourCharCode = FourCharCode(rawValue: 0), handlerType: FourCharCode, name: String, countedName: Bool) {
        self.componentType = componentType
        self.handlerType = handlerType
        let bytes = Array(name.utf8.prefix(255))
        self.name = countedName ? [UInt8(bytes.count)] + bytes : bytes + [0]
    }

    /// A handler with the name bytes as given.
    public init(componentType: FourCharCode, handlerType: FourCharCode, reserved: [UInt8], nameBytes: [UInt8]) {
        self.componentType = componentType
        self.handlerType = handlerType
        self.reserved = reserved
        self.name = nameBytes
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        componentType = try reader.fourCC("pre_defined")
        handlerType = try reader.fourCC("handler_type")
        reserved = try reader.bytes(12, "reserved")
        name = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.fourCC(componentType)
        writer.fourCC(handlerType)
        writer.append(reserved)
        writer.append(name)
    }

    /// The name as text, counted or NUL-terminated.
    public var nameText: String {
        if let count = name.first, Int(count) == name.count - 1, count > 0 { return String(decoding: name.dropFirst(), as: UTF8.self) }
        return String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
    }
}

/// `minf`: how the media is stored.
public typealias MediaInformationBox = Container<ContainerKinds.MediaInformation>

/// `vmhd`: video media header (graphics mode and colour, flags 1).
public struct VideoMediaHeaderBox: Box {
    /// The box type, `vmhd`.
    public var type: FourCharCode { "vmhd" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags: 1, as the specification requires.
    public var flags: UInt32 = 1
    /// graphicsmode: the composition mode; 0 is copy.
    public var graphicsMode: UInt16 = 0
    /// opcolor: the red, green and blue values the graphics mode may use.
    public var opcolor: [UInt16] = [0, 0, 0]

    /// A header with copy mode and flags 1.
    public init() {}

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        graphicsMode = try reader.u16("graphicsmode")
        opcolor = [try reader.u16("opcolor"), try reader.u16("opcolor"), try reader.u16("opcolor")]
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u16(graphicsMode)
        for value in opcolor { writer.u16(value) }
    }
}

/// `nmhd`: the null media header of tracks that are not audio or video (an MP4 timecode track).
public struct NullMediaHeaderBox: Box {
    /// The box type, `nmhd`.
    public var type: FourCharCode { "nmhd" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// Bytes after the flags, as stored (none in a conforming file).
    public var trailer: [UInt8] = []

    /// An empty header.
    public init() {}

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        trailer = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.append(trailer)
    }
}

/// `gmhd`: QuickTime's base media information header (timecode and other non-AV media).
public typealias BaseMediaInformationHeaderBox = Container<ContainerKinds.BaseMediaInformationHeader>

/// `gmin`: base media info (graphics mode, colour, balance).
public struct BaseMediaInfoBox: Box {
    /// The box type, `gmin`.
    public var type: FourCharCode { "gmin" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The graphics mode; 0x40 (dither copy) by default.
    public var graphicsMode: UInt16 = 0x40  // dither copy
    /// The red, green and blue values the graphics mode may use.
    public var opcolor: [UInt16] = [0x8000, 0x8000, 0x8000]
    /// The audio balance.
    public var balance: Int16 = 0
    /// The reserved 16 bits at the end, as stored.
    public var reserved: UInt16 = 0

    /// The base media info written for a timecode track: dither copy, grey opcolor.
    public init() {}

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        graphicsMode = try reader.u16("graphics mode")
        opcolor = [try reader.u16("opcolor"), try reader.u16("opcolor"), try reader.u16("opcolor")]
        balance = try reader.i16("balance")
        reserved = try reader.u16("reserved")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u16(graphicsMode)
        for value in opcolor { writer.u16(value) }
        writer.i16(balance)
        writer.u16(reserved)
    }
}

/// `tmcd` in `gmhd`: the timecode media information, holding `tcmi`.
public typealias TimecodeMediaInformationBox = Container<ContainerKinds.TimecodeMediaInformation>

/// `tcmi`: how a player draws the timecode (font, size, colours).
public struct TimecodeMediaInfoBox: Box {
    /// The box type, `tcmi`.
    public var type: FourCharCode { "tcmi" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The font, as a QuickTime font number (0 is the system font).
    public var textFont: UInt16 = 0
    /// The text face (style bits: bold 1, italic 2, ...).
    public var textFace: UInt16 = 0
    /// The text size in points.
    public var textSize: UInt16 = 12
    /// The reserved 16 bits after the size, as stored.
    public var reserved: UInt16 = 0
    /// The text's red, green and blue, 16 bits each.
    public var textColor: [UInt16] = [0, 0, 0]
    /// The background's red, green and blue, 16 bits each.
    public var backgroundColor: [UInt16] = [0xFFFF, 0xFFFF, 0xFFFF]
    /// The font name as stored: a counted string (and whatever follows it).
    public var fontName: [UInt8]

    /// The settings Apple and FFmpeg write: 12 point black on white, "Lucida Grande".
    public init(fontName: String = "Lucida Grande") {
        let bytes = Array(fontName.utf8.prefix(255))
        self.fontName = [UInt8(bytes.count)] + bytes
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        textFont = try reader.u16("text font")
        textFace = try reader.u16("text face")
        textSize = try reader.u16("text size")
        reserved = try reader.u16("reserved")
        textColor = [try reader.u16("text color"), try reader.u16("text color"), try reader.u16("text color")]
        backgroundColor = [try reader.u16("background color"), try reader.u16("background color"), try reader.u16("background color")]
        fontName = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u16(textFont); writer.u16(textFace); writer.u16(textSize); writer.u16(reserved)
        for value in textColor { writer.u16(value) }
        for value in backgroundColor { writer.u16(value) }
        writer.append(fontName)
    }
}

/// `dinf`: where the media data is.
public typealias DataInformationBox = Container<ContainerKinds.DataInformation>

/// `dref`: data references; one self-reference (`url ` or QuickTime `alis`, flag 1) in a
/// self-contained file.
public struct DataReferenceBox: Box {
    /// The box type, `dref`.
    public var type: FourCharCode { "dref" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The data entries (``DataEntryBox`` each), in order.
    public var entries: [AnyBox]
    /// Bytes after the last entry, fewer than a box header.
    public var trailer: [UInt8] = []
    /// The entry_count as stored when it disagrees with the entries found (a damaged file), so
    /// the box writes back as it was read; nil when it is the number of entries.
    public var declaredEntryCount: UInt32?

    /// One self-reference of `entryType`.
    public init(selfReference entryType: FourCharCode) {
        entries = [AnyBox(DataEntryBox(type: entryType, flags: 1, data: []))]
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        (entries, trailer, declaredEntryCount) = try reader.countedChildren(BoxTable([:], fallback: DataEntryBox.self), "dref")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.countedChildren(entries, trailer: trailer, declaredCount: declaredEntryCount)
    }
}

/// A `dref` entry (`url `, `urn `, `alis`, ...): flag 1 means the data is in this file.
public struct DataEntryBox: Box {
    /// The entry type: `url `, `urn ` or QuickTime's `alis`.
    public var type: FourCharCode
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags: 1 when the media data is in this file.
    public var flags: UInt32
    /// The location, as stored.
    public var data: [UInt8]

    /// An entry of `type` with `flags` and location `data`.
    public init(type: FourCharCode, flags: UInt32, data: [UInt8]) {
        self.type = type
        self.flags = flags
        self.data = data
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        (version, flags) = try reader.versionAndFlags()
        data = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.append(data)
    }
}
