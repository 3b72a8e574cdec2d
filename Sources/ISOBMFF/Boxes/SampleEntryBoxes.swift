public import MediaCore

// Sample entries: ISO/IEC 14496-12 §12.1.3 (VisualSampleEntry, pasp, colr, btrt),
// ISO/IEC 14496-15 §5.4 (avc1/avc3, avcC), and the QuickTime timecode sample description.

/// An H.264 sample entry (`avc1`: parameter sets in the `avcC`; `avc3`: in the samples too),
/// the fields of a VisualSampleEntry followed by child boxes (`avcC`, `pasp`, `colr`, `btrt`).
public struct VisualSampleEntry: BoxList {
    /// How the entry's child boxes parse.
    public static let childTable = BoxTable([
        "avcC": AVCConfigurationBox.self, "pasp": PixelAspectRatioBox.self, "colr": ColourInformationBox.self, "btrt": BitRateBox.self,
    ])

    /// The box type, `avc1` or `avc3`.
    public var type: FourCharCode
    /// The six reserved bytes of SampleEntry, as stored.
    public var reserved: [UInt8] = Array(repeating: 0, count: 6)
    /// data_reference_index: the `dref` entry locating the data, 1-based.
    public var dataReferenceIndex: UInt16 = 1
    /// ISO pre_defined and reserved; QuickTime version, revision, vendor and qualities.
    public var version: UInt16 = 0
    /// ISO reserved; QuickTime revision level.
    public var revision: UInt16 = 0
    /// ISO pre_defined; QuickTime vendor code.
    public var vendor: UInt32 = 0
    /// ISO pre_defined; QuickTime temporal quality.
    public var temporalQuality: UInt32 = 0
    /// ISO pre_defined; QuickTime spatial quality.
    public var spatialQuality: UInt32 = 0
    /// The coded width in pixels.
    public var width: UInt16
    /// The coded height in pixels.
    public var height: UInt16
    /// 16.16 pixels per inch (72 dpi by default).
    public var horizontalResolution: UInt32 = 0x0048_0000
    /// 16.16 pixels per inch vertically (72 dpi by default).
    public var verticalResolution: UInt32 = 0x0048_0000
    /// ISO reserved; QuickTime data size (0).
    public var dataSize: UInt32 = 0
    /// frame_count: frames per sample, always 1 for video.
    public var frameCount: UInt16 = 1
    /// A counted string in 32 bytes.
    public var compressorName: [UInt8] = Array(repeating: 0, count: 32)
    /// depth: bits per pixel; 0x0018 (24, colour without alpha).
    public var depth: UInt16 = 0x0018
    /// -1: no colour table.
    public var colorTableID: Int16 = -1
    /// The child boxes (`avcC`, `pasp`, `colr`, `btrt`, ...), in file order.
    public var children: [AnyBox]
    /// Bytes after the last child, fewer than a box header.
    public var trailer: [UInt8] = []

    /// An entry of `type` for a `width`×`height` picture with `children`.
    public init(type: FourCharCode, width: Int, height: Int, children: [AnyBox]) {
        self.type = type
        self.width = UInt16(clamping: width)
        self.height = UInt16(clamping: height)
        self.children = children
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        reserved = try reader.bytes(6, "reserved")
        dataReferenceIndex = try reader.u16("data_reference_index")
        version = try reader.u16("pre_defined")
        revision = try reader.u16("reserved")
        vendor = try reader.u32("pre_defined")
        temporalQuality = try reader.u32("pre_defined")
        spatialQuality = try reader.u32("pre_defined")
        width = try reader.u16("width")
        height = try reader.u16("height")
        horizontalResolution = try reader.u32("horizresolution")
        verticalResolution = try reader.u32("vertresolution")
        dataSize = try reader.u32("reserved")
        frameCount = try reader.u16("frame_count")
        compressorName = try reader.bytes(32, "compressorname")
        depth = try reader.u16("depth")
        colorTableID = try reader.i16("pre_defined")
        (children, trailer) = try reader.children(Self.childTable)
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.append(reserved)
        writer.u16(dataReferenceIndex)
        writer.u16(version); writer.u16(revision)
        writer.u32(vendor); writer.u32(temporalQuality); writer.u32(spatialQuality)
        writer.u16(width); writer.u16(height)
        writer.u32(horizontalResolution); writer.u32(verticalResolution)
        writer.u32(dataSize)
        writer.u16(frameCount)
        writer.append(compressorName)
        writer.u16(depth)
        writer.i16(colorTableID)
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }

}

