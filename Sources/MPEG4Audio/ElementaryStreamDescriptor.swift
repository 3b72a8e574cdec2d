public import Bitstream

/// `ES_Descriptor` (ISO/IEC 14496-1 §7.2.6.5): what an MP4 `esds` box holds after its version
/// and flags. For audio: the object type (MPEG-4 Audio, 0x40, for AAC), the buffer size and bit
/// rates, and the DecoderSpecificInfo (the ``AudioSpecificConfig``'s bytes). Descriptors it does
/// not read (IPI pointers, language, QoS, profile-level indications) are skipped by their size.
/// Every size is checked against the bytes that hold it.
public struct ElementaryStreamDescriptor: Hashable, Sendable {
    /// `ES_ID`.
    public var esID: UInt16
    /// `streamPriority`.
    public var streamPriority: UInt8
    /// `dependsOn_ES_ID`, when `streamDependenceFlag`.
    public var dependsOnESID: UInt16?
    /// The URL, when `URL_Flag`.
    public var url: [UInt8]?
    /// `OCR_ES_Id`, when `OCRstreamFlag`.
    public var ocrESID: UInt16?
    /// The decoder configuration.
    public var decoderConfig: DecoderConfigDescriptor
    /// The SLConfigDescriptor's `predefined` value (2 in MP4 files), nil without one.
    public var slConfigPredefined: UInt8?

    /// `DecoderConfigDescriptor` (§7.2.6.6).
    public struct DecoderConfigDescriptor: Hashable, Sendable {
        /// `objectTypeIndication`: 0x40 MPEG-4 Audio, 0x66-0x68 MPEG-2 AAC, 0x69 and 0x6B MP3.
        public var objectTypeIndication: UInt8
        /// `streamType`: 5 for audio.
        public var streamType: UInt8
        /// `upStream`.
        public var upStream: Bool
        /// `bufferSizeDB`: the decoding buffer, bytes (24 bits).
        public var bufferSize: UInt32
        /// `maxBitrate`, bit/s.
        public var maxBitrate: UInt32
        /// `avgBitrate`, bit/s (0 for a variable rate).
        public var averageBitrate: UInt32
        /// `DecoderSpecificInfo`: for AAC, the AudioSpecificConfig's bytes.
        public var decoderSpecificInfo: [UInt8]?

        /// A configuration of these values.
        public init(objectTypeIndication: UInt8, streamType: UInt8 = 5, upStream: Bool = false, bufferSize: UInt32, maxBitrate: UInt32,
                    averageBitrate: UInt32, decoderSpecificInfo: [UInt8]?) {
            self.objectTypeIndication = objectTypeIndication
            self.streamType = streamType
            self.upStream = upStream
            self.bufferSize = bufferSize
            self.maxBitrate = maxBitrate
            self.averageBitrate = averageBitrate
            self.decoderSpecificInfo = decoderSpecificInfo
        }
    }

    /// `objectTypeIndication` of MPEG-4 Audio (AAC and the rest of ISO/IEC 14496-3).
    public static let mpeg4Audio: UInt8 = 0x40

    /// An audio descriptor: ES_ID 0 (an MP4 file's tracks say their own IDs), the SL predefined
    /// for MP4.
    public init(decoderConfig: DecoderConfigDescriptor, esID: UInt16 = 0) {
        self.esID = esID
        streamPriority = 0
        dependsOnESID = nil
        url = nil
        ocrESID = nil
        self.decoderConfig = decoderConfig
        slConfigPredefined = 2
    }

    /// The descriptor tags read here.
    enum Tag: UInt8 { case esDescriptor = 3, decoderConfig = 4, decoderSpecificInfo = 5, slConfig = 6 }

    /// Reads a descriptor's tag and size (`sizeOfInstance`: up to four bytes of seven bits)
    /// at `offset`; returns its body's range.
    static func descriptor(_ bytes: [UInt8], at offset: Int, within end: Int) throws(BitstreamError) -> (tag: UInt8, body: Range<Int>) {
        guard offset < end else { throw BitstreamError(.truncated, "a descriptor tag expected", byteOffset: offset) }
        let tag = bytes[offset]
        var size = 0
        var position = offset + 1
        for index in 0..<4 {
            guard position < end else { throw BitstreamError(.truncated, "descriptor 0x\(String(tag, radix: 16)): its size is cut off", byteOffset: position) }
            let byte = bytes[position]
            position += 1
            size = size << 7 | Int(byte & 0x7F)
            if byte & 0x80 == 0 { break }
            if index == 3 { throw BitstreamError(.invalidLength, "descriptor 0x\(String(tag, radix: 16)): a size of more than four bytes", byteOffset: offset + 1) }
        }
        guard size <= end - position else {
            throw BitstreamError(.invalidLength, "descriptor 0x\(String(tag, radix: 16)) declares \(size) bytes, \(end - position) remain", byteOffset: offset)
        }
        return (tag, position..<(position + size))
    }

