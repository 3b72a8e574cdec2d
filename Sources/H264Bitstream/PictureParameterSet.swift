/// pic_parameter_set_rbsp() (ITU-T H.264 §7.3.2.2), including the slice-group (FMO) syntax.
public struct PictureParameterSet: Hashable, Sendable {
    /// The slice-group map of a PPS with num_slice_groups_minus1 > 0 (§7.4.2.2, §8.2.2).
    public enum SliceGroupMap: Hashable, Sendable {
        /// Type 0: run_length_minus1 per slice group.
        case interleaved(runLengthMinus1: [UInt32])
        /// Type 1.
        case dispersed
        /// Type 2: top_left and bottom_right per slice group except the last.
        case foreground(topLeft: [UInt32], bottomRight: [UInt32])
        /// Types 3 (box-out), 4 (raster scan), 5 (wipe).
        case changing(type: Int, sliceGroupChangeDirectionFlag: Bool, sliceGroupChangeRateMinus1: UInt32)
        /// Type 6: slice_group_id per map unit.
        case explicit(sliceGroupId: [UInt8])

        /// slice_group_map_type.
        public var type: Int {
            switch self {
            case .interleaved: 0
            case .dispersed: 1
            case .foreground: 2
            case .changing(let type, _, _): type
            case .explicit: 6
            }
        }
    }

    /// pic_parameter_set_id: the id slices refer to the PPS by, 0...255 (§7.4.2.2).
    public var picParameterSetId: Int
    /// seq_parameter_set_id: the SPS the PPS refers to, 0...31 (§7.4.2.2).
    public var seqParameterSetId: Int
    /// entropy_coding_mode_flag: CABAC when true, CAVLC when false (§7.4.2.2).
    public var entropyCodingModeFlag: Bool
    /// bottom_field_pic_order_in_frame_present_flag: slice headers carry the bottom field's POC delta (§7.4.2.2).
    public var bottomFieldPicOrderInFramePresentFlag: Bool
    /// num_slice_groups_minus1: the number of slice groups less one; 0 without FMO (§7.4.2.2).
    public var numSliceGroupsMinus1: Int
    /// The slice-group map, nil when there is one slice group (num_slice_groups_minus1 is 0).
    public var sliceGroupMap: SliceGroupMap?
    /// num_ref_idx_l0_default_active_minus1: default size of reference list 0 less one, 0...31 (§7.4.2.2).
    public var numRefIdxL0DefaultActiveMinus1: Int
    /// num_ref_idx_l1_default_active_minus1: default size of reference list 1 less one, 0...31 (§7.4.2.2).
    public var numRefIdxL1DefaultActiveMinus1: Int
    /// weighted_pred_flag: whether P and SP slices use explicit weighted prediction (§7.4.2.2).
    public var weightedPredFlag: Bool
    /// weighted_bipred_idc: B-slice weighted prediction, 0 default, 1 explicit, 2 implicit (§7.4.2.2).
    public var weightedBipredIdc: Int
    /// pic_init_qp_minus26: the initial SliceQPY less 26 (§7.4.2.2).
    public var picInitQpMinus26: Int
    /// pic_init_qs_minus26: the initial SliceQSY less 26, for SP and SI slices (§7.4.2.2).
    public var picInitQsMinus26: Int
    /// chroma_qp_index_offset: the offset added to QPY to find the Cb quantiser (§7.4.2.2).
    public var chromaQpIndexOffset: Int
    /// deblocking_filter_control_present_flag: whether slice headers carry deblocking filter fields (§7.4.2.2).
    public var deblockingFilterControlPresentFlag: Bool
    /// constrained_intra_pred_flag: whether intra prediction uses only intra-coded neighbours (§7.4.2.2).
    public var constrainedIntraPredFlag: Bool
    /// redundant_pic_cnt_present_flag: whether slice headers carry redundant_pic_cnt (§7.4.2.2).
    public var redundantPicCntPresentFlag: Bool
    /// transform_8x8_mode_flag: whether macroblocks may use the 8x8 transform; false when absent (§7.4.2.2).
    public var transform8x8ModeFlag = false
    /// pic_scaling_matrix_present_flag's lists, nil when the flag is 0.
    public var picScalingMatrix: ScalingMatrix?
    /// second_chroma_qp_index_offset; equals chroma_qp_index_offset when absent.
    public var secondChromaQpIndexOffset: Int