/// `avcC`: the AVCDecoderConfigurationRecord (ISO/IEC 14496-15 §5.3.3.1), kept as its bytes;
/// `VideoFormatDescription/init(avcC:codec:)` reads it.
public struct AVCConfigurationBox: Box {
    /// The box type, `avcC`.
    public var type: FourCharCode { "avcC" }
    /// The AVCDecoderConfigurationRecord's bytes.
    public var record: [UInt8]

    /// A box holding `record`.
    public init(record: [UInt8]) { self.record = record }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) { record = reader.rest() }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) { writer.append(record) }
}

/// `pasp`: the pixel aspect ratio (the SPS's sample aspect ratio).
public struct PixelAspectRatioBox: Box {
    /// The box type, `pasp`.
    public var type: FourCharCode { "pasp" }
    /// hSpacing: the horizontal part of the pixel aspect ratio.
    public var horizontalSpacing: UInt32
    /// vSpacing: the vertical part of the pixel aspect ratio.
    public var verticalSpacing: UInt32
    /// Bytes after the two fields, as stored.
    public var trailer: [UInt8] = []

    /// A ratio of `horizontalSpacing` : `verticalSpacing`.
    public init(horizontalSpacing: UInt32, verticalSpacing: UInt32) {
        self.horizontalSpacing = horizontalSpacing
        self.verticalSpacing = verticalSpacing
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        horizontalSpacing = try reader.u32("hSpacing")
        verticalSpacing = try reader.u32("vSpacing")
        trailer = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.u32(horizontalSpacing)
        writer.u32(verticalSpacing)
        writer.append(trailer)
    }
}

/// `colr`: colour primaries, transfer characteristics and matrix (`nclx` in ISO files, with
/// the full-range flag; `nclc` in QuickTime), or an ICC profile (kept as bytes).
public struct ColourInformationBox: Box {
    /// The box type, `colr`.
    public var type: FourCharCode { "colr" }
    /// colour_type: `nclx`, QuickTime's `nclc`, or an ICC profile type (`prof`, `rICC`).
    public var colourType: FourCharCode
    /// colour_primaries (ITU-T H.273); 2 = unspecified.
    public var primaries: UInt16 = 2
    /// transfer_characteristics (ITU-T H.273); 2 = unspecified.
    public var transfer: UInt16 = 2
    /// matrix_coefficients (ITU-T H.273); 2 = unspecified.
    public var matrix: UInt16 = 2
    /// `nclx` only: full_flag and 7 reserved bits.
    public var fullRangeByte: UInt8 = 0
    /// The payload after the colour type for profiles (`prof`, `rICC`), or after the fields.
    public var data: [UInt8] = []

    /// The colour of `colour` as `nclx` (MP4) or `nclc` (MOV) writes it.
    public init(_ colour: ColourDescription, quickTime: Bool) {
        colourType = quickTime ? "nclc" : "nclx"
        primaries = UInt16(clamping: colour.primaries)
        transfer = UInt16(clamping: colour.transfer)
        matrix = UInt16(clamping: colour.matrix)
        fullRangeByte = colour.fullRange ? 0x80 : 0
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        colourType = try reader.fourCC("colour_type")
        if colourType == "nclx" || colourType == "nclc" {
            primaries = try reader.u16("colour_primaries")
            transfer = try reader.u16("transfer_characteristics")
            matrix = try reader.u16("matrix_coefficients")
            if colourType == "nclx" { fullRangeByte = try reader.u8("full_range_flag") }
        }
        data = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.fourCC(colourType)
        if colourType == "nclx" || colourType == "nclc" {
            writer.u16(primaries); writer.u16(transfer); writer.u16(matrix)
            if colourType == "nclx" { writer.u8(fullRangeByte) }
        }
        writer.append(data)
    }

    /// The colour description, for `nclx`/`nclc` (full range only `nclx` can say).
    public var colour: ColourDescription? {
        guard colourType == "nclx" || colourType == "nclc" else { return nil }
        return ColourDescription(primaries: Int(primaries), transfer: Int(transfer), matrix: Int(matrix), fullRange: fullRangeByte & 0x80 != 0)
    }
}

/// `btrt`: decoding buffer size, peak and average bit rate.
public struct BitRateBox: Box {
    /// The box type, `btrt`.
    public var type: FourCharCode { "btrt" }
    /// bufferSizeDB: the decoding buffer size in bytes.
    public var bufferSizeDB: UInt32
    /// maxBitrate: the largest rate in bits per second over any one-second window.
    public var maxBitrate: UInt32
    /// avgBitrate: the average rate in bits per second over the whole track.
    public var avgBitrate: UInt32

