public import H264Bitstream

/// A four-character code ("avc1", "avc3", "©nam"): four bytes, read as Latin-1 characters
/// (QuickTime's `©` is byte 0xA9), so every code round-trips through its string.
public struct FourCharCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The four bytes, first character in the most significant byte.
    public let rawValue: UInt32
    /// The code with bytes `rawValue`.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The code of a four-character string of Latin-1 characters; nil for any other string.
    public init?(_ text: String) {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count == 4, scalars.allSatisfy({ $0.value <= 0xFF }) else { return nil }
        rawValue = scalars.reduce(0) { $0 << 8 | $1.value }
    }
    /// The code of a four-character literal; anything but four Latin-1 characters is a programmer error.
    public init(stringLiteral text: String) {
        guard let code = FourCharCode(text) else { preconditionFailure("a four-character code has four Latin-1 characters: \(text)") }
        self = code
    }
    /// The four characters, each byte read as Latin-1.
    public var description: String {
        String(String.UnicodeScalarView((0..<4).map { Unicode.Scalar(UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * $0))) }))
    }
    /// Four printable characters (letters, digits, space, punctuation, or `©`).
    public var isPrintable: Bool {
        (0..<4).allSatisfy { let byte = UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * $0)); return (0x20...0x7E).contains(byte) || byte == 0xA9 }
    }
}

/// The format of H.264 video samples (`CMVideoFormatDescription` for `avc1`): the parameter
/// sets that decode them, the NAL unit length size of their framing, and what the first SPS
/// says about the pictures.
///
/// Built from SPS and PPS NAL units (several of each), or parsed from an avcC record
/// (ISO/IEC 14496-15 §5.3.3.1), whose High-profile extension (chroma_format, bit depths, SPS
/// extensions) is written from the SPS itself, so 4:2:2 and 10-bit streams are described
/// right.
public struct VideoFormatDescription: Hashable, Sendable, CustomStringConvertible {
    /// The sample entry type: `avc1` (parameter sets here) or `avc3` (also in-band).
    public var codec: FourCharCode
    /// SPS NAL units, header byte included, in the order given.
    public var sequenceParameterSets: [[UInt8]] { parameterSets.sequenceParameterSets }
    /// PPS NAL units, header byte included.
    public var pictureParameterSets: [[UInt8]] { parameterSets.pictureParameterSets }
    /// SPS extension NAL units (type 13), from an avcC High-profile extension.
    public var sequenceParameterSetExtensions: [[UInt8]] { parameterSets.sequenceParameterSetExtensions }
    /// Bytes of each sample NAL unit's length prefix: 1, 2 or 4.
    public let nalUnitLengthSize: Int
    /// The first SPS, parsed: the source of everything below.
    public var sps: SequenceParameterSet { parameterSets.sps }
    /// The parameter sets and the parsed SPS, immutable and shared by every copy: every
    /// sample buffer carries its description, and copying one is a single retain, not one
    /// per array inside the parameter sets and the SPS.
    private let parameterSets: VideoParameterSets
    /// The picture size the container declares, when the description came from one (an
    /// MP4/MOV sample entry's width and height). Where it is smaller than the SPS's cropped
    /// size and the SPS crops nothing at the top or left, decoders crop the pictures to it, as
    /// libavcodec crops to the size a demuxer gives it (a GoPro file: 854x480 in its sample
    /// entry, 864x480 uncropped in its SPS; ffmpeg shows 854). Not compared by `==`.
    public var containerSize: (width: Int, height: Int)?

