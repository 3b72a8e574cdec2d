/// An exact frame rate: `numerator / denominator` frames per second, reduced.
public struct FrameRate: Hashable, Sendable, CustomStringConvertible, Codable {
    public var numerator: UInt64
    public var denominator: UInt64

    public init(_ numerator: UInt64, _ denominator: UInt64) {
        precondition(denominator > 0, "a frame rate needs a non-zero denominator")
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        let g = max(a, 1)
        self.numerator = numerator / g
        self.denominator = denominator / g
    }

    /// Parses "30000/1001", "25", "29.97" (decimal rates become exact fractions of their digits).
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard let n = UInt64(parts[0]), let d = UInt64(parts[1]), n > 0, d > 0 else { return nil }
            self.init(n, d)
        } else if let n = UInt64(text), n > 0 {
            self.init(n, 1)
        } else {
            let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
            guard pieces.count == 2, pieces[1].count <= 9, let whole = UInt64(pieces[0]), let fraction = UInt64(pieces[1]) else { return nil }
            var scale: UInt64 = 1
            for _ in 0..<pieces[1].count { scale *= 10 }
            let (scaled, overflow) = whole.multipliedReportingOverflow(by: scale)
            guard !overflow, scaled <= UInt64.max - fraction, scaled + fraction > 0 else { return nil }
            self.init(scaled + fraction, scale)
        }
    }

    public var framesPerSecond: Double { Double(numerator) / Double(denominator) }
    /// "30000/1001", or "25" when the denominator is 1... written always as a fraction, as ffprobe does.
    public var description: String { "\(numerator)/\(denominator)" }
}

/// hrd_parameters() (ITU-T H.264 §E.1.2).
public struct HRDParameters: Hashable, Sendable {
    public struct CPBSpecification: Hashable, Sendable {
        public var bitRateValueMinus1: UInt32
        public var cpbSizeValueMinus1: UInt32
        public var cbrFlag: Bool
    }
    public var cpbCntMinus1: Int
    public var bitRateScale: UInt8
    public var cpbSizeScale: UInt8
    public var cpbSpecifications: [CPBSpecification]
    public var initialCpbRemovalDelayLengthMinus1: UInt8
    public var cpbRemovalDelayLengthMinus1: UInt8
    public var dpbOutputDelayLengthMinus1: UInt8
    public var timeOffsetLength: UInt8

    public init(parsing reader: inout BitReader) throws(BitstreamError) {
        cpbCntMinus1 = try reader.ue("cpb_cnt_minus1", max: 31)
        bitRateScale = UInt8(try reader.bits(4, "bit_rate_scale"))
        cpbSizeScale = UInt8(try reader.bits(4, "cpb_size_scale"))
        var specifications: [CPBSpecification] = []
        for _ in 0...cpbCntMinus1 {
            specifications.append(CPBSpecification(
                bitRateValueMinus1: try reader.ue("bit_rate_value_minus1"),
                cpbSizeValueMinus1: try reader.ue("cpb_size_value_minus1"),
                cbrFlag: try reader.flag("cbr_flag")))
        }
        cpbSpecifications = specifications
        initialCpbRemovalDelayLengthMinus1 = UInt8(try reader.bits(5, "initial_cpb_removal_delay_length_minus1"))
        cpbRemovalDelayLengthMinus1 = UInt8(try reader.bits(5, "cpb_removal_delay_length_minus1"))
        dpbOutputDelayLengthMinus1 = UInt8(try reader.bits(5, "dpb_output_delay_length_minus1"))
        timeOffsetLength = UInt8(try reader.bits(5, "time_offset_length"))
    }

    /// Bit rate of the first CPB specification in bits/s: (bit_rate_value_minus1 + 1) × 2^(6 + bit_rate_scale).
    public var bitRate: UInt64 { (UInt64(cpbSpecifications[0].bitRateValueMinus1) + 1) << (6 + UInt64(bitRateScale)) }
    /// CPB size of the first specification in bits: (cpb_size_value_minus1 + 1) × 2^(4 + cpb_size_scale).
    public var cpbSize: UInt64 { (UInt64(cpbSpecifications[0].cpbSizeValueMinus1) + 1) << (4 + UInt64(cpbSizeScale)) }
}

