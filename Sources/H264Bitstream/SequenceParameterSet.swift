/// seq_parameter_set_data() (ITU-T H.264 §7.3.2.1.1), with its VUI (§E.1.1).
///
/// Field names are the spec's syntax elements in lowerCamelCase. Values the spec bounds are
/// checked as they are read (§7.4.2.1.1), so an absurd SPS is an error that names the element.
public struct SequenceParameterSet: Hashable, Sendable {
    /// profile_idc: the profile the stream conforms to, e.g. 66 Baseline, 77 Main, 100 High (Annex A).
    public var profileIdc: UInt8
    /// constraint_set0_flag ... constraint_set5_flag, bit 0 = set0.
    public var constraintSetFlags: UInt8
    /// level_idc: ten times the level number (31 for level 3.1; 9 for level 1b) (Annex A).
    public var levelIdc: UInt8
    /// seq_parameter_set_id: the id a PPS refers to the SPS by, 0...31 (§7.4.2.1.1).
    public var seqParameterSetId: Int
    /// chroma_format_idc: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4; 1 when absent (§7.4.2.1.1).
    public var chromaFormatIdc: Int = 1
    /// separate_colour_plane_flag: 4:4:4 coded as three separate colour planes (§7.4.2.1.1).
    public var separateColourPlaneFlag = false
    /// bit_depth_luma_minus8: luma bit depth less 8, 0...6 (§7.4.2.1.1).
    public var bitDepthLumaMinus8: Int = 0
    /// bit_depth_chroma_minus8: chroma bit depth less 8, 0...6 (§7.4.2.1.1).
    public var bitDepthChromaMinus8: Int = 0
    /// qpprime_y_zero_transform_bypass_flag: lossless coding of macroblocks with QP′Y 0 (§7.4.2.1.1).
    public var qpprimeYZeroTransformBypassFlag = false
    /// seq_scaling_matrix_present_flag's lists, nil when the flag is 0.
    public var seqScalingMatrix: ScalingMatrix?
    /// log2_max_frame_num_minus4: bits of frame_num less 4, 0...12 (§7.4.2.1.1).
    public var log2MaxFrameNumMinus4: Int
    /// pic_order_cnt_type: how picture order counts are coded, 0...2 (§7.4.2.1.1).
    public var picOrderCntType: Int
    /// log2_max_pic_order_cnt_lsb_minus4: bits of pic_order_cnt_lsb less 4, for type 0 (§7.4.2.1.1).
    public var log2MaxPicOrderCntLsbMinus4: Int = 0
    /// delta_pic_order_always_zero_flag: slice headers omit delta_pic_order_cnt, for type 1 (§7.4.2.1.1).
    public var deltaPicOrderAlwaysZeroFlag = false
    /// offset_for_non_ref_pic: the order count offset of non-reference pictures, for type 1 (§7.4.2.1.1).
    public var offsetForNonRefPic: Int32 = 0
    /// offset_for_top_to_bottom_field: bottom field order count less top's, for type 1 (§7.4.2.1.1).
    public var offsetForTopToBottomField: Int32 = 0
    /// offset_for_ref_frame[]: num_ref_frames_in_pic_order_cnt_cycle entries (≤ 255).
    public var offsetForRefFrame: [Int32] = []
    /// max_num_ref_frames: the most reference frames inter prediction may use, 0...16 (§7.4.2.1.1).
    public var maxNumRefFrames: Int
    /// gaps_in_frame_num_value_allowed_flag: whether frame_num may skip values (§7.4.2.1.1).
    public var gapsInFrameNumValueAllowedFlag: Bool
    /// pic_width_in_mbs_minus1: the picture width in macroblocks less one (§7.4.2.1.1).
    public var picWidthInMbsMinus1: Int
    /// pic_height_in_map_units_minus1: the height in slice-group map units less one (§7.4.2.1.1).
    public var picHeightInMapUnitsMinus1: Int
    /// frame_mbs_only_flag: every picture is a frame of frame macroblocks, no fields (§7.4.2.1.1).
    public var frameMbsOnlyFlag: Bool
    /// mb_adaptive_frame_field_flag: frames may mix frame and field macroblock pairs (MBAFF) (§7.4.2.1.1).
    public var mbAdaptiveFrameFieldFlag = false
    /// direct_8x8_inference_flag: how B_Skip and B_Direct motion vectors are derived (§7.4.2.1.1).
    public var direct8x8InferenceFlag: Bool
    /// frame_cropping_flag: whether the frame_crop offsets follow (§7.4.2.1.1).
    public var frameCroppingFlag: Bool
    /// frame_crop_left_offset, in crop units (``cropUnits``); 0 when absent.
    public var frameCropLeftOffset = 0
    /// frame_crop_right_offset, in crop units (``cropUnits``); 0 when absent.
    public var frameCropRightOffset = 0
    /// frame_crop_top_offset, in crop units (``cropUnits``); 0 when absent.
    public var frameCropTopOffset = 0
    /// frame_crop_bottom_offset, in crop units (``cropUnits``); 0 when absent.
    public var frameCropBottomOffset = 0
    /// vui_parameters() (§E.1.1), nil when vui_parameters_present_flag is 0.
    public var vuiParameters: VUIParameters?

