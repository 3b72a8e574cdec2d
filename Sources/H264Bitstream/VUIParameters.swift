/// An exact frame rate: `numerator / denominator` frames per second, reduced.
public struct FrameRate: Hashable, Sendable, CustomStringConvertible, Codable {
    /// Frames, in lowest terms.
    public var numerator: UInt64
    /// Seconds, in lowest terms; never 0.
    public var denominator: UInt64

    /// The rate `numerator / denominator`, reduced; `denominator` must not be 0.
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

    /// The rate as a floating-point number of frames per second.
    public var framesPerSecond: Double { Double(numerator) / Double(denominator) }
    /// "30000/1001", or "25" when the denominator is 1... written always as a fraction, as ffprobe does.
    public var description: String { "\(numerator)/\(denominator)" }
}

/// hrd_parameters() (ITU-T H.264 §E.1.2).
public struct HRDParameters: Hashable, Sendable {
    /// One CPB specification of the HRD: its bit rate, buffer size and CBR flag (§E.2.2).
    public struct CPBSpecification: Hashable, Sendable {
        /// bit_rate_value_minus1: with bit_rate_scale, the CPB's input bit rate (§E.2.2).
        public var bitRateValueMinus1: UInt32
        /// cpb_size_value_minus1: with cpb_size_scale, the CPB's size (§E.2.2).
        public var cpbSizeValueMinus1: UInt32
        /// cbr_flag: the HRD operates in constant bit rate mode (§E.2.2).
        public var cbrFlag: Bool
    }
    /// cpb_cnt_minus1: the number of CPB specifications less one, 0...31 (§E.2.2).
    public var cpbCntMinus1: Int
    /// bit_rate_scale: the exponent, less 6, of every bit rate's unit (§E.2.2).
    public var bitRateScale: UInt8
    /// cpb_size_scale: the exponent, less 4, of every CPB size's unit (§E.2.2).
    public var cpbSizeScale: UInt8
    /// The cpb_cnt_minus1 + 1 CPB specifications, in order.
    public var cpbSpecifications: [CPBSpecification]
    /// initial_cpb_removal_delay_length_minus1: bits of the buffering period's delays less one (§E.2.2).
    public var initialCpbRemovalDelayLengthMinus1: UInt8
    /// cpb_removal_delay_length_minus1: bits of pic timing's cpb_removal_delay less one (§E.2.2).
    public var cpbRemovalDelayLengthMinus1: UInt8
    /// dpb_output_delay_length_minus1: bits of pic timing's dpb_output_delay less one (§E.2.2).
    public var dpbOutputDelayLengthMinus1: UInt8
    /// time_offset_length: bits of pic timing's time_offset; 0 means none (§E.2.2).
    public var timeOffsetLength: UInt8

