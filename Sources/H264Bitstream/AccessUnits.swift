/// First-VCL-NAL detection (ITU-T H.264 §7.4.1.2.4) and access-unit boundaries (§7.4.1.2.3).
///
/// Feed every NAL unit in decoding order to ``startsNewAccessUnit(_:slice:pictureOrderCountType:)``;
/// it says whether that NAL unit is the first of a new access unit.
public struct AccessUnitDetector: Sendable {
    /// The first slice header of the current primary coded picture, if it has one.
    public private(set) var currentPictureSlice: SliceHeader?
    /// Whether the current access unit already has a slice of its primary picture.
    private var sawPrimaryVCL = false
    /// After VCL, an SPS, PPS or NAL unit 13–18 starts a new access unit, but the spec allows
    /// parameter sets inside one (§7.4.1.2.3 NOTE): the next slice is still compared with the
    /// previous picture's (§7.4.1.2.4) before it counts as a new picture. An AUD, SEI or end of
    /// sequence/stream in between settles it: the next slice is a new picture.
    private var pictureBoundaryIsCertain = true
    private var sawAnything = false
    /// Whether the NAL unit last given was the first slice of a new primary coded picture.
    public private(set) var isFirstSliceOfPicture = false

    /// A detector before the first NAL unit.
    public init() {}

    /// Whether a slice belongs to a different primary coded picture than `previous` (§7.4.1.2.4).
    public static func isFirstSliceOfNewPicture(_ slice: SliceHeader, after previous: SliceHeader, pictureOrderCountType: Int) -> Bool {
        if slice.frameNum != previous.frameNum { return true }
        if slice.picParameterSetId != previous.picParameterSetId { return true }
        if slice.fieldPicFlag != previous.fieldPicFlag { return true }
        if slice.fieldPicFlag && slice.bottomFieldFlag != previous.bottomFieldFlag { return true }
        if slice.nalUnitHeader.nalRefIdc != previous.nalUnitHeader.nalRefIdc
            && (slice.nalUnitHeader.nalRefIdc == 0 || previous.nalUnitHeader.nalRefIdc == 0) { return true }
        if pictureOrderCountType == 0
            && (slice.picOrderCntLsb != previous.picOrderCntLsb || slice.deltaPicOrderCntBottom != previous.deltaPicOrderCntBottom) { return true }
        if pictureOrderCountType == 1
            && (slice.deltaPicOrderCnt.0 != previous.deltaPicOrderCnt.0 || slice.deltaPicOrderCnt.1 != previous.deltaPicOrderCnt.1) { return true }
        if slice.idrPicFlag != previous.idrPicFlag { return true }
        if slice.idrPicFlag && previous.idrPicFlag && slice.idrPicId != previous.idrPicId { return true }
        return false
    }

    /// Decides whether `header` (with its parsed slice header, for slices whose header parsed)
    /// starts a new access unit, and updates the state.
    ///
    /// - Parameters:
    ///   - header: the NAL unit's header.
    ///   - slice: its parsed slice header (nil for a slice whose header did not parse, and for
    ///     NAL units that are not slices).
    ///   - pictureOrderCountType: pic_order_cnt_type of the slice's SPS.
    public mutating func startsNewAccessUnit(_ header: NALUnitHeader, slice: SliceHeader?, pictureOrderCountType: Int) -> Bool {
        defer { sawAnything = true }
        isFirstSliceOfPicture = false
        let type = header.nalUnitType.rawValue
        switch type {
        case 1, 2, 5:
            guard let slice else {
                // A slice whose header could not be parsed joins the current picture.
                let starts = !sawAnything
                sawPrimaryVCL = true
                return starts
            }
            if slice.redundantPicCnt > 0 { return !sawAnything }  // redundant coded picture: never first
            defer { sawPrimaryVCL = true }
            guard sawPrimaryVCL, let previous = currentPictureSlice else {
                if !pictureBoundaryIsCertain, let previous = currentPictureSlice,
                   !Self.isFirstSliceOfNewPicture(slice, after: previous, pictureOrderCountType: pictureOrderCountType) {
                    // A parameter set between two slices of one picture.
                    pictureBoundaryIsCertain = true
                    return false
                }
                pictureBoundaryIsCertain = true
                currentPictureSlice = slice
                isFirstSliceOfPicture = true
                return !sawAnything
            }
            if Self.isFirstSliceOfNewPicture(slice, after: previous, pictureOrderCountType: pictureOrderCountType) {
                currentPictureSlice = slice
                isFirstSliceOfPicture = true
                return true
            }
            return false
        case 6, 7, 8, 9, 14...18:
            // These begin a new access unit when they follow the last VCL NAL unit of a primary picture.
            if type == 6 || type == 9 { pictureBoundaryIsCertain = true } else if sawPrimaryVCL { pictureBoundaryIsCertain = false }
            if sawPrimaryVCL {
                sawPrimaryVCL = false
                return true
            }
            return !sawAnything
        case 10, 11:
            pictureBoundaryIsCertain = true
            return !sawAnything
        default:
            // Partitions B/C, end of sequence/stream, filler, SPS extension, auxiliary and
            // extension slices belong to the access unit they follow.
            return !sawAnything
        }
    }
}