    /// The profile_idc values whose SPS carries chroma_format_idc and bit depths (§7.3.2.1.1).
    public static let profilesWithChromaInfo: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135, 144]

    /// Largest picture dimension accepted, in macroblocks (level 6.2 allows at most 1055 a side
    /// for a square picture; twice that leaves room for extreme aspect ratios).
    public static let maximumDimensionInMbs = 2 * 1055

    /// Parses an SPS RBSP (after the NAL header, emulation prevention removed).
    public init(parsing reader: inout BitReader) throws(BitstreamError) {
        profileIdc = UInt8(try reader.bits(8, "profile_idc"))
        constraintSetFlags = 0
        for bit in 0..<6 where try reader.flag("constraint_set\(bit)_flag") { constraintSetFlags |= 1 << bit }
        try reader.skip(2)  // reserved_zero_2bits
        levelIdc = UInt8(try reader.bits(8, "level_idc"))
        seqParameterSetId = try reader.ue("seq_parameter_set_id", max: 31)
        if Self.profilesWithChromaInfo.contains(profileIdc) {
            chromaFormatIdc = try reader.ue("chroma_format_idc", max: 3)
            if chromaFormatIdc == 3 { separateColourPlaneFlag = try reader.flag("separate_colour_plane_flag") }
            bitDepthLumaMinus8 = try reader.ue("bit_depth_luma_minus8", max: 6)
            bitDepthChromaMinus8 = try reader.ue("bit_depth_chroma_minus8", max: 6)
            qpprimeYZeroTransformBypassFlag = try reader.flag("qpprime_y_zero_transform_bypass_flag")
            if try reader.flag("seq_scaling_matrix_present_flag") {
                seqScalingMatrix = try ScalingMatrix(parsing: &reader, count: chromaFormatIdc != 3 ? 8 : 12)
            }
        }
        log2MaxFrameNumMinus4 = try reader.ue("log2_max_frame_num_minus4", max: 12)
        picOrderCntType = try reader.ue("pic_order_cnt_type", max: 2)
        if picOrderCntType == 0 {
            log2MaxPicOrderCntLsbMinus4 = try reader.ue("log2_max_pic_order_cnt_lsb_minus4", max: 12)
        } else if picOrderCntType == 1 {
            deltaPicOrderAlwaysZeroFlag = try reader.flag("delta_pic_order_always_zero_flag")
            offsetForNonRefPic = try reader.se("offset_for_non_ref_pic")
            offsetForTopToBottomField = try reader.se("offset_for_top_to_bottom_field")
            let cycle = try reader.ue("num_ref_frames_in_pic_order_cnt_cycle", max: 255)
            offsetForRefFrame.reserveCapacity(cycle)
            for _ in 0..<cycle { offsetForRefFrame.append(try reader.se("offset_for_ref_frame")) }
        }
        maxNumRefFrames = try reader.ue("max_num_ref_frames", max: 16)
        gapsInFrameNumValueAllowedFlag = try reader.flag("gaps_in_frame_num_value_allowed_flag")
        picWidthInMbsMinus1 = try reader.ue("pic_width_in_mbs_minus1", max: UInt32(Self.maximumDimensionInMbs - 1))
        picHeightInMapUnitsMinus1 = try reader.ue("pic_height_in_map_units_minus1", max: UInt32(Self.maximumDimensionInMbs - 1))
        frameMbsOnlyFlag = try reader.flag("frame_mbs_only_flag")
        if !frameMbsOnlyFlag { mbAdaptiveFrameFieldFlag = try reader.flag("mb_adaptive_frame_field_flag") }
        direct8x8InferenceFlag = try reader.flag("direct_8x8_inference_flag")
        frameCroppingFlag = try reader.flag("frame_cropping_flag")
        if frameCroppingFlag {
            let cropStart = reader.bitPosition
            frameCropLeftOffset = try reader.ue("frame_crop_left_offset", max: 1 << 16)
            frameCropRightOffset = try reader.ue("frame_crop_right_offset", max: 1 << 16)
            frameCropTopOffset = try reader.ue("frame_crop_top_offset", max: 1 << 16)
            frameCropBottomOffset = try reader.ue("frame_crop_bottom_offset", max: 1 << 16)
            let (unitX, unitY) = cropUnits
            if unitX * (frameCropLeftOffset + frameCropRightOffset) >= codedWidth
                || unitY * (frameCropTopOffset + frameCropBottomOffset) >= codedHeight {
                throw BitstreamError(
                    .valueOutOfRange,
                    "frame cropping (left \(frameCropLeftOffset), right \(frameCropRightOffset), top \(frameCropTopOffset), bottom \(frameCropBottomOffset) in units of \(unitX)x\(unitY)) leaves nothing of the \(codedWidth)x\(codedHeight) picture",
                    byteOffset: cropStart >> 3, bitOffset: cropStart)
            }
        }
        if try reader.flag("vui_parameters_present_flag") {
            vuiParameters = try VUIParameters(parsing: &reader)
        }
    }

    /// Parses an SPS NAL unit (header byte included, emulation prevention present).
    public init(nalUnit: Span<UInt8>) throws(BitstreamError) {
        guard nalUnit.count > 1 else { throw BitstreamError(.truncated, "SPS NAL unit has no payload") }
        let rbsp = RBSP.unescape(nalUnit.extracting(1...))
        var reader = BitReader(rbsp.span)
        try self.init(parsing: &reader)
    }

    // MARK: Derived values (§7.4.2.1.1)

    /// constraint_set`index`_flag, for `index` 0...5.
    public func constraintSetFlag(_ index: Int) -> Bool { constraintSetFlags >> index & 1 == 1 }
    /// ChromaArrayType: 0 with separate colour planes, else chroma_format_idc.
    public var chromaArrayType: Int { separateColourPlaneFlag ? 0 : chromaFormatIdc }
    /// BitDepthY: the luma bit depth (equation 7-3).
    public var bitDepthLuma: Int { 8 + bitDepthLumaMinus8 }
    /// BitDepthC: the chroma bit depth (equation 7-5).
    public var bitDepthChroma: Int { 8 + bitDepthChromaMinus8 }
    /// MaxFrameNum: frame_num counts modulo this (equation 7-10).
    public var maxFrameNum: Int { 1 << (log2MaxFrameNumMinus4 + 4) }
    /// MaxPicOrderCntLsb: pic_order_cnt_lsb counts modulo this (equation 7-11).
    public var maxPicOrderCntLsb: Int { 1 << (log2MaxPicOrderCntLsbMinus4 + 4) }
    /// PicWidthInMbs: the picture width in macroblocks (equation 7-13).
    public var picWidthInMbs: Int { picWidthInMbsMinus1 + 1 }
    /// PicHeightInMapUnits: the picture height in slice-group map units (equation 7-16).
    public var picHeightInMapUnits: Int { picHeightInMapUnitsMinus1 + 1 }
    /// PicSizeInMapUnits: the number of slice-group map units in a picture (equation 7-17).
    public var picSizeInMapUnits: Int { picWidthInMbs * picHeightInMapUnits }
    /// FrameHeightInMbs: the frame height in macroblocks (equation 7-18).
    public var frameHeightInMbs: Int { (frameMbsOnlyFlag ? 1 : 2) * picHeightInMapUnits }
    /// Width and height of the decoded frame before cropping, in luma samples.
    public var codedWidth: Int { picWidthInMbs * 16 }
    /// The decoded frame's height before cropping, in luma samples.
    public var codedHeight: Int { frameHeightInMbs * 16 }
    /// CropUnitX, CropUnitY (equations 7-19 to 7-22).
    public var cropUnits: (x: Int, y: Int) {
        let fieldFactor = frameMbsOnlyFlag ? 1 : 2
        switch chromaArrayType {
        case 0: return (1, fieldFactor)
        case 1: return (2, 2 * fieldFactor)
        case 2: return (2, fieldFactor)
        default: return (1, fieldFactor)
        }
    }
    /// The display width after frame cropping.
    public var width: Int { codedWidth - cropUnits.x * (frameCropLeftOffset + frameCropRightOffset) }
    /// The display height after frame cropping.
    public var height: Int { codedHeight - cropUnits.y * (frameCropTopOffset + frameCropBottomOffset) }
    /// Whether pictures may be coded as fields (frame_mbs_only_flag is 0).
    public var isInterlaced: Bool { !frameMbsOnlyFlag }
    /// The frame rate from VUI timing, if present.
    public var frameRate: FrameRate? { vuiParameters?.frameRate }

    /// MaxDpbMbs for the level (ITU-T H.264 Table A-1); level_idc 9 and level 1.1 with
    /// constraint_set3 in Baseline/Main/Extended are level 1b.
    public var maxDpbMbs: Int {
        switch levelIdc {
        case 9, 10: 396
        case 11: constraintSetFlag(3) && [66, 77, 88].contains(profileIdc) ? 396 : 900
        case 12, 13, 20: 2376
        case 21: 4752
        case 22, 30: 8100
        case 31: 18000
        case 32: 20480
        case 40, 41: 32768
        case 42: 34816
        case 50: 110400
        case 51, 52: 184320
        default: levelIdc > 52 ? 696320 : 184320
        }
    }

    /// The largest decoded picture buffer the level allows, in frames (§A.3.1 h), at most 16.
    public var maxDpbFrames: Int { max(1, min(maxDpbMbs / max(1, picWidthInMbs * frameHeightInMbs), 16)) }

    /// How many frames can precede a frame in decoding order and follow it in output order: the
    /// VUI's max_num_reorder_frames when the bitstream restriction gives it (§E.2.1), 0 for
    /// intra-only profiles and for picture order count type 2 (output order is decoding order),
    /// else the DPB size the level allows, the bound every conforming stream keeps.
    public var reorderDepth: Int {
        if picOrderCntType == 2 { return 0 }
        if constraintSetFlag(3) && [44, 100, 110, 122, 244].contains(profileIdc) { return 0 }
        if let vui = vuiParameters, vui.bitstreamRestrictionFlag {
            return Int(min(vui.maxNumReorderFrames, 16))
        }
        return maxDpbFrames
    }

    /// The profile as FFmpeg names it (libavcodec/profiles.c), constraint flags applied as
    /// FFmpeg's H.264 parser does: constraint_set1 makes Baseline "Constrained", constraint_set3
    /// makes the High 10/4:2:2/4:4:4 and CAVLC 4:4:4 profiles "Intra".
    public var profileName: String {
        let intra = constraintSetFlag(3)
        switch profileIdc {
        case 66: return constraintSetFlag(1) ? "Constrained Baseline" : "Baseline"
        case 77: return "Main"
        case 88: return "Extended"
        case 100: return "High"
        case 110: return intra ? "High 10 Intra" : "High 10"
        case 122: return intra ? "High 4:2:2 Intra" : "High 4:2:2"
        case 144: return "High 4:4:4"
        case 244: return intra ? "High 4:4:4 Intra" : "High 4:4:4 Predictive"
        case 44: return "CAVLC 4:4:4"
        case 118: return "Multiview High"
        case 128: return "Stereo High"
        case 83: return "Scalable Baseline"
        case 86: return "Scalable High"
        default: return "unknown (\(profileIdc))"
        }
    }

    /// The decoded pixel format as FFmpeg names it ("yuv420p", "yuv420p10le", "yuvj420p", "gbrp",
    /// ...), following libavcodec's H.264 format choice: full-range 8-bit YUV is the "j" variant,
    /// 4:4:4 with the RGB matrix (matrix_coefficients 0) is planar GBR, and monochrome (4:0:0) is
    /// decoded to 4:2:0 with neutral chroma, so it is named as 4:2:0 too.
    public var pixelFormatName: String {
        let depth = bitDepthLuma
        let vui = vuiParameters
        let fullRange = vui?.videoSignalTypePresentFlag == true && vui?.videoFullRangeFlag == true
        let rgb = vui?.colourDescriptionPresentFlag == true && vui?.matrixCoefficients == 0
        let suffix = depth == 8 ? "" : "\(depth)le"
        switch chromaFormatIdc {
        case 0, 1:
            return depth == 8 ? (fullRange ? "yuvj420p" : "yuv420p") : "yuv420p\(suffix)"
        case 2:
            return depth == 8 ? (fullRange ? "yuvj422p" : "yuv422p") : "yuv422p\(suffix)"
        default:
            if rgb { return "gbrp\(depth == 8 ? "" : suffix)" }
            return depth == 8 ? (fullRange ? "yuvj444p" : "yuv444p") : "yuv444p\(suffix)"
        }
    }
}
