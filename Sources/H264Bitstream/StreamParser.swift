/// One NAL unit as the stream parser saw it.
public struct ParsedNALUnit: Sendable {
    /// Zero-based index in the stream.
    public var index: Int
    /// Where the NAL unit sits in the byte stream.
    public var location: AnnexBNALUnit
    /// The NAL unit header (nal_ref_idc and nal_unit_type).
    public var header: NALUnitHeader
    /// The slice header, for slices whose header parsed.
    public var slice: SliceHeader?
    /// PicOrderCnt of the picture the slice belongs to.
    public var picOrderCnt: Int?
    /// Index of the access unit the NAL unit belongs to.
    public var accessUnitIndex: Int
    /// The NAL unit's size in bytes, header byte included, start code excluded.
    public var size: Int { location.payload.count }
}

/// One decoded picture in decoding order: a frame, or a complementary field pair (counted once,
/// as FFmpeg outputs one frame for it), or an unpaired field.
public struct PictureInfo: Sendable, Hashable {
    /// What the picture is: a frame, one field, or a complementary field pair.
    public enum Structure: String, Sendable, Hashable {
        /// A frame; a single top or bottom field; or a complementary field pair counted as one picture.
        case frame, topField = "top field", bottomField = "bottom field", fieldPair = "field pair"
    }
    /// Index in decoding order.
    public var decodeIndex: Int
    /// Offset of the first byte of its first access unit, and the bytes through its last.
    public var byteRange: Range<Int>
    /// Whether the picture is a frame, a single field or a field pair.
    public var structure: Structure
    /// Whether the picture is an IDR picture (IdrPicFlag).
    public var isIDR: Bool
    /// Whether a slice of the picture has memory_management_control_operation 5 (§7.4.3.3).
    public var hasMMCO5: Bool
    /// A recovery point SEI was in one of its access units.
    public var hasRecoveryPoint: Bool
    /// frame_num of the picture's slices (§7.4.3).
    public var frameNum: Int
    /// The slice types of the picture's slices.
    public var sliceTypes: Set<SliceType>
    /// TopFieldOrderCnt (§8.2.1), nil for a bottom field alone.
    public var topFieldOrderCnt: Int?
    /// BottomFieldOrderCnt (§8.2.1), nil for a top field alone.
    public var bottomFieldOrderCnt: Int?
    /// nal_ref_idc of the picture's first slice: 0 for a non-reference picture.
    public var nalRefIdc: UInt8
    /// PicOrderCnt of the frame or pair.
    public var picOrderCnt: Int { min(topFieldOrderCnt ?? .max, bottomFieldOrderCnt ?? .max) }
    /// Index in display order, known once the picture's period has ended.
    public var displayIndex: Int?
    /// The id of the SPS the picture uses.
    public var seqParameterSetId: Int
    /// A random access point: IDR, or a recovery point SEI.
    public var isSync: Bool { isIDR || hasRecoveryPoint }
    /// Whether another picture may reference this one (nal_ref_idc != 0).
    public var isReference: Bool { nalRefIdc != 0 }
}

/// A problem found while parsing a stream: an error (the NAL unit could not be used) or a
/// warning (something odd that does not stop parsing).
public struct StreamDiagnostic: Sendable, CustomStringConvertible {
    /// How serious a diagnostic is: a warning parsing goes on past, or an error that made a NAL unit unusable.
    public enum Severity: String, Sendable { case warning, error }
    /// Whether this is a warning or an error.
    public var severity: Severity
    /// What was wrong and where.
    public var error: BitstreamError
    /// The severity, then the error.
    public var description: String { "\(severity): " + error.description }
}