/// Picture order count (ITU-T H.264 §8.2.1) for pic_order_cnt_type 0, 1 and 2, with the
/// resets at IDR pictures and after memory_management_control_operation 5.
///
/// Call ``compute(for:sequenceParameterSet:)`` once per picture (frame or field), in decoding order.
public struct PictureOrderCounter: Sendable {
    /// TopFieldOrderCnt and BottomFieldOrderCnt of one picture; a field has only its own.
    public struct Result: Hashable, Sendable {
        /// TopFieldOrderCnt, nil for a bottom field.
        public var topFieldOrderCnt: Int?
        /// BottomFieldOrderCnt, nil for a top field.
        public var bottomFieldOrderCnt: Int?
        /// PicOrderCnt(picture): the smaller of the two for a frame, the field's own otherwise.
        public var picOrderCnt: Int { min(topFieldOrderCnt ?? .max, bottomFieldOrderCnt ?? .max) }
    }

    private var prevPicOrderCntMsb = 0
    private var prevPicOrderCntLsb = 0
    private var prevFrameNumOffset = 0
    private var prevFrameNum = 0
    private var previousHadMMCO5 = false

    /// A counter before the first picture.
    public init() {}

    /// The order counts of the picture `slice` starts (§8.2.1), updating the state kept for the next one.
    public mutating func compute(for slice: SliceHeader, sequenceParameterSet sps: SequenceParameterSet) -> Result {
        let isField = slice.fieldPicFlag
        let isBottom = isField && slice.bottomFieldFlag
        let isTop = isField && !slice.bottomFieldFlag
        let isReference = slice.nalUnitHeader.nalRefIdc != 0
        var top = 0
        var bottom = 0

        switch sps.picOrderCntType {
        case 0:
            // §8.2.1.1
            if slice.idrPicFlag { prevPicOrderCntMsb = 0; prevPicOrderCntLsb = 0 }
            let maxLsb = sps.maxPicOrderCntLsb
            let lsb = slice.picOrderCntLsb
            let msb: Int
            if lsb < prevPicOrderCntLsb && prevPicOrderCntLsb - lsb >= maxLsb / 2 {
                msb = prevPicOrderCntMsb + maxLsb
            } else if lsb > prevPicOrderCntLsb && lsb - prevPicOrderCntLsb > maxLsb / 2 {
                msb = prevPicOrderCntMsb - maxLsb
            } else {
                msb = prevPicOrderCntMsb
            }
            if !isBottom { top = msb &+ lsb }
            bottom = isField ? msb &+ lsb : top &+ Int(slice.deltaPicOrderCntBottom)
            if isReference {
                if slice.hasMMCO5 {
                    // After MMCO 5 the picture's POC is rebased to 0 (tempPicOrderCnt, §8.2.1).
                    let temp = isField ? (isBottom ? bottom : top) : min(top, bottom)
                    prevPicOrderCntMsb = 0
                    prevPicOrderCntLsb = isBottom ? 0 : top - temp
                } else {
                    prevPicOrderCntMsb = msb
                    prevPicOrderCntLsb = lsb
                }
            }
        default:
            // §8.2.1.2 (type 1) and §8.2.1.3 (type 2) share FrameNumOffset.
            let frameNumOffset: Int
            if slice.idrPicFlag {
                frameNumOffset = 0
            } else {
                let previousOffset = previousHadMMCO5 ? 0 : prevFrameNumOffset
                frameNumOffset = prevFrameNum > slice.frameNum ? previousOffset + sps.maxFrameNum : previousOffset
            }
            if sps.picOrderCntType == 1 {
                let cycleLength = sps.offsetForRefFrame.count
                var absFrameNum = cycleLength != 0 ? frameNumOffset + slice.frameNum : 0
                if !isReference && absFrameNum > 0 { absFrameNum -= 1 }
                // A conforming stream keeps these within 32 bits; hostile values wrap rather than
                // trap (a cycle of 2^31 − 1 offsets times a growing FrameNumOffset overflows Int).
                var expected = 0
                if absFrameNum > 0 {
                    let expectedDeltaPerCycle = sps.offsetForRefFrame.reduce(0) { $0 &+ Int($1) }
                    let cycleCount = (absFrameNum - 1) / cycleLength
                    let frameNumInCycle = (absFrameNum - 1) % cycleLength
                    expected = cycleCount &* expectedDeltaPerCycle
                    for i in 0...frameNumInCycle { expected &+= Int(sps.offsetForRefFrame[i]) }
                }
                if !isReference { expected &+= Int(sps.offsetForNonRefPic) }
                if !isField {
                    top = expected &+ Int(slice.deltaPicOrderCnt.0)
                    bottom = top &+ Int(sps.offsetForTopToBottomField) &+ Int(slice.deltaPicOrderCnt.1)
                } else if !isBottom {
                    top = expected &+ Int(slice.deltaPicOrderCnt.0)
                } else {
                    bottom = expected &+ Int(sps.offsetForTopToBottomField) &+ Int(slice.deltaPicOrderCnt.0)
                }
            } else {
                let temp = slice.idrPicFlag ? 0 : (isReference ? 2 * (frameNumOffset + slice.frameNum) : 2 * (frameNumOffset + slice.frameNum) - 1)
                top = temp
                bottom = temp
            }
            prevFrameNumOffset = frameNumOffset
            prevFrameNum = slice.hasMMCO5 ? 0 : slice.frameNum
            previousHadMMCO5 = slice.hasMMCO5
        }
        if sps.picOrderCntType == 0 {
            prevFrameNum = slice.hasMMCO5 ? 0 : slice.frameNum
            previousHadMMCO5 = slice.hasMMCO5
        }
        return Result(topFieldOrderCnt: isBottom ? nil : top, bottomFieldOrderCnt: isTop ? nil : bottom)
    }
}