/// vui_parameters() (ITU-T H.264 §E.1.1).
///
/// Some encoders write a VUI cut short; as FFmpeg does, the fields parsed before the end are
/// kept and ``isTruncated`` says so, rather than losing the whole SPS.
public struct VUIParameters: Hashable, Sendable {
    public var aspectRatioInfoPresentFlag = false
    public var aspectRatioIdc: UInt8 = 0
    public var sarWidth: UInt16 = 0
    public var sarHeight: UInt16 = 0
    public var overscanInfoPresentFlag = false
    public var overscanAppropriateFlag = false
    public var videoSignalTypePresentFlag = false
    /// video_format: 5 = unspecified.
    public var videoFormat: UInt8 = 5
    public var videoFullRangeFlag = false
    public var colourDescriptionPresentFlag = false
    /// colour_primaries, transfer_characteristics, matrix_coefficients (2 = unspecified).
    public var colourPrimaries: UInt8 = 2
    public var transferCharacteristics: UInt8 = 2
    public var matrixCoefficients: UInt8 = 2
    public var chromaLocInfoPresentFlag = false
    public var chromaSampleLocTypeTopField: UInt8 = 0
    public var chromaSampleLocTypeBottomField: UInt8 = 0
    public var timingInfoPresentFlag = false
    public var numUnitsInTick: UInt32 = 0
    public var timeScale: UInt32 = 0
    public var fixedFrameRateFlag = false
    public var nalHrdParameters: HRDParameters?
    public var vclHrdParameters: HRDParameters?
    public var lowDelayHrdFlag = false
    public var picStructPresentFlag = false
    public var bitstreamRestrictionFlag = false
    public var motionVectorsOverPicBoundariesFlag = false
    public var maxBytesPerPicDenom: UInt32 = 0
    public var maxBitsPerMbDenom: UInt32 = 0
    public var log2MaxMvLengthHorizontal: UInt32 = 0
    public var log2MaxMvLengthVertical: UInt32 = 0
    public var maxNumReorderFrames: UInt32 = 0
    public var maxDecFrameBuffering: UInt32 = 0
    /// The RBSP ended inside the VUI; fields after that point have their defaults.
    public var isTruncated = false

    public init() {}

    public init(parsing reader: inout BitReader) throws(BitstreamError) {
        do {
            try parse(&reader)
        } catch where error.code == .endOfData {
            isTruncated = true
            // Bitstream restriction cut short is ignored whole, as in FFmpeg.
            if bitstreamRestrictionFlag { bitstreamRestrictionFlag = false; maxNumReorderFrames = 0; maxDecFrameBuffering = 0 }
        }
    }