/// Parses an H.264 elementary stream NAL unit by NAL unit: keeps the parameter sets, parses
/// slice headers and SEI, finds access units and pictures, computes picture order counts and
/// display order. It holds no stream bytes, so it works the same over a mapped file and over
/// chunks from a pipe.
public struct H264StreamParser: Sendable {
    /// The SPS and PPS received, by id.
    public private(set) var registry = ParameterSetRegistry()
    /// Number of NAL units consumed.
    public private(set) var nalUnitCount = 0
    /// NAL units seen, by nal_unit_type (0...31).
    public private(set) var nalTypeCounts = [Int](repeating: 0, count: 32)
    /// NAL units seen, by type, for the types present.
    public var nalCounts: [NALUnitType: Int] {
        Dictionary(uniqueKeysWithValues: nalTypeCounts.enumerated().compactMap { $1 > 0 ? (NALUnitType(rawValue: UInt8($0)), $1) : nil })
    }
    /// SEI messages seen, by payloadType.
    public private(set) var seiCounts: [Int: Int] = [:]
    /// Number of access units started (a field of a PAFF pair is its own access unit).
    public private(set) var accessUnitCount = 0
    /// Pictures in decoding order (fields of a pair merged): every one by default; with
    /// ``retainedPictureLimit`` the most recent, ``discardedPictureCount`` having gone before.
    public private(set) var pictures: [PictureInfo] = []
    /// How many pictures to keep, for a parser that runs for as long as a stream does (a
    /// remuxer, a network ingest): nil keeps every picture (what `inspect` reports on). With
    /// a limit, older pictures are let go, display order is not worked out (``PictureInfo/displayIndex``
    /// stays nil) and memory stays bounded however long the stream is.
    public let retainedPictureLimit: Int?
    /// Pictures let go from the front of ``pictures``.
    public private(set) var discardedPictureCount = 0
    /// Diagnostics, the first ``maximumStoredDiagnostics`` of them; see ``errorCount`` and ``warningCount``.
    public private(set) var diagnostics: [StreamDiagnostic] = []
    /// Number of errors reported, including those not kept in ``diagnostics``.
    public private(set) var errorCount = 0
    /// Number of warnings reported, including those not kept in ``diagnostics``.
    public private(set) var warningCount = 0
    /// The SPS used by the most recent picture, else the most recent SPS received.
    public private(set) var activeSPS: SequenceParameterSet?
    /// Each distinct SPS content seen, in order (resolution changes show up here).
    public private(set) var distinctSPSCount = 0
    /// Stream offset just past the last NAL unit consumed.
    public private(set) var lastByteOffset = 0
    /// Each SPS that pictures used, in order, with the decode index of its first picture: one
    /// entry per change of the SPS in force (a resolution change adds one).
    public private(set) var pictureSPSChanges: [(firstPicture: Int, sps: SequenceParameterSet)] = []
    /// Decode index of the first picture a decoder can output: the first IDR picture, or the
    /// picture a recovery point SEI names (§D.2.8). FFmpeg outputs nothing before it.
    public private(set) var firstRecoveredPicture: Int?
    private var firstSPS: SequenceParameterSet?
    private var recoveryTarget: (frameNum: Int, sps: Int)?

    /// The most diagnostics ``diagnostics`` keeps; later ones are only counted.
    public static let maximumStoredDiagnostics = 100
    /// Bytes of a slice NAL unit read for the header before falling back to the whole unit.
    static let sliceHeaderPrefix = 512

    private var detector = AccessUnitDetector()
    private var counter = PictureOrderCounter()
    private var orderer = DisplayOrderer()
    private var currentPOC: Int?
    private var pendingRecoveryPoint = false
    private var pendingRecoveryFrameCount: Int?
    /// Pic timing SEI payloads of the current access unit, with their NAL unit's offset.
    private var pendingPicTimings: [(payload: [UInt8], nalStart: Int)] = []
    private var currentAccessUnitStart = 0
    /// Whether the last picture is still open (may receive a second field).
    private var lastPictureOpen = false
    private var lastPictureAccessUnit = -1
    private var seenSPSContents: Set<[UInt8]> = []

    /// A parser that has seen nothing, keeping every picture, or the last `retainedPictureLimit`
    /// (at least 1).
    public init(retainingPictures retainedPictureLimit: Int? = nil) {
        self.retainedPictureLimit = retainedPictureLimit.map { max(1, $0) }
    }

    /// The picture of decode index `decodeIndex`, if it is still kept.
    public func picture(_ decodeIndex: Int) -> PictureInfo? {
        let index = decodeIndex - discardedPictureCount
        return pictures.indices.contains(index) ? pictures[index] : nil
    }

    /// Most pic timing SEI messages held for one access unit; more are counted, not kept.
    static let maximumPendingPicTimings = 64
    /// Most distinct SPS contents remembered to count ``distinctSPSCount``.
    static let maximumRememberedSPSContents = 1024

    private mutating func report(_ severity: StreamDiagnostic.Severity, _ error: BitstreamError) {
        if severity == .error { errorCount += 1 } else { warningCount += 1 }
        if diagnostics.count < Self.maximumStoredDiagnostics { diagnostics.append(StreamDiagnostic(severity: severity, error: error)) }
    }

