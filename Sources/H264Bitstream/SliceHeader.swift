/// slice_type (ITU-T H.264 Table 7-6); values 5–9 say all slices of the picture share the type.
public enum SliceType: Int, Hashable, Sendable, CustomStringConvertible {
    /// P (predicted), B (bi-predictive), I (intra), SP (switching P) and SI (switching I), by slice_type % 5.
    case p = 0, b = 1, i = 2, sp = 3, si = 4

    /// The type's letters: "P", "B", "I", "SP" or "SI".
    public var description: String {
        switch self {
        case .p: "P"
        case .b: "B"
        case .i: "I"
        case .sp: "SP"
        case .si: "SI"
        }
    }
}

/// dec_ref_pic_marking() (ITU-T H.264 §7.3.3.3).
public struct DecodedReferencePictureMarking: Hashable, Sendable {
    /// One memory_management_control_operation with its operands.
    public struct Operation: Hashable, Sendable {
        /// memory_management_control_operation: 1...6, what the operation does (§7.4.3.3, Table 7-9).
        public var memoryManagementControlOperation: Int
        /// difference_of_pic_nums_minus1, for operations 1 and 3; 0 otherwise (§7.4.3.3).
        public var differenceOfPicNumsMinus1: UInt32 = 0
        /// long_term_pic_num, for operation 2; 0 otherwise (§7.4.3.3).
        public var longTermPicNum: UInt32 = 0
        /// long_term_frame_idx, for operations 3 and 6; 0 otherwise (§7.4.3.3).
        public var longTermFrameIdx: UInt32 = 0
        /// max_long_term_frame_idx_plus1, for operation 4; 0 otherwise (§7.4.3.3).
        public var maxLongTermFrameIdxPlus1: UInt32 = 0
    }
    /// no_output_of_prior_pics_flag: an IDR picture discards the pictures not yet output (§7.4.3.3).
    public var noOutputOfPriorPicsFlag = false
    /// long_term_reference_flag: an IDR picture is marked as a long-term reference (§7.4.3.3).
    public var longTermReferenceFlag = false
    /// adaptive_ref_pic_marking_mode_flag: a non-IDR picture marks references by ``operations`` (§7.4.3.3).
    public var adaptiveRefPicMarkingModeFlag = false
    /// The memory_management_control_operation list, without the terminating 0; empty unless adaptive.
    public var operations: [Operation] = []

    /// The longest operation list accepted: each MMCO except 5 and 6 acts on one of at most 32
    /// reference fields, so a longer list is corrupt data rather than a legitimate stream.
    public static let maximumOperations = 66

    /// An empty marking: all flags false, no operations.
    public init() {}

    /// Parses dec_ref_pic_marking(); `idrPicFlag` selects the IDR form (two flags) or the operation list.
    public init(parsing reader: inout BitReader, idrPicFlag: Bool) throws(BitstreamError) {
        if idrPicFlag {
            noOutputOfPriorPicsFlag = try reader.flag("no_output_of_prior_pics_flag")
            longTermReferenceFlag = try reader.flag("long_term_reference_flag")
            return
        }
        adaptiveRefPicMarkingModeFlag = try reader.flag("adaptive_ref_pic_marking_mode_flag")
        guard adaptiveRefPicMarkingModeFlag else { return }
        while true {
            let mmco = try reader.ue("memory_management_control_operation", max: 6)
            if mmco == 0 { break }
            guard operations.count < Self.maximumOperations else {
                throw BitstreamError(.valueOutOfRange, "more than \(Self.maximumOperations) memory management operations", bitOffset: reader.bitPosition)
            }
            var operation = Operation(memoryManagementControlOperation: mmco)
            if mmco == 1 || mmco == 3 { operation.differenceOfPicNumsMinus1 = try reader.ue("difference_of_pic_nums_minus1") }
            if mmco == 2 { operation.longTermPicNum = try reader.ue("long_term_pic_num") }
            if mmco == 3 || mmco == 6 { operation.longTermFrameIdx = try reader.ue("long_term_frame_idx", max: 31).asUInt32 }
            if mmco == 4 { operation.maxLongTermFrameIdxPlus1 = try reader.ue("max_long_term_frame_idx_plus1", max: 32).asUInt32 }
            operations.append(operation)
        }
    }