    private mutating func parse(_ reader: inout BitReader) throws(BitstreamError) {
        aspectRatioInfoPresentFlag = try reader.flag("aspect_ratio_info_present_flag")
        if aspectRatioInfoPresentFlag {
            aspectRatioIdc = UInt8(try reader.bits(8, "aspect_ratio_idc"))
            if aspectRatioIdc == 255 {  // Extended_SAR
                sarWidth = UInt16(try reader.bits(16, "sar_width"))
                sarHeight = UInt16(try reader.bits(16, "sar_height"))
            }
        }
        overscanInfoPresentFlag = try reader.flag("overscan_info_present_flag")
        if overscanInfoPresentFlag { overscanAppropriateFlag = try reader.flag("overscan_appropriate_flag") }
        videoSignalTypePresentFlag = try reader.flag("video_signal_type_present_flag")
        if videoSignalTypePresentFlag {
            videoFormat = UInt8(try reader.bits(3, "video_format"))
            videoFullRangeFlag = try reader.flag("video_full_range_flag")
            colourDescriptionPresentFlag = try reader.flag("colour_description_present_flag")
            if colourDescriptionPresentFlag {
                colourPrimaries = UInt8(try reader.bits(8, "colour_primaries"))
                transferCharacteristics = UInt8(try reader.bits(8, "transfer_characteristics"))
                matrixCoefficients = UInt8(try reader.bits(8, "matrix_coefficients"))
            }
        }
        chromaLocInfoPresentFlag = try reader.flag("chroma_loc_info_present_flag")
        if chromaLocInfoPresentFlag {
            chromaSampleLocTypeTopField = UInt8(try reader.ue("chroma_sample_loc_type_top_field", max: 5))
            chromaSampleLocTypeBottomField = UInt8(try reader.ue("chroma_sample_loc_type_bottom_field", max: 5))
        }
        timingInfoPresentFlag = try reader.flag("timing_info_present_flag")
        if timingInfoPresentFlag {
            numUnitsInTick = try reader.bits(32, "num_units_in_tick")
            timeScale = try reader.bits(32, "time_scale")
            fixedFrameRateFlag = try reader.flag("fixed_frame_rate_flag")
        }
        if try reader.flag("nal_hrd_parameters_present_flag") { nalHrdParameters = try HRDParameters(parsing: &reader) }
        if try reader.flag("vcl_hrd_parameters_present_flag") { vclHrdParameters = try HRDParameters(parsing: &reader) }
        if nalHrdParameters != nil || vclHrdParameters != nil { lowDelayHrdFlag = try reader.flag("low_delay_hrd_flag") }
        picStructPresentFlag = try reader.flag("pic_struct_present_flag")
        bitstreamRestrictionFlag = try reader.flag("bitstream_restriction_flag")
        if bitstreamRestrictionFlag {
            motionVectorsOverPicBoundariesFlag = try reader.flag("motion_vectors_over_pic_boundaries_flag")
            maxBytesPerPicDenom = try reader.ue("max_bytes_per_pic_denom")
            maxBitsPerMbDenom = try reader.ue("max_bits_per_mb_denom")
            log2MaxMvLengthHorizontal = try reader.ue("log2_max_mv_length_horizontal")
            log2MaxMvLengthVertical = try reader.ue("log2_max_mv_length_vertical")
            maxNumReorderFrames = try reader.ue("max_num_reorder_frames")
            maxDecFrameBuffering = try reader.ue("max_dec_frame_buffering")
        }
    }

    /// Whether aspect_ratio_idc is one of the reserved values 17...254.
    public var hasReservedAspectRatioIdc: Bool { aspectRatioInfoPresentFlag && aspectRatioIdc > 16 && aspectRatioIdc < 255 }

    /// The sample aspect ratio (Table E-1), or nil when unspecified (idc 0, or a zero extended SAR).
    public var sampleAspectRatio: (width: Int, height: Int)? {
        guard aspectRatioInfoPresentFlag else { return nil }
        let table: [(Int, Int)] = [(0, 0), (1, 1), (12, 11), (10, 11), (16, 11), (40, 33), (24, 11), (20, 11), (32, 11),
                                   (80, 33), (18, 11), (15, 11), (64, 33), (160, 99), (4, 3), (3, 2), (2, 1)]
        if aspectRatioIdc == 255 {
            return sarWidth == 0 || sarHeight == 0 ? nil : (Int(sarWidth), Int(sarHeight))
        }
        guard aspectRatioIdc >= 1 && Int(aspectRatioIdc) < table.count else { return nil }
        return table[Int(aspectRatioIdc)]
    }

    /// The frame rate the timing information gives: time_scale / (2 × num_units_in_tick), as
    /// H.264 counts ticks per field (§E.2.1, equation E-6 with DeltaTfiDivisor 2 for a frame).
    public var frameRate: FrameRate? {
        guard timingInfoPresentFlag, numUnitsInTick > 0, timeScale > 0 else { return nil }
        return FrameRate(UInt64(timeScale), 2 * UInt64(numUnitsInTick))
    }

    /// CpbDpbDelaysPresentFlag (§D.2.2): pic timing SEI carries cpb/dpb delays.
    public var cpbDpbDelaysPresentFlag: Bool { nalHrdParameters != nil || vclHrdParameters != nil }
}
