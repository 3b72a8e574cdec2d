public import MediaCore

// Sample entries: ISO/IEC 14496-12 §12.1.3 (VisualSampleEntry, pasp, colr, btrt),
// ISO/IEC 14496-15 §5.4 (avc1/avc3, avcC), and the QuickTime timecode sample description.

/// An H.264 sample entry (`avc1`: parameter sets in the `avcC`; `avc3`: in the samples too),
/// the fields of a VisualSampleEntry followed by child boxes (`avcC`, `pasp`, `colr`, `btrt`).
public struct VisualSampleEntry: Box {
    /// How the entry's child boxes parse.
    public static let childTable = BoxTable([
        "avcC": AVCConfigurationBox.self, "pasp": PixelAspectRatioBox.self, "colr": ColourInformationBox.self, "btrt": BitRateBox.self,
    ])

    public var type: FourCharCode
    public var reserved: [UInt8] = Array(repeating: 0, count: 6)
    public var dataReferenceIndex: UInt16 = 1
    /// ISO pre_defined and reserved; QuickTime version, revision, vendor and qualities.
    public var version: UInt16 = 0
    public var revision: UInt16 = 0
    public var vendor: UInt32 = 0
    public var temporalQuality: UInt32 = 0
    public var spatialQuality: UInt32 = 0
    public var width: UInt16
    public var height: UInt16
    /// 16.16 pixels per inch (72 dpi by default).
    public var horizontalResolution: UInt32 = 0x0048_0000
    public var verticalResolution: UInt32 = 0x0048_0000
    public var dataSize: UInt32 = 0
    public var frameCount: UInt16 = 1
    /// A counted string in 32 bytes.
    public var compressorName: [UInt8] = Array(repeating: 0, count: 32)
    public var depth: UInt16 = 0x0018
    /// -1: no colour table.
    public var colorTableID: Int16 = -1
    public var children: [AnyBox]
    public var trailer: [UInt8] = []

    /// An entry of `type` for a `width`×`height` picture with `children`.
    public init(type: FourCharCode, width: Int, height: Int, children: [AnyBox]) {
        self.type = type
        self.width = UInt16(clamping: width)
        self.height = UInt16(clamping: height)
        self.children = children
    }

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

    /// The first child of type `B`.
    public func first<B: Box>(_: B.Type) -> B? {
        for child in children { if let box = child.box as? B { return box } }
        return nil
    }
}

/// `avcC`: the AVCDecoderConfigurationRecord (ISO/IEC 14496-15 §5.3.3.1), kept as its bytes;
/// ``VideoFormatDescription/init(avcC:codec:)`` reads it.
public struct AVCConfigurationBox: Box {
    public var type: FourCharCode { "avcC" }
    public var record: [UInt8]

    public init(record: [UInt8]) { self.record = record }

    public init(parsing reader: inout BoxReader) throws(ContainerError) { record = reader.rest() }

    public func writePayload(to writer: inout BoxWriter) { writer.append(record) }
}

/// `pasp`: the pixel aspect ratio (the SPS's sample aspect ratio).
public struct PixelAspectRatioBox: Box {
    public var type: FourCharCode { "pasp" }
    public var horizontalSpacing: UInt32
    public var verticalSpacing: UInt32
    public var trailer: [UInt8] = []

    public init(horizontalSpacing: UInt32, verticalSpacing: UInt32) {
        self.horizontalSpacing = horizontalSpacing
        self.verticalSpacing = verticalSpacing
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        horizontalSpacing = try reader.u32("hSpacing")
        verticalSpacing = try reader.u32("vSpacing")
        trailer = reader.rest()
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.u32(horizontalSpacing)
        writer.u32(verticalSpacing)
        writer.append(trailer)
    }
}

/// `colr`: colour primaries, transfer characteristics and matrix (`nclx` in ISO files, with
/// the full-range flag; `nclc` in QuickTime), or an ICC profile (kept as bytes).
public struct ColourInformationBox: Box {
    public var type: FourCharCode { "colr" }
    public var colourType: FourCharCode
    public var primaries: UInt16 = 2
    public var transfer: UInt16 = 2
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
    public var type: FourCharCode { "btrt" }
    public var bufferSizeDB: UInt32
    public var maxBitrate: UInt32
    public var avgBitrate: UInt32

    public init(bufferSizeDB: UInt32, maxBitrate: UInt32, avgBitrate: UInt32) {
        self.bufferSizeDB = bufferSizeDB
        self.maxBitrate = maxBitrate
        self.avgBitrate = avgBitrate
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        bufferSizeDB = try reader.u32("bufferSizeDB")
        maxBitrate = try reader.u32("maxBitrate")
        avgBitrate = try reader.u32("avgBitrate")
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.u32(bufferSizeDB); writer.u32(maxBitrate); writer.u32(avgBitrate)
    }
}

/// A `tmcd` or `tc64` sample entry (TN2310; QuickTime File Format "Timecode sample
/// description"): flags, timescale, frame duration, frames per second, and an optional
/// `name` box with the source reference.
public struct TimecodeSampleEntry: Box {
    public var type: FourCharCode
    public var reserved: [UInt8] = Array(repeating: 0, count: 6)
    public var dataReferenceIndex: UInt16 = 1
    public var reserved2: UInt32 = 0
    public var flags: UInt32
    public var timescale: UInt32
    public var frameDuration: UInt32
    /// The number of frames (frame quanta).
    public var numberOfFrames: UInt8
    public var reserved3: UInt8 = 0
    public var children: [AnyBox]
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

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        reserved = try reader.bytes(6, "reserved")
        dataReferenceIndex = try reader.u16("data_reference_index")
        reserved2 = try reader.u32("reserved")
        flags = try reader.u32("flags")
        timescale = try reader.u32("timescale")
        frameDuration = try reader.u32("frame duration")
        numberOfFrames = try reader.u8("number of frames")
        if reader.remaining >= 1 { reserved3 = try reader.u8("reserved") }
        (children, trailer) = try reader.children(BoxTable(["name": TimecodeSourceNameBox.self], lenient: true))
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.append(reserved)
        writer.u16(dataReferenceIndex)
        writer.u32(reserved2)
        writer.u32(flags); writer.u32(timescale); writer.u32(frameDuration)
        writer.u8(numberOfFrames)
        writer.u8(reserved3)
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }
}

/// `name` in a timecode sample entry: the source (reel) name as QuickTime text (size,
/// language code, characters).
public struct TimecodeSourceNameBox: Box {
    public var type: FourCharCode { "name" }
    public var languageCode: UInt16
    /// The characters as stored (UTF-8; Mac Roman agrees in the ASCII range).
    public var text: [UInt8]
    /// Bytes after the counted characters.
    public var trailer: [UInt8] = []

    public init(name: String, languageCode: UInt16 = 0) {
        self.languageCode = languageCode
        text = Array(name.utf8.prefix(Int(UInt16.max)))
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        let size = Int(try reader.u16("name size"))
        languageCode = try reader.u16("language")
        text = try reader.bytes(min(size, reader.remaining), "name")
        trailer = reader.rest()
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.u16(UInt16(text.count))
        writer.u16(languageCode)
        writer.append(text)
        writer.append(trailer)
    }

    /// The name as a string.
    public var name: String { String(decoding: text, as: UTF8.self) }
}