    /// Parses the ES_Descriptor in `bytes` (an esds box's payload after its version and flags).
    public init(bytes: [UInt8]) throws(BitstreamError) {
        let (tag, body) = try Self.descriptor(bytes, at: 0, within: bytes.count)
        guard tag == Tag.esDescriptor.rawValue else { throw BitstreamError(.invalidStructure, "an ES_Descriptor (tag 3) expected, tag \(tag) found", byteOffset: 0) }
        guard body.count >= 3 else { throw BitstreamError(.truncated, "an ES_Descriptor of \(body.count) bytes", byteOffset: body.lowerBound) }
        var position = body.lowerBound
        func u8() throws(BitstreamError) -> UInt8 {
            guard position < body.upperBound else { throw BitstreamError(.truncated, "the ES_Descriptor ends early", byteOffset: position) }
            defer { position += 1 }
            return bytes[position]
        }
        func u16() throws(BitstreamError) -> UInt16 { UInt16(try u8()) << 8 | UInt16(try u8()) }
        esID = try u16()
        let flags = try u8()
        streamPriority = flags & 0x1F
        dependsOnESID = flags & 0x80 != 0 ? try u16() : nil
        if flags & 0x40 != 0 {
            let length = Int(try u8())
            guard length <= body.upperBound - position else { throw BitstreamError(.invalidLength, "a URL of \(length) bytes", byteOffset: position) }
            url = Array(bytes[position..<(position + length)])
            position += length
        } else {
            url = nil
        }
        ocrESID = flags & 0x20 != 0 ? try u16() : nil
        var config: DecoderConfigDescriptor?
        var predefined: UInt8?
        while position < body.upperBound {
            let (inner, range) = try Self.descriptor(bytes, at: position, within: body.upperBound)
            switch inner {
            case Tag.decoderConfig.rawValue where config == nil: config = try Self.decoderConfig(bytes, range)
            case Tag.slConfig.rawValue where !range.isEmpty: predefined = bytes[range.lowerBound]
            default: break
            }
            position = range.upperBound
        }
        guard let config else { throw BitstreamError(.invalidStructure, "an ES_Descriptor without a DecoderConfigDescriptor", byteOffset: 0) }
        decoderConfig = config
        slConfigPredefined = predefined
    }

    private static func decoderConfig(_ bytes: [UInt8], _ body: Range<Int>) throws(BitstreamError) -> DecoderConfigDescriptor {
        guard body.count >= 13 else { throw BitstreamError(.truncated, "a DecoderConfigDescriptor of \(body.count) bytes (13 at least)", byteOffset: body.lowerBound) }
        let b = body.lowerBound
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3]) }
        var config = DecoderConfigDescriptor(objectTypeIndication: bytes[b], streamType: bytes[b + 1] >> 2, upStream: bytes[b + 1] & 2 != 0,
                                             bufferSize: UInt32(bytes[b + 2]) << 16 | UInt32(bytes[b + 3]) << 8 | UInt32(bytes[b + 4]),
                                             maxBitrate: u32(b + 5), averageBitrate: u32(b + 9), decoderSpecificInfo: nil)
        var position = b + 13
        while position < body.upperBound {
            let (tag, range) = try descriptor(bytes, at: position, within: body.upperBound)
            if tag == Tag.decoderSpecificInfo.rawValue, config.decoderSpecificInfo == nil { config.decoderSpecificInfo = Array(bytes[range]) }
            position = range.upperBound
        }
        return config
    }

    /// The descriptor's bytes, each size in the four-byte form FFmpeg and Apple write.
    public var serialized: [UInt8] {
        func wrap(_ tag: Tag, _ body: [UInt8]) -> [UInt8] {
            let size = body.count
            return [tag.rawValue, UInt8(0x80 | (size >> 21) & 0x7F), UInt8(0x80 | (size >> 14) & 0x7F), UInt8(0x80 | (size >> 7) & 0x7F), UInt8(size & 0x7F)] + body
        }
        func be32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
        var decoder: [UInt8] = [decoderConfig.objectTypeIndication, decoderConfig.streamType << 2 | (decoderConfig.upStream ? 2 : 0) | 1]
        decoder += be32(decoderConfig.bufferSize & 0xFF_FFFF).dropFirst()
        decoder += be32(decoderConfig.maxBitrate) + be32(decoderConfig.averageBitrate)
        if let info = decoderConfig.decoderSpecificInfo { decoder += wrap(.decoderSpecificInfo, info) }
        var body: [UInt8] = [UInt8(esID >> 8), UInt8(esID & 0xFF)]
        body.append((dependsOnESID != nil ? 0x80 : 0) | (url != nil ? 0x40 : 0) | (ocrESID != nil ? 0x20 : 0) | streamPriority & 0x1F)
        if let dependsOnESID { body += [UInt8(dependsOnESID >> 8), UInt8(dependsOnESID & 0xFF)] }
        if let url { body += [UInt8(min(url.count, 255))] + url.prefix(255) }
        if let ocrESID { body += [UInt8(ocrESID >> 8), UInt8(ocrESID & 0xFF)] }
        body += wrap(.decoderConfig, decoder)
        if let slConfigPredefined { body += wrap(.slConfig, [slConfigPredefined]) }
        return wrap(.esDescriptor, body)
    }
}
