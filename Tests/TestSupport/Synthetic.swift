public import H264Bitstream

/// Builders of synthetic parameter sets and slice headers, for the syntax paths real streams
/// in the fixtures do not cover (fields, POC type 1).
public enum Synthetic {
    public struct SPSOptions {
        public init() {}
        public var profileIdc: UInt32 = 100
        public var picOrderCntType: UInt32 = 0
        public var frameMbsOnly = true
        public var offsetForRefFrame: [Int32] = [2]
        public var offsetForNonRefPic: Int32 = -1
        public var offsetForTopToBottomField: Int32 = 1
        public var crop: (UInt32, UInt32, UInt32, UInt32)? = nil
        public var widthInMbs: UInt32 = 11
        public var heightInMapUnits: UInt32 = 9
        public var pocCycleCountOverride: UInt32? = nil
        public var log2MaxFrameNumMinus4: UInt32 = 0
    }

    public static func nal(_ header: UInt8, _ writer: BitWriter) -> [UInt8] {
        [header] + RBSP.escape(writer.bytes.span)
    }

    public static func sps(_ o: SPSOptions) -> [UInt8] {
        var w = BitWriter()
        w.bits(o.profileIdc, 8); w.bits(0, 8); w.bits(30, 8); w.ue(0)
        if o.profileIdc == 100 { w.ue(1); w.ue(0); w.ue(0); w.flag(false); w.flag(false) }
        w.ue(o.log2MaxFrameNumMinus4)  // MaxFrameNum 16 by default
        w.ue(o.picOrderCntType)
        if o.picOrderCntType == 0 { w.ue(2) }  // MaxPicOrderCntLsb 64
        if o.picOrderCntType == 1 {
            w.flag(false); w.se(o.offsetForNonRefPic); w.se(o.offsetForTopToBottomField)
            w.ue(o.pocCycleCountOverride ?? UInt32(o.offsetForRefFrame.count))
            for v in o.offsetForRefFrame { w.se(v) }
        }
        w.ue(4); w.flag(false)
        w.ue(o.widthInMbs - 1); w.ue(o.heightInMapUnits - 1)
        w.flag(o.frameMbsOnly)
        if !o.frameMbsOnly { w.flag(false) }
        w.flag(true)
        if let crop = o.crop { w.flag(true); w.ue(crop.0); w.ue(crop.1); w.ue(crop.2); w.ue(crop.3) } else { w.flag(false) }
        w.flag(false)
        w.rbspTrailingBits()
        return nal(0x67, w)
    }

    public static func pps(bottomFieldPicOrder: Bool = false) -> [UInt8] {
        var w = BitWriter()
        w.ue(0); w.ue(0); w.flag(false); w.flag(bottomFieldPicOrder); w.ue(0)
        w.ue(0); w.ue(0); w.flag(false); w.bits(0, 2); w.se(0); w.se(0); w.se(0)
        w.flag(true); w.flag(false); w.flag(false)
        w.rbspTrailingBits()
        return nal(0x68, w)
    }

    public struct Slice {
        public var idr = false
        public var refIdc: UInt8 = 2
        public var type: UInt32 = 0  // P
        public var frameNum: UInt32
        public var field: Bool? = nil  // nil: frame; true: bottom; false: top
        public var pocLsb: UInt32 = 0
        public var deltaPicOrderCnt0: Int32 = 0
        public var mmco5 = false

        public init(idr: Bool = false, refIdc: UInt8 = 2, type: UInt32 = 0, frameNum: UInt32, field: Bool? = nil,
                    pocLsb: UInt32 = 0, deltaPicOrderCnt0: Int32 = 0, mmco5: Bool = false) {
            self.idr = idr; self.refIdc = refIdc; self.type = type; self.frameNum = frameNum; self.field = field
            self.pocLsb = pocLsb; self.deltaPicOrderCnt0 = deltaPicOrderCnt0; self.mmco5 = mmco5
        }
    }

    /// A slice NAL unit for an SPS made by ``sps(_:)`` (MaxFrameNum 16, MaxPicOrderCntLsb 64).
    public static func slice(_ s: Slice, sps o: SPSOptions) -> [UInt8] {
        var w = BitWriter()
        w.ue(0); w.ue(s.type); w.ue(0)
        w.bits(s.frameNum, Int(o.log2MaxFrameNumMinus4) + 4)
        if !o.frameMbsOnly {
            w.flag(s.field != nil)
            if let bottom = s.field { w.flag(bottom) }
        }
        if s.idr { w.ue(0) }
        if o.picOrderCntType == 0 { w.bits(s.pocLsb, 6) }
        if o.picOrderCntType == 1 { w.se(s.deltaPicOrderCnt0) }
        if s.type == 1 { w.flag(true) }
        if s.type == 0 || s.type == 1 { w.flag(false) }  // num_ref_idx_active_override_flag
        if s.type != 2 { w.flag(false) }  // ref_pic_list_modification_flag_l0
        if s.type == 1 { w.flag(false) }
        if s.refIdc != 0 {
            if s.idr { w.flag(false); w.flag(false) } else if s.mmco5 { w.flag(true); w.ue(5); w.ue(0) } else { w.flag(false) }
        }
        w.se(0)  // slice_qp_delta (not parsed, but keeps the header realistic)
        w.rbspTrailingBits()
        return nal((s.refIdc << 5) | (s.idr ? 5 : 1), w)
    }

    public static func annexB(_ nals: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for nal in nals { AnnexB.append(nalUnit: nal.span, to: &out) }
        return out
    }
}