    /// profile_idc of the first SPS.
    public var profileIdc: UInt8 { sps.profileIdc }
    /// profile_compatibility: the constraint_set flags byte of the SPS.
    public var profileCompatibility: UInt8 { sequenceParameterSets[0].count > 2 ? sequenceParameterSets[0][2] : 0 }
    /// level_idc of the first SPS.
    public var levelIdc: UInt8 { sps.levelIdc }
    /// Decoded picture size before cropping.
    public var codedWidth: Int { sps.codedWidth }
    /// Decoded picture height before cropping.
    public var codedHeight: Int { sps.codedHeight }
    /// Display size after cropping.
    public var width: Int { sps.width }
    /// Display height after cropping.
    public var height: Int { sps.height }
    /// chroma_format_idc of the first SPS: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormatIdc: Int { sps.chromaFormatIdc }
    /// Luma bit depth, 8...14.
    public var bitDepthLuma: Int { sps.bitDepthLuma }
    /// Chroma bit depth, 8...14.
    public var bitDepthChroma: Int { sps.bitDepthChroma }
    /// The sample aspect ratio from the VUI, or nil when the SPS does not give one.
    public var sampleAspectRatio: (width: Int, height: Int)? { sps.vuiParameters?.sampleAspectRatio }
    /// colour_primaries, transfer_characteristics, matrix_coefficients and full range, when the VUI gives them.
    public var colour: (primaries: Int, transfer: Int, matrix: Int, fullRange: Bool)? {
        guard let vui = sps.vuiParameters, vui.colourDescriptionPresentFlag else { return nil }
        return (Int(vui.colourPrimaries), Int(vui.transferCharacteristics), Int(vui.matrixCoefficients), vui.videoFullRangeFlag)
    }
    /// The frame rate from the VUI's timing information, if present.
    public var frameRate: FrameRate? { sps.frameRate }

    /// A description from parameter set NAL units (header byte included, emulation
    /// prevention present). Every SPS and PPS must parse; the first SPS describes the pictures.
    public init(
        sequenceParameterSets: [[UInt8]],
        pictureParameterSets: [[UInt8]],
        sequenceParameterSetExtensions: [[UInt8]] = [],
        nalUnitLengthSize: Int = 4,
        codec: FourCharCode = "avc1"
    ) throws(BitstreamError) {
        try AVCC.validate(lengthSize: nalUnitLengthSize)
        guard !sequenceParameterSets.isEmpty else { throw BitstreamError(.missingParameterSet, "a format description needs at least one SPS") }
        guard !pictureParameterSets.isEmpty else { throw BitstreamError(.missingParameterSet, "a format description needs at least one PPS") }
        // What an avcC record can hold (its counts are 5 and 8 bits, its lengths 16 bits).
        guard sequenceParameterSets.count <= 31, pictureParameterSets.count <= 255, sequenceParameterSetExtensions.count <= 255 else {
            throw BitstreamError(.invalidLength, "\(sequenceParameterSets.count) SPS, \(pictureParameterSets.count) PPS and \(sequenceParameterSetExtensions.count) SPS extensions: an avcC holds at most 31, 255 and 255")
        }
        if let long = (sequenceParameterSets + pictureParameterSets + sequenceParameterSetExtensions).first(where: { $0.count > 0xFFFF }) {
            throw BitstreamError(.invalidLength, "a \(long.count)-byte parameter set: an avcC holds at most 65535 bytes each")
        }
        var registry = ParameterSetRegistry()
        var first: SequenceParameterSet?
        for (index, nal) in sequenceParameterSets.enumerated() {
            guard nal.first.map({ NALUnitHeader(byte: $0).nalUnitType == .sps }) == true else {
                throw BitstreamError(.invalidNALUnitHeader, "parameter set \(index) is not an SPS NAL unit")
            }
            do {
                let (sps, _) = try registry.add(spsNALUnit: nal.span)
                if first == nil { first = sps }
            } catch { throw error.prefixed("SPS \(index)") }
        }
        for (index, nal) in pictureParameterSets.enumerated() {
            guard nal.first.map({ NALUnitHeader(byte: $0).nalUnitType == .pps }) == true else {
                throw BitstreamError(.invalidNALUnitHeader, "parameter set \(sequenceParameterSets.count + index) is not a PPS NAL unit")
            }
            do { try registry.add(ppsNALUnit: nal.span) } catch { throw error.prefixed("PPS \(index)") }
        }
        self.codec = codec
        parameterSets = VideoParameterSets(sequenceParameterSets: sequenceParameterSets, pictureParameterSets: pictureParameterSets,
                                      sequenceParameterSetExtensions: sequenceParameterSetExtensions, sps: first!)
        self.nalUnitLengthSize = nalUnitLengthSize
    }

    /// The parameter set at `index`: SPS first, then PPS
    /// (`CMVideoFormatDescriptionGetH264ParameterSetAtIndex`).
    public func parameterSet(at index: Int) -> [UInt8]? {
        if index < sequenceParameterSets.count { return index >= 0 ? sequenceParameterSets[index] : nil }
        let ppsIndex = index - sequenceParameterSets.count
        return ppsIndex < pictureParameterSets.count ? pictureParameterSets[ppsIndex] : nil
    }