    /// Whether memory_management_control_operation 5 (all references unused, POC reset) is present.
    public var hasMMCO5: Bool { operations.contains { $0.memoryManagementControlOperation == 5 } }
}

extension Int {
    @usableFromInline var asUInt32: UInt32 { UInt32(truncatingIfNeeded: self) }
}

/// slice_header() (ITU-T H.264 §7.3.3), parsed through dec_ref_pic_marking(): everything that
/// access-unit detection (§7.4.1.2.4) and picture order count (§8.2.1) need.
public struct SliceHeader: Hashable, Sendable {
    /// The header of the slice's NAL unit.
    public var nalUnitHeader: NALUnitHeader
    /// first_mb_in_slice: the address of the slice's first macroblock (§7.4.3).
    public var firstMbInSlice: Int
    /// slice_type as coded (0–9).
    public var sliceTypeRaw: Int
    /// pic_parameter_set_id: the PPS the slice uses, 0...255 (§7.4.3).
    public var picParameterSetId: Int
    /// colour_plane_id: the colour plane of a separately coded 4:4:4 slice, 0...2; 0 when absent (§7.4.3).
    public var colourPlaneId: Int = 0
    /// frame_num: the picture's frame number, modulo MaxFrameNum (§7.4.3).
    public var frameNum: Int
    /// field_pic_flag: the slice is of a field, not a frame; false when absent (§7.4.3).
    public var fieldPicFlag = false
    /// bottom_field_flag: the field is the bottom one; false when absent (§7.4.3).
    public var bottomFieldFlag = false
    /// idr_pic_id: identifies an IDR picture, 0...65535; 0 for non-IDR slices (§7.4.3).
    public var idrPicId: Int = 0
    /// pic_order_cnt_lsb: the picture order count modulo MaxPicOrderCntLsb, for POC type 0 (§7.4.3).
    public var picOrderCntLsb: Int = 0
    /// delta_pic_order_cnt_bottom: bottom field order count less top's, for POC type 0 (§7.4.3).
    public var deltaPicOrderCntBottom: Int32 = 0
    /// delta_pic_order_cnt[0] and [1]: order count deltas, for POC type 1; 0 when absent (§7.4.3).
    public var deltaPicOrderCnt: (Int32, Int32) = (0, 0)
    /// redundant_pic_cnt: 0 for a primary coded picture, above 0 for redundant ones (§7.4.3).
    public var redundantPicCnt: Int = 0
    /// direct_spatial_mv_pred_flag: spatial (true) or temporal direct prediction in B slices (§7.4.3).
    public var directSpatialMvPredFlag = false
    /// num_ref_idx_l0_active_minus1: the size of reference list 0 less one, the PPS default unless overridden.
    public var numRefIdxL0ActiveMinus1: Int = 0
    /// num_ref_idx_l1_active_minus1: the size of reference list 1 less one, the PPS default unless overridden.
    public var numRefIdxL1ActiveMinus1: Int = 0
    /// dec_ref_pic_marking() (§7.3.3.3), nil for non-reference slices (nal_ref_idc 0).
    public var decRefPicMarking: DecodedReferencePictureMarking?

    /// The slice type, with values 5–9 folded onto 0–4.
    public var sliceType: SliceType { SliceType(rawValue: sliceTypeRaw % 5)! }
    /// IdrPicFlag.
    public var idrPicFlag: Bool { nalUnitHeader.nalUnitType == .idrSlice }
    /// Whether dec_ref_pic_marking() has memory_management_control_operation 5.
    public var hasMMCO5: Bool { decRefPicMarking?.hasMMCO5 ?? false }