    /// A box of the given sizes and rates.
    public init(bufferSizeDB: UInt32, maxBitrate: UInt32, avgBitrate: UInt32) {
        self.bufferSizeDB = bufferSizeDB
        self.maxBitrate = maxBitrate
        self.avgBitrate = avgBitrate
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        bufferSizeDB = try reader.u32("bufferSizeDB")
        maxBitrate = try reader.u32("maxBitrate")
        avgBitrate = try reader.u32("avgBitrate")
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.u32(bufferSizeDB); writer.u32(maxBitrate); writer.u32(avgBitrate)
    }
}

/// A `tmcd` or `tc64` sample entry (TN2310; QuickTime File Format "Timecode sample
/// description"): flags, timescale, frame duration, frames per second, and an optional
/// `name` box with the source reference.
public struct TimecodeSampleEntry: BoxList {
    /// The box type, `tmcd` or `tc64`.
    public var type: FourCharCode
    /// The six reserved bytes of the sample description, as stored.
    public var reserved: [UInt8] = Array(repeating: 0, count: 6)
    /// data_reference_index: the `dref` entry locating the data, 1-based.
    public var dataReferenceIndex: UInt16 = 1
    /// The reserved 32 bits after the data reference index, as stored.
    public var reserved2: UInt32 = 0
    /// The timecode flags (`TimecodeFlags`: drop-frame, 24-hour, negative times, counter).
    public var flags: UInt32
    /// The time units per second of ``frameDuration``.
    public var timescale: UInt32
    /// The duration of one frame, in ``timescale`` units.
    public var frameDuration: UInt32
    /// The number of frames (frame quanta).
    public var numberOfFrames: UInt8
    /// The reserved byte after the number of frames, as stored.
    public var reserved3: UInt8? = 0
    /// The child boxes (a `name` box with the source reference), in file order.
    public var children: [AnyBox]
    /// Bytes after the last child, fewer than a box header.
    public var trailer: [UInt8] = []

    /// The entry for `format`.
    public init(_ format: TimecodeFormatDescription) {
        type = format.sampleFormat.fourCC
        flags = format.flags.rawValue
        timescale = UInt32(format.frameDuration.timescale)
        frameDuration = UInt32(clamping: format.frameDuration.value)
        numberOfFrames = UInt8(clamping: format.frameQuanta)
        children = format.sourceReference.map { [AnyBox(TimecodeSourceNameBox(name: $0.name, languageCode: $0.languageCode))] } ?? []
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        reserved = try reader.bytes(6, "reserved")
        dataReferenceIndex = try reader.u16("data_reference_index")
        reserved2 = try reader.u32("reserved")
        flags = try reader.u32("flags")
        timescale = try reader.u32("timescale")
        frameDuration = try reader.u32("frame duration")
        numberOfFrames = try reader.u8("number of frames")
        reserved3 = reader.remaining >= 1 ? try reader.u8("reserved") : nil
        (children, trailer) = try reader.children(BoxTable(["name": TimecodeSourceNameBox.self], lenient: true))
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.append(reserved)
        writer.u16(dataReferenceIndex)
        writer.u32(reserved2)
        writer.u32(flags); writer.u32(timescale); writer.u32(frameDuration)
        writer.u8(numberOfFrames)
        if let reserved3 { writer.u8(reserved3) }
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }
}

/// `name` in a timecode sample entry: the source (reel) name as QuickTime text (size,
/// language code, characters).
public struct TimecodeSourceNameBox: Box {
    /// The box type, `name`.
    public var type: FourCharCode { "name" }
    /// The Macintosh language code of the text (0 is English).
    public var languageCode: UInt16
    /// The characters as stored (UTF-8; Mac Roman agrees in the ASCII range).
    public var text: [UInt8]
    /// Bytes after the counted characters.
    public var trailer: [UInt8] = []

    /// A box holding `name` as UTF-8 (at most 65535 bytes) in `languageCode`.
    public init(name: String, languageCode: UInt16 = 0) {
        self.languageCode = languageCode
        text = Array(name.utf8.prefix(Int(UInt16.max)))
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        let size = Int(try reader.u16("name size"))
        languageCode = try reader.u16("language")
        text = try reader.bytes(min(size, reader.remaining), "name")
        trailer = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.u16(UInt16(text.count))
        writer.u16(languageCode)
        writer.append(text)
        writer.append(trailer)
    }

    /// The name as a string.
    public var name: String { String(decoding: text, as: UTF8.self) }
}