    /// Number of parameter sets (SPS and PPS).
    public var parameterSetCount: Int { sequenceParameterSets.count + pictureParameterSets.count }

    /// The RFC 6381 codec string: "avc1.PPCCLL" in hex (profile, compatibility, level).
    public var codecString: String {
        func hex(_ byte: UInt8) -> String {
            let digits = Array("0123456789ABCDEF")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
        }
        return "\(codec).\(hex(profileIdc))\(hex(profileCompatibility))\(hex(levelIdc))".lowercased()
    }

    /// Whether a decoder made for this description can take samples described by `other`
    /// without being made again (`CMVideoFormatDescription` and
    /// `VTDecompressionSessionCanAcceptFormatDescription`): both are H.264 (`avc1` or `avc3`)
    /// with the same NAL length size. Parameter sets may differ, the picture size, profile,
    /// chroma format and bit depth included: an H.264 decoder takes new parameter sets in band
    /// and outputs pictures of the new kind from the next IDR on, as a stream that changes them
    /// mid-way needs. This is the contract of ``canAccept(_:)`` everywhere in H264Kit (the
    /// decompression session's included).
    public func canAccept(_ other: VideoFormatDescription) -> Bool {
        (codec == "avc1" || codec == "avc3") && (other.codec == "avc1" || other.codec == "avc3") && nalUnitLengthSize == other.nalUnitLengthSize
    }

    /// Whether samples of `other` decode to pictures of the same kind: the same coded size,
    /// chroma format, bit depths and field coding (no new picture buffers needed).
    public func hasSamePictureGeometry(as other: VideoFormatDescription) -> Bool {
        codedWidth == other.codedWidth && codedHeight == other.codedHeight
            && chromaFormatIdc == other.chromaFormatIdc && sps.separateColourPlaneFlag == other.sps.separateColourPlaneFlag
            && bitDepthLuma == other.bitDepthLuma && bitDepthChroma == other.bitDepthChroma && sps.frameMbsOnlyFlag == other.sps.frameMbsOnlyFlag
    }

    /// Equal when the codec, length size and every parameter set are byte-identical.
    public static func == (a: VideoFormatDescription, b: VideoFormatDescription) -> Bool {
        guard a.codec == b.codec && a.nalUnitLengthSize == b.nalUnitLengthSize else { return false }
        // Copies of one description share their parameter sets: no byte compared.
        if a.parameterSets === b.parameterSets { return true }
        return a.sequenceParameterSets == b.sequenceParameterSets && a.pictureParameterSets == b.pictureParameterSets
            && a.sequenceParameterSetExtensions == b.sequenceParameterSetExtensions
    }

    /// Hashes the codec and parameter sets, a subset of what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(codec)
        hasher.combine(sequenceParameterSets)
        hasher.combine(pictureParameterSets)
    }

    /// The codec string, size, profile, level, pixel format and parameter set counts, for logs.
    public var description: String {
        "\(codecString) \(width)x\(height) \(sps.profileName) level \(levelIdc / 10).\(levelIdc % 10) \(sps.pixelFormatName), \(sequenceParameterSets.count) SPS, \(pictureParameterSets.count) PPS, \(nalUnitLengthSize)-byte NAL lengths"
    }
}

// MARK: - avcC (ISO/IEC 14496-15 §5.3.3.1, AVCDecoderConfigurationRecord)

extension VideoFormatDescription {
    /// Profiles whose avcC carries the extension with chroma_format and bit depths: every
    /// profile but Baseline, Main and Extended (14496-15 §5.3.3.1.2).
    static func avcCHasExtension(profileIdc: UInt8) -> Bool { profileIdc != 66 && profileIdc != 77 && profileIdc != 88 }

    /// The AVCDecoderConfigurationRecord, extension included for High profiles, its
    /// chroma_format and bit depths taken from the first SPS.
    public var avcC: [UInt8] {
        var out: [UInt8] = [1, profileIdc, profileCompatibility, levelIdc]
        out.append(0xFC | UInt8(nalUnitLengthSize - 1))
        out.append(0xE0 | UInt8(sequenceParameterSets.count))
        for sps in sequenceParameterSets { Self.appendLengthPrefixed(sps, to: &out) }
        out.append(UInt8(pictureParameterSets.count))
        for pps in pictureParameterSets { Self.appendLengthPrefixed(pps, to: &out) }
        if Self.avcCHasExtension(profileIdc: profileIdc) {
            out.append(0xFC | UInt8(chromaFormatIdc))
            out.append(0xF8 | UInt8(bitDepthLuma - 8))
            out.append(0xF8 | UInt8(bitDepthChroma - 8))
            out.append(UInt8(sequenceParameterSetExtensions.count))
            for ext in sequenceParameterSetExtensions { Self.appendLengthPrefixed(ext, to: &out) }
        }
        return out
    }