/// Assigns display (output) order to pictures given in decoding order.
///
/// Pictures between two IDR pictures (or pictures with MMCO 5, which output every earlier
/// picture, §C.4.4) form a period; within a period, display order is increasing
/// PicOrderCnt. Only the current period is held.
public struct DisplayOrderer: Sendable {
    private var period: [(decodeIndex: Int, picOrderCnt: Int)] = []
    private var nextDisplayIndex = 0

    /// An orderer with no pictures yet.
    public init() {}

    /// Adds the next picture in decoding order; returns the (decode index, display index)
    /// pairs of the period that this picture closed, if it starts a new one.
    public mutating func add(decodeIndex: Int, picOrderCnt: Int, startsPeriod: Bool) -> [(decodeIndex: Int, displayIndex: Int)] {
        var settled: [(Int, Int)] = []
        if startsPeriod { settled = flush() }
        period.append((decodeIndex, picOrderCnt))
        return settled
    }

    /// Settles the current period.
    public mutating func flush() -> [(decodeIndex: Int, displayIndex: Int)] {
        let sorted = period.enumerated().sorted { a, b in
            a.element.picOrderCnt != b.element.picOrderCnt ? a.element.picOrderCnt < b.element.picOrderCnt : a.offset < b.offset
        }
        var result: [(Int, Int)] = []
        result.reserveCapacity(sorted.count)
        for entry in sorted {
            result.append((entry.element.decodeIndex, nextDisplayIndex))
            nextDisplayIndex += 1
        }
        period.removeAll(keepingCapacity: true)
        return result
    }
}