    /// Reports a problem found outside the parser (a junk prefix, an oversized NAL unit).
    public mutating func reportExternal(_ severity: StreamDiagnostic.Severity, _ error: BitstreamError) {
        report(severity, error)
    }

    /// Parses the next NAL unit. `bytes` is the NAL unit (header byte first) and `location` its
    /// place in the stream; errors are recorded in ``diagnostics`` with that location.
    @discardableResult
    public mutating func consume(_ bytes: Span<UInt8>, at location: AnnexBNALUnit) -> ParsedNALUnit {
        let index = nalUnitCount
        nalUnitCount += 1
        lastByteOffset = location.payload.upperBound
        let header = NALUnitHeader(byte: bytes[0])
        nalTypeCounts[Int(header.nalUnitType.rawValue)] += 1
        let at = location.payload.lowerBound
        func locate(_ error: BitstreamError) -> BitstreamError {
            var e = error.located(byteOffset: at, nalIndex: index)
            // Offsets inside an RBSP are approximate once emulation prevention is removed;
            // the header byte sits before them.
            e.byteOffset = at + 1 + (error.byteOffset ?? 0)
            return e
        }
        if header.forbiddenZeroBit {
            report(.error, BitstreamError(.invalidNALUnitHeader, "forbidden_zero_bit is 1 (\(header.nalUnitType) NAL unit)", byteOffset: at, nalIndex: index))
        }

        var slice: SliceHeader?
        switch header.nalUnitType {
        case .sps:
            do {
                let (sps, change) = try registry.add(spsNALUnit: bytes)
                if change != .unchanged {
                    if seenSPSContents.count >= Self.maximumRememberedSPSContents {
                        distinctSPSCount += 1  // past the memory bound, every change counts
                    } else if seenSPSContents.insert(Array(bytes)).inserted {
                        distinctSPSCount += 1
                    }
                }
                if firstSPS == nil { firstSPS = sps }
                if activeSPS == nil || change == .replaced && activeSPS?.seqParameterSetId == sps.seqParameterSetId { activeSPS = sps }
                if sps.vuiParameters?.hasReservedAspectRatioIdc == true {
                    report(.warning, BitstreamError(.valueOutOfRange, "SPS \(sps.seqParameterSetId): reserved aspect_ratio_idc \(sps.vuiParameters!.aspectRatioIdc); the sample aspect ratio is unknown", byteOffset: at, nalIndex: index))
                }
                if sps.vuiParameters?.isTruncated == true {
                    report(.warning, BitstreamError(.truncated, "SPS \(sps.seqParameterSetId): VUI parameters cut short; the fields after the cut are ignored", byteOffset: at, nalIndex: index))
                }
            } catch { report(.error, locate(error).prefixed("SPS")) }
        case .pps:
            do { try registry.add(ppsNALUnit: bytes) } catch { report(.error, locate(error).prefixed("PPS")) }
        case .sei:
            parseSEI(bytes, nalStart: at, nalIndex: index, locate: locate)
        case .nonIDRSlice, .idrSlice, .sliceDataPartitionA:
            do {
                slice = try parseSliceHeader(bytes, header: header)
            } catch {
                report(.error, locate(error).prefixed("\(header.nalUnitType) header"))
            }
        default:
            break
        }

        let pocType = slice.flatMap { registry.ppsBox($0.picParameterSetId) }.flatMap { registry.spsBox($0.entry.value.seqParameterSetId)?.entry.value.picOrderCntType } ?? 0
        let startsAU = detector.startsNewAccessUnit(header, slice: slice, pictureOrderCountType: pocType)
        if startsAU {
            if header.nalUnitType != .sei { pendingPicTimings.removeAll() }
            accessUnitCount += 1
            currentAccessUnitStart = location.startCodeOffset
        }
        if let slice, detector.isFirstSliceOfPicture, let sps = registry.sps(forPPS: slice.picParameterSetId) {
            beginPicture(slice, sps: sps, location: location)
        }
        if let last = pictures.indices.last, lastPictureAccessUnit == accessUnitCount - 1 {
            pictures[last].byteRange = pictures[last].byteRange.lowerBound..<location.payload.upperBound
        }
        return ParsedNALUnit(index: index, location: location, header: header, slice: slice,
                             picOrderCnt: slice != nil ? currentPOC : nil, accessUnitIndex: accessUnitCount - 1)
    }