    /// Parses a PPS RBSP. `sequenceParameterSet` looks up an SPS by id: the PPS's SPS must be
    /// known (as in FFmpeg), for its chroma format sets the number of 8x8 scaling lists and its
    /// size bounds the slice-group map.
    public init(
        parsing reader: inout BitReader,
        sequenceParameterSet: (Int) -> SequenceParameterSet?
    ) throws(BitstreamError) {
        picParameterSetId = try reader.ue("pic_parameter_set_id", max: 255)
        seqParameterSetId = try reader.ue("seq_parameter_set_id", max: 31)
        entropyCodingModeFlag = try reader.flag("entropy_coding_mode_flag")
        bottomFieldPicOrderInFramePresentFlag = try reader.flag("bottom_field_pic_order_in_frame_present_flag")
        numSliceGroupsMinus1 = try reader.ue("num_slice_groups_minus1", max: 7)
        guard let sps = sequenceParameterSet(seqParameterSetId) else {
            throw BitstreamError(.missingParameterSet, "PPS \(picParameterSetId) refers to SPS \(seqParameterSetId), which has not been received", bitOffset: reader.bitPosition)
        }
        if numSliceGroupsMinus1 > 0 {
            let mapType = try reader.ue("slice_group_map_type", max: 6)
            switch mapType {
            case 0:
                var runs: [UInt32] = []
                for _ in 0...numSliceGroupsMinus1 { runs.append(try reader.ue("run_length_minus1")) }
                sliceGroupMap = .interleaved(runLengthMinus1: runs)
            case 1:
                sliceGroupMap = .dispersed
            case 2:
                var topLeft: [UInt32] = []
                var bottomRight: [UInt32] = []
                for _ in 0..<numSliceGroupsMinus1 {
                    topLeft.append(try reader.ue("top_left"))
                    bottomRight.append(try reader.ue("bottom_right"))
                }
                sliceGroupMap = .foreground(topLeft: topLeft, bottomRight: bottomRight)
            case 3, 4, 5:
                let direction = try reader.flag("slice_group_change_direction_flag")
                let rate = try reader.ue("slice_group_change_rate_minus1", max: UInt32(sps.picSizeInMapUnits) - 1)
                sliceGroupMap = .changing(type: mapType, sliceGroupChangeDirectionFlag: direction, sliceGroupChangeRateMinus1: UInt32(rate))
            default:
                let sizeMinus1 = try reader.ue("pic_size_in_map_units_minus1", max: UInt32(sps.picSizeInMapUnits - 1))
                if sizeMinus1 + 1 != sps.picSizeInMapUnits {
                    throw BitstreamError(.valueOutOfRange, "pic_size_in_map_units_minus1 \(sizeMinus1) does not match the SPS's \(sps.picSizeInMapUnits) map units",
                                         bitOffset: reader.bitPosition)
                }
                guard reader.bitsLeft >= sizeMinus1 + 1 else {
                    throw BitstreamError(.endOfData, "slice_group_id needs \(sizeMinus1 + 1) entries", bitOffset: reader.bitPosition)
                }
                let bits = Self.ceilLog2(numSliceGroupsMinus1 + 1)
                var ids: [UInt8] = []
                ids.reserveCapacity(sizeMinus1 + 1)
                for _ in 0...sizeMinus1 { ids.append(UInt8(try reader.bits(bits, "slice_group_id"))) }
                sliceGroupMap = .explicit(sliceGroupId: ids)
            }
        }
        numRefIdxL0DefaultActiveMinus1 = try reader.ue("num_ref_idx_l0_default_active_minus1", max: 31)
        numRefIdxL1DefaultActiveMinus1 = try reader.ue("num_ref_idx_l1_default_active_minus1", max: 31)
        weightedPredFlag = try reader.flag("weighted_pred_flag")
        weightedBipredIdc = Int(try reader.bits(2, "weighted_bipred_idc"))
        // −(26 + QpBdOffsetY)...25 (§7.4.2.2); the bit depth may not be known yet, so the
        // bound for 14-bit is used. FFmpeg accepts pic_init_qs_minus26 in the same range.
        picInitQpMinus26 = try reader.se("pic_init_qp_minus26", in: -(26 + 36)...25)
        picInitQsMinus26 = try reader.se("pic_init_qs_minus26", in: -(26 + 36)...25)
        chromaQpIndexOffset = try reader.se("chroma_qp_index_offset", in: -12...12)
        deblockingFilterControlPresentFlag = try reader.flag("deblocking_filter_control_present_flag")
        constrainedIntraPredFlag = try reader.flag("constrained_intra_pred_flag")
        redundantPicCntPresentFlag = try reader.flag("redundant_pic_cnt_present_flag")
        secondChromaQpIndexOffset = chromaQpIndexOffset
        if reader.moreRBSPData() {
            transform8x8ModeFlag = try reader.flag("transform_8x8_mode_flag")
            if try reader.flag("pic_scaling_matrix_present_flag") {
                let count = 6 + (sps.chromaFormatIdc != 3 ? 2 : 6) * (transform8x8ModeFlag ? 1 : 0)
                picScalingMatrix = try ScalingMatrix(parsing: &reader, count: count)
            }
            secondChromaQpIndexOffset = try reader.se("second_chroma_qp_index_offset", in: -12...12)
        }
    }

    /// Parses a PPS NAL unit (header byte included, emulation prevention present).
    public init(nalUnit: Span<UInt8>, sequenceParameterSet: (Int) -> SequenceParameterSet?) throws(BitstreamError) {
        guard nalUnit.count > 1 else { throw BitstreamError(.truncated, "PPS NAL unit has no payload") }
        let rbsp = RBSP.unescape(nalUnit.extracting(1...))
        var reader = BitReader(rbsp.span)
        try self.init(parsing: &reader, sequenceParameterSet: sequenceParameterSet)
    }

    /// Ceil(Log2(n)) for n ≥ 1.
    static func ceilLog2(_ n: Int) -> Int {
        var bits = 0
        while (1 << bits) < n { bits += 1 }
        return bits
    }
}