    static func appendLengthPrefixed(_ nal: [UInt8], to out: inout [UInt8]) {
        out.append(UInt8(nal.count >> 8))
        out.append(UInt8(nal.count & 0xFF))
        out.append(contentsOf: nal)
    }

    /// Parses an avcC record. Errors carry the byte offset in the record. A High-profile
    /// record without the extension (written by older muxers) is accepted; one whose extension
    /// contradicts the SPS (4:2:0/8-bit written for a 4:2:2 or 10-bit stream, as one peer
    /// does) is accepted too, and the SPS wins: ``avcC`` writes it back right.
    public init(avcC record: [UInt8], codec: FourCharCode = "avc1") throws(BitstreamError) {
        var offset = 0
        func byte(_ what: String) throws(BitstreamError) -> UInt8 {
            guard offset < record.count else { throw BitstreamError(.truncated, "avcC ends before \(what)", byteOffset: offset) }
            defer { offset += 1 }
            return record[offset]
        }
        func nalUnits(_ count: Int, _ what: String) throws(BitstreamError) -> [[UInt8]] {
            var result: [[UInt8]] = []
            for index in 0..<count {
                let lengthOffset = offset
                let length = Int(try byte("\(what) \(index) length")) << 8 | Int(try byte("\(what) \(index) length"))
                guard length > 0, length <= record.count - offset else {
                    throw BitstreamError(.invalidLength, "avcC \(what) \(index) declares \(length) bytes, \(record.count - offset) remain", byteOffset: lengthOffset)
                }
                result.append(Array(record[offset..<(offset + length)]))
                offset += length
            }
            return result
        }
        let version = try byte("configurationVersion")
        guard version == 1 else { throw BitstreamError(.unsupported, "avcC configurationVersion \(version) (only 1 is defined)", byteOffset: 0) }
        let profile = try byte("AVCProfileIndication")
        _ = try byte("profile_compatibility")
        _ = try byte("AVCLevelIndication")
        let lengthSize = Int(try byte("lengthSizeMinusOne") & 3) + 1
        guard lengthSize != 3 else { throw BitstreamError(.invalidLength, "avcC lengthSizeMinusOne is 2 (3-byte lengths are not allowed)", byteOffset: 4) }
        let spsCount = Int(try byte("numOfSequenceParameterSets") & 0x1F)
        let spss = try nalUnits(spsCount, "SPS")
        let ppsCount = Int(try byte("numOfPictureParameterSets"))
        let ppss = try nalUnits(ppsCount, "PPS")
        var extensions: [[UInt8]] = []
        // The extension is read when the record's profile says it is there, and kept only
        // when the SPS's profile has one too: the SPS wins, and ``avcC`` writes by its profile.
        let spsProfile = spss.first.flatMap { $0.count > 1 ? $0[1] : nil } ?? profile
        if Self.avcCHasExtension(profileIdc: profile) && Self.avcCHasExtension(profileIdc: spsProfile) && record.count - offset >= 4 {
            offset += 3  // chroma_format, bit depths: the SPS is authoritative
            extensions = try nalUnits(Int(try byte("numOfSequenceParameterSetExt")), "SPS extension")
        }
        try self.init(sequenceParameterSets: spss, pictureParameterSets: ppss, sequenceParameterSetExtensions: extensions,
                      nalUnitLengthSize: lengthSize, codec: codec)
    }
}

/// A ``VideoFormatDescription``'s parameter sets and parsed SPS, immutable, shared by its copies.
final class VideoParameterSets: Sendable {
    let sequenceParameterSets: [[UInt8]]
    let pictureParameterSets: [[UInt8]]
    let sequenceParameterSetExtensions: [[UInt8]]
    let sps: SequenceParameterSet

    init(sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]], sequenceParameterSetExtensions: [[UInt8]], sps: SequenceParameterSet) {
        self.sequenceParameterSets = sequenceParameterSets
        self.pictureParameterSets = pictureParameterSets
        self.sequenceParameterSetExtensions = sequenceParameterSetExtensions
        self.sps = sps
    }
}