    private mutating func beginPicture(_ slice: SliceHeader, sps: SequenceParameterSet, location: AnnexBNALUnit) {
        for timing in pendingPicTimings {
            do { _ = try PicTiming(payload: timing.payload, activeSequenceParameterSet: sps) } catch {
                var placed = error  // its bit offset is the payload's; the byte is the SEI's NAL unit
                placed.byteOffset = timing.nalStart
                report(.warning, placed.prefixed("SEI pic timing"))
            }
        }
        pendingPicTimings.removeAll()
        let poc = counter.compute(for: slice, sequenceParameterSet: sps)
        currentPOC = poc.picOrderCnt
        activeSPS = sps
        if pictureSPSChanges.last?.sps != sps {
            pictureSPSChanges.append((pictureCount, sps))
            if let limit = retainedPictureLimit, pictureSPSChanges.count > 2 * limit { pictureSPSChanges.removeFirst(pictureSPSChanges.count - limit) }
        }
        // Second field of a complementary pair (§3.30): opposite parity, same frame_num, not IDR.
        if slice.fieldPicFlag, lastPictureOpen, let last = pictures.indices.last {
            let first = pictures[last]
            let oppositeParity = slice.bottomFieldFlag ? first.structure == .topField : first.structure == .bottomField
            if oppositeParity && first.frameNum == slice.frameNum && !slice.idrPicFlag {
                pictures[last].structure = .fieldPair
                if slice.bottomFieldFlag { pictures[last].bottomFieldOrderCnt = poc.bottomFieldOrderCnt } else { pictures[last].topFieldOrderCnt = poc.topFieldOrderCnt }
                pictures[last].sliceTypes.insert(slice.sliceType)
                pictures[last].hasMMCO5 = pictures[last].hasMMCO5 || slice.hasMMCO5
                pictures[last].hasRecoveryPoint = pictures[last].hasRecoveryPoint || pendingRecoveryPoint
                pendingRecoveryPoint = false
                lastPictureOpen = false
                lastPictureAccessUnit = accessUnitCount - 1
                return
            }
        }
        closeLastPicture()
        let picture = PictureInfo(
            decodeIndex: pictureCount,
            byteRange: currentAccessUnitStart..<location.payload.upperBound,
            structure: slice.fieldPicFlag ? (slice.bottomFieldFlag ? .bottomField : .topField) : .frame,
            isIDR: slice.idrPicFlag, hasMMCO5: slice.hasMMCO5, hasRecoveryPoint: pendingRecoveryPoint,
            frameNum: slice.frameNum, sliceTypes: [slice.sliceType],
            topFieldOrderCnt: poc.topFieldOrderCnt, bottomFieldOrderCnt: poc.bottomFieldOrderCnt,
            nalRefIdc: slice.nalUnitHeader.nalRefIdc, displayIndex: nil, seqParameterSetId: sps.seqParameterSetId)
        if firstRecoveredPicture == nil {
            if slice.idrPicFlag {
                firstRecoveredPicture = pictureCount
            } else if pendingRecoveryPoint, let frames = pendingRecoveryFrameCount {
                recoveryTarget = ((slice.frameNum + frames) % sps.maxFrameNum, sps.seqParameterSetId)
            }
            if let target = recoveryTarget, target.frameNum == slice.frameNum, slice.nalUnitHeader.nalRefIdc != 0 || target.frameNum == slice.frameNum && pendingRecoveryPoint {
                firstRecoveredPicture = pictureCount
            }
        }
        pendingRecoveryPoint = false
        pendingRecoveryFrameCount = nil
        pictures.append(picture)
        if let limit = retainedPictureLimit, pictures.count >= 2 * limit {
            let drop = pictures.count - limit
            pictures.removeFirst(drop)
            discardedPictureCount += drop
        }
        lastPictureOpen = slice.fieldPicFlag
        lastPictureAccessUnit = accessUnitCount - 1
    }

    /// Hands the last picture to the display orderer once no second field can join it.
    private mutating func closeLastPicture() {
        guard let picture = pictures.last, closedPictureCount <= picture.decodeIndex else { return }
        closedPictureCount = picture.decodeIndex + 1
        guard retainedPictureLimit == nil else { return }
        // An MMCO 5 picture's order count is rebased to 0 after decoding; it starts a period.
        let poc = picture.hasMMCO5 ? 0 : picture.picOrderCnt
        let settled = orderer.add(decodeIndex: picture.decodeIndex, picOrderCnt: poc, startsPeriod: picture.isIDR || picture.hasMMCO5)
        for (decodeIndex, displayIndex) in settled { pictures[decodeIndex].displayIndex = displayIndex }
    }
    /// Pictures before this index have been handed to the display orderer.
    private var closedPictureCount = 0