    /// Parses hrd_parameters().
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
    /// aspect_ratio_info_present_flag: whether aspect_ratio_idc is present (§E.2.1).
    public var aspectRatioInfoPresentFlag = false
    /// aspect_ratio_idc: the sample aspect ratio as a Table E-1 index, 255 for Extended_SAR (§E.2.1).
    public var aspectRatioIdc: UInt8 = 0
    /// sar_width: the horizontal size of the sample aspect ratio, with Extended_SAR (§E.2.1).
    public var sarWidth: UInt16 = 0
    /// sar_height: the vertical size of the sample aspect ratio, with Extended_SAR (§E.2.1).
    public var sarHeight: UInt16 = 0
    /// overscan_info_present_flag: whether overscan_appropriate_flag is present (§E.2.1).
    public var overscanInfoPresentFlag = false
    /// overscan_appropriate_flag: the picture may be shown with overscan cropping (§E.2.1).
    public var overscanAppropriateFlag = false
    /// video_signal_type_present_flag: whether video_format, the range flag and colour description follow (§E.2.1).
    public var videoSignalTypePresentFlag = false
    /// video_format: 5 = unspecified.
    public var videoFormat: UInt8 = 5
    /// video_full_range_flag: samples use the full range (0...255 for 8 bits) rather than video range (§E.2.1).
    public var videoFullRangeFlag = false
    /// colour_description_present_flag: whether the three colour fields are present (§E.2.1).
    public var colourDescriptionPresentFlag = false
    /// colour_primaries, transfer_characteristics, matrix_coefficients (2 = unspecified).
    public var colourPrimaries: UInt8 = 2
    /// transfer_characteristics: the opto-electronic transfer function, Table E-4; 2 = unspecified (§E.2.1).
    public var transferCharacteristics: UInt8 = 2
    /// matrix_coefficients: how Y′CbCr is derived from R′G′B′, Table E-5; 2 = unspecified (§E.2.1).
    public var matrixCoefficients: UInt8 = 2
    /// chroma_loc_info_present_flag: whether the chroma sample locations are present (§E.2.1).
    public var chromaLocInfoPresentFlag = false
    /// chroma_sample_loc_type_top_field: the chroma sample location of the top field, 0...5 (Figure E-1).
    public var chromaSampleLocTypeTopField: UInt8 = 0
    /// chroma_sample_loc_type_bottom_field: the chroma sample location of the bottom field, 0...5 (Figure E-1).
    public var chromaSampleLocTypeBottomField: UInt8 = 0
    /// timing_info_present_flag: whether num_units_in_tick, time_scale and the fixed rate flag follow (§E.2.1).
    public var timingInfoPresentFlag = false
    /// num_units_in_tick: time units of the clock per tick, a tick being a field's period (§E.2.1).
    public var numUnitsInTick: UInt32 = 0
    /// time_scale: time units per second (§E.2.1).
    public var timeScale: UInt32 = 0
    /// fixed_frame_rate_flag: the picture period is constant (§E.2.1).
    public var fixedFrameRateFlag = false
    /// nal_hrd_parameters(), nil when nal_hrd_parameters_present_flag is 0 (§E.2.1).
    public var nalHrdParameters: HRDParameters?
    /// vcl_hrd_parameters(), nil when vcl_hrd_parameters_present_flag is 0 (§E.2.1).
    public var vclHrdParameters: HRDParameters?
    /// low_delay_hrd_flag: the HRD runs in low-delay mode; false without HRD parameters (§E.2.1).
    public var lowDelayHrdFlag = false
    /// pic_struct_present_flag: pic timing SEI messages carry pic_struct (§E.2.1).
    public var picStructPresentFlag = false
    /// bitstream_restriction_flag: whether the bitstream restriction fields below are present (§E.2.1).
    public var bitstreamRestrictionFlag = false
    /// motion_vectors_over_pic_boundaries_flag: motion vectors may point outside the picture (§E.2.1).
    public var motionVectorsOverPicBoundariesFlag = false
    /// max_bytes_per_pic_denom: bounds the bytes of a picture's VCL NAL units; 0 means no bound (§E.2.1).
    public var maxBytesPerPicDenom: UInt32 = 0
    /// max_bits_per_mb_denom: bounds the bits of a macroblock; 0 means no bound (§E.2.1).
    public var maxBitsPerMbDenom: UInt32 = 0
    /// log2_max_mv_length_horizontal: the largest horizontal motion vector component, log2 (§E.2.1).
    public var log2MaxMvLengthHorizontal: UInt32 = 0
    /// log2_max_mv_length_vertical: the largest vertical motion vector component, log2 (§E.2.1).
    public var log2MaxMvLengthVertical: UInt32 = 0
    /// max_num_reorder_frames: the most frames before a frame in decoding order and after it in output (§E.2.1).
    public var maxNumReorderFrames: UInt32 = 0
    /// max_dec_frame_buffering: the DPB size the HRD needs, in frames (§E.2.1).
    public var maxDecFrameBuffering: UInt32 = 0
    /// The RBSP ended inside the VUI; fields after that point have their defaults.
    public var isTruncated = false

    /// A VUI with every flag off and the fields at their defaults.
    public init() {}

    /// Parses vui_parameters(); data ending inside it sets ``isTruncated`` instead of failing.
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