    /// Whether two headers are equal (every parsed field, ``deltaPicOrderCnt`` included).
    public static func == (a: SliceHeader, b: SliceHeader) -> Bool {
        a.nalUnitHeader == b.nalUnitHeader && a.firstMbInSlice == b.firstMbInSlice && a.sliceTypeRaw == b.sliceTypeRaw
            && a.picParameterSetId == b.picParameterSetId && a.colourPlaneId == b.colourPlaneId && a.frameNum == b.frameNum
            && a.fieldPicFlag == b.fieldPicFlag && a.bottomFieldFlag == b.bottomFieldFlag && a.idrPicId == b.idrPicId
            && a.picOrderCntLsb == b.picOrderCntLsb && a.deltaPicOrderCntBottom == b.deltaPicOrderCntBottom
            && a.deltaPicOrderCnt == b.deltaPicOrderCnt && a.redundantPicCnt == b.redundantPicCnt
            && a.directSpatialMvPredFlag == b.directSpatialMvPredFlag && a.numRefIdxL0ActiveMinus1 == b.numRefIdxL0ActiveMinus1
            && a.numRefIdxL1ActiveMinus1 == b.numRefIdxL1ActiveMinus1 && a.decRefPicMarking == b.decRefPicMarking
    }

    /// Hashes the NAL header, first_mb_in_slice, frame_num and pic_order_cnt_lsb, a subset of what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(nalUnitHeader)
        hasher.combine(firstMbInSlice)
        hasher.combine(frameNum)
        hasher.combine(picOrderCntLsb)
    }

    /// The longest ref_pic_list_modification() loop accepted (one entry per reference index
    /// plus the terminating 3).
    static let maximumModifications = 33

    /// Parses a slice header; the reader is positioned after the NAL unit header.
    ///
    /// - Parameters:
    ///   - reader: the slice's RBSP, positioned after the NAL unit header.
    ///   - nalUnitHeader: the slice's NAL header (types 1, 2 or 5).
    ///   - parameterSets: where the slice's PPS and SPS are looked up; a missing one is an error.
    ///     The fields needed are read in place, so no parameter set is copied per slice.
    public init(
        parsing reader: inout BitReader,
        nalUnitHeader: NALUnitHeader,
        parameterSets: ParameterSetRegistry
    ) throws(BitstreamError) {
        self.nalUnitHeader = nalUnitHeader
        firstMbInSlice = try reader.ue("first_mb_in_slice", max: UInt32(SequenceParameterSet.maximumDimensionInMbs * SequenceParameterSet.maximumDimensionInMbs))
        sliceTypeRaw = try reader.ue("slice_type", max: 9)
        picParameterSetId = try reader.ue("pic_parameter_set_id", max: 255)
        guard let ppsBox = parameterSets.ppsBox(picParameterSetId) else {
            throw BitstreamError(.missingParameterSet, "slice refers to PPS \(picParameterSetId), which has not been received", bitOffset: reader.bitPosition)
        }
        let spsId = ppsBox.entry.value.seqParameterSetId
        guard let spsBox = parameterSets.spsBox(spsId) else {
            throw BitstreamError(.missingParameterSet, "PPS \(picParameterSetId) refers to SPS \(spsId), which has not been received", bitOffset: reader.bitPosition)
        }
        // The syntax-driving fields, read once from the boxed sets.
        let separateColourPlaneFlag = spsBox.entry.value.separateColourPlaneFlag
        let log2MaxFrameNum = spsBox.entry.value.log2MaxFrameNumMinus4 + 4
        let frameMbsOnlyFlag = spsBox.entry.value.frameMbsOnlyFlag
        let picOrderCntType = spsBox.entry.value.picOrderCntType
        let log2MaxPicOrderCntLsb = spsBox.entry.value.log2MaxPicOrderCntLsbMinus4 + 4
        let deltaPicOrderAlwaysZeroFlag = spsBox.entry.value.deltaPicOrderAlwaysZeroFlag
        let chromaArrayType = spsBox.entry.value.chromaArrayType
        let bottomFieldPicOrderInFramePresentFlag = ppsBox.entry.value.bottomFieldPicOrderInFramePresentFlag
        let redundantPicCntPresentFlag = ppsBox.entry.value.redundantPicCntPresentFlag
        let weightedPredFlag = ppsBox.entry.value.weightedPredFlag
        let weightedBipredIdc = ppsBox.entry.value.weightedBipredIdc
        numRefIdxL0ActiveMinus1 = ppsBox.entry.value.numRefIdxL0DefaultActiveMinus1
        numRefIdxL1ActiveMinus1 = ppsBox.entry.value.numRefIdxL1DefaultActiveMinus1

        if separateColourPlaneFlag { colourPlaneId = Int(try reader.bits(2, "colour_plane_id")) }
        frameNum = Int(try reader.bits(log2MaxFrameNum, "frame_num"))
        if !frameMbsOnlyFlag {
            fieldPicFlag = try reader.flag("field_pic_flag")
            if fieldPicFlag { bottomFieldFlag = try reader.flag("bottom_field_flag") }
        }
        let idr = nalUnitHeader.nalUnitType == .idrSlice
        if idr { idrPicId = try reader.ue("idr_pic_id", max: 65535) }
        if picOrderCntType == 0 {
            picOrderCntLsb = Int(try reader.bits(log2MaxPicOrderCntLsb, "pic_order_cnt_lsb"))
            if bottomFieldPicOrderInFramePresentFlag && !fieldPicFlag {
                deltaPicOrderCntBottom = try reader.se("delta_pic_order_cnt_bottom")
            }
        }
        if picOrderCntType == 1 && !deltaPicOrderAlwaysZeroFlag {
            deltaPicOrderCnt.0 = try reader.se("delta_pic_order_cnt[0]")
            if bottomFieldPicOrderInFramePresentFlag && !fieldPicFlag {
                deltaPicOrderCnt.1 = try reader.se("delta_pic_order_cnt[1]")
            }
        }
        if redundantPicCntPresentFlag { redundantPicCnt = try reader.ue("redundant_pic_cnt", max: 127) }
        let type = SliceType(rawValue: sliceTypeRaw % 5)!
        if type == .b { directSpatialMvPredFlag = try reader.flag("direct_spatial_mv_pred_flag") }
        if type == .p || type == .sp || type == .b {
            if try reader.flag("num_ref_idx_active_override_flag") {
                numRefIdxL0ActiveMinus1 = try reader.ue("num_ref_idx_l0_active_minus1", max: 31)
                if type == .b { numRefIdxL1ActiveMinus1 = try reader.ue("num_ref_idx_l1_active_minus1", max: 31) }
            }
        }
        // ref_pic_list_modification() (§7.3.3.1); MVC's variant (types 20, 21) is not parsed here.
        if type != .i && type != .si { try Self.skipRefPicListModification(&reader) }
        if type == .b { try Self.skipRefPicListModification(&reader) }
        if (weightedPredFlag && (type == .p || type == .sp)) || (weightedBipredIdc == 1 && type == .b) {
            try Self.skipPredWeightTable(&reader, chromaArrayType: chromaArrayType, type: type,
                                         l0: numRefIdxL0ActiveMinus1, l1: numRefIdxL1ActiveMinus1)
        }
        if nalUnitHeader.nalRefIdc != 0 {
            decRefPicMarking = try DecodedReferencePictureMarking(parsing: &reader, idrPicFlag: idr)
        }
    }

    static func skipRefPicListModification(_ reader: inout BitReader) throws(BitstreamError) {
        guard try reader.flag("ref_pic_list_modification_flag") else { return }
        for _ in 0..<maximumModifications {
            let idc = try reader.ue("modification_of_pic_nums_idc", max: 5)
            switch idc {
            case 3: return
            case 0, 1, 2, 4, 5: _ = try reader.ue(idc == 2 ? "long_term_pic_num" : "abs_diff_pic_num_minus1")
            default: break
            }
        }
        throw BitstreamError(.valueOutOfRange, "ref_pic_list_modification has more than \(maximumModifications) entries", bitOffset: reader.bitPosition)
    }

    /// pred_weight_table() (§7.3.3.2), read and discarded.
    static func skipPredWeightTable(_ reader: inout BitReader, chromaArrayType: Int, type: SliceType, l0: Int, l1: Int) throws(BitstreamError) {
        _ = try reader.ue("luma_log2_weight_denom", max: 7)
        if chromaArrayType != 0 { _ = try reader.ue("chroma_log2_weight_denom", max: 7) }
        for list in 0..<(type == .b ? 2 : 1) {
            for _ in 0...(list == 0 ? l0 : l1) {
                if try reader.flag("luma_weight_flag") {
                    _ = try reader.se("luma_weight")
                    _ = try reader.se("luma_offset")
                }
                if chromaArrayType != 0, try reader.flag("chroma_weight_flag") {
                    for _ in 0..<4 { _ = try reader.se("chroma_weight/offset") }
                }
            }
        }
    }
}