    /// Ends the stream: settles display order of the last pictures.
    public mutating func finish() {
        closeLastPicture()
        lastPictureOpen = false
        for (decodeIndex, displayIndex) in orderer.flush() { pictures[decodeIndex].displayIndex = displayIndex }
    }

    private mutating func parseSliceHeader(_ bytes: Span<UInt8>, header: NALUnitHeader) throws(BitstreamError) -> SliceHeader {
        let prefixEnd = min(bytes.count, Self.sliceHeaderPrefix)
        let prefix = bytes.extracting(1..<prefixEnd)
        do {
            if !RBSP.containsEmulationPrevention(prefix) {
                var reader = BitReader(prefix)
                return try SliceHeader(parsing: &reader, nalUnitHeader: header, parameterSets: registry)
            }
            let rbsp = RBSP.unescape(prefix)
            var reader = BitReader(rbsp.span)
            return try SliceHeader(parsing: &reader, nalUnitHeader: header, parameterSets: registry)
        } catch where error.code == .endOfData && prefixEnd < bytes.count {
            let rbsp = RBSP.unescape(bytes.extracting(1...))
            var reader = BitReader(rbsp.span)
            return try SliceHeader(parsing: &reader, nalUnitHeader: header, parameterSets: registry)
        }
    }

    private mutating func parseSEI(_ bytes: Span<UInt8>, nalStart: Int, nalIndex: Int, locate: (BitstreamError) -> BitstreamError) {
        let messages: [SEIMessage]
        do { messages = try SEIMessage.messages(inNALUnit: bytes) } catch {
            report(.warning, locate(error).prefixed("SEI")); return
        }
        let registry = self.registry
        for message in messages {
            seiCounts[message.payloadType, default: 0] += 1
            do {
                switch message.payloadType {
                case 0: _ = try BufferingPeriod(payload: message.payload, sequenceParameterSet: { registry.sps($0) })
                case 1:
                    // Its syntax depends on the SPS the access unit's slices activate, which is
                    // known only at the first slice: parse it then.
                    if pendingPicTimings.count < Self.maximumPendingPicTimings { pendingPicTimings.append((message.payload, nalStart)) }
                case 5: _ = try UserDataUnregistered(payload: message.payload)
                case 6:
                    let recovery = try RecoveryPoint(payload: message.payload)
                    pendingRecoveryPoint = true
                    pendingRecoveryFrameCount = recovery.recoveryFrameCnt
                default: break
                }
            } catch {
                var inPayload = error  // placed at the NAL unit; its bit offset is the payload's
                inPayload.byteOffset = nil
                report(.warning, locate(inPayload).prefixed("SEI \(message.typeName)"))
            }
        }
    }

    // MARK: Summary

    /// Number of pictures: frames, field pairs counted once (those let go included).
    public var pictureCount: Int { discardedPictureCount + pictures.count }
    /// Number of pictures a decoder outputs: those from the first IDR or recovery point on.
    public var outputPictureCount: Int { firstRecoveredPicture.map { pictureCount - $0 } ?? 0 }
    /// The SPS of the first picture (what a demuxer's stream parameters show), else the first
    /// SPS received.
    public var firstPictureSPS: SequenceParameterSet? { pictureSPSChanges.first?.sps ?? firstSPS }
}

extension H264StreamParser {
    /// Parses a whole Annex-B stream held in memory.
    public static func parse(annexB bytes: [UInt8]) -> H264StreamParser {
        var parser = H264StreamParser()
        bytes.withUnsafeBytes { raw in
            let base = raw.bindMemory(to: UInt8.self)
            AnnexB.forEachNALUnit(in: raw) { location in
                parser.consume(UnsafeBufferPointer(rebasing: base[location.payload]).span, at: location)
            }
        }
        parser.finish()
        return parser
    }

    /// Decode indexes of the pictures in display order.
    public var decodeIndexesInDisplayOrder: [Int] {
        pictures.sorted { ($0.displayIndex ?? .max, $0.decodeIndex) < ($1.displayIndex ?? .max, $1.decodeIndex) }.map(\.decodeIndex)
    }
}
