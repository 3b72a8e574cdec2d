public import H264Bitstream
import MediaCore

/// What an Annex-B H.264 stream holds: profile, level, size, pixel format, rate, counts of
/// pictures, NAL units and SEI messages, and what was wrong with it. `h264kit inspect` prints
/// it (as JSON with `--json`); ``StreamProbe`` makes it from a stream.
///
/// The fields that describe the first picture's SPS are `null` in JSON when the stream has
/// no picture.
public struct StreamSummary: Codable, Hashable, Sendable {
    /// Always "h264".
    public var format = "h264"
    /// The stream's size in bytes.
    public var bytes: Int
    /// The profile's name.
    public var profile: Nullable<String> = Nullable(nil)
    /// profile_idc.
    public var profileIdc: Int?
    /// constraint_set0..5 flags, as the byte after profile_idc.
    public var constraintSetFlags: Int?
    /// level_idc.
    public var level: Nullable<Int> = Nullable(nil)
    /// The displayed width (after cropping).
    public var width: Nullable<Int> = Nullable(nil)
    /// The displayed height (after cropping).
    public var height: Nullable<Int> = Nullable(nil)
    /// The coded width (whole macroblocks).
    public var codedWidth: Int?
    /// The coded height (whole macroblocks; both fields of a field picture).
    public var codedHeight: Int?
    /// The pixel format's FFmpeg name.
    public var pixelFormat: Nullable<String> = Nullable(nil)
    /// chroma_format_idc.
    public var chromaFormatIdc: Int?
    /// Luma bit depth.
    public var bitDepthLuma: Int?
    /// Chroma bit depth.
    public var bitDepthChroma: Int?
    /// The VUI sample aspect ratio ("4:3"), when given.
    public var sampleAspectRatio: String?
    /// The VUI frame rate ("30000/1001").
    public var frameRate: Nullable<String> = Nullable(nil)
    /// Whether the SPS allows field or MBAFF coding.
    public var interlaced: Nullable<Bool> = Nullable(nil)
    /// pic_order_cnt_type.
    public var picOrderCntType: Int?
    /// Pictures a decoder outputs (from the first IDR or recovery point on), as ffprobe counts.
    public var frameCount: Int
    /// Every picture in the stream, field pairs counted once.
    public var pictureCount: Int
    /// The SPS in force, each time it changed: the top-level fields describe the first.
    public var sequenceParameterSets: [SequenceParameterSetRecord]
    /// Access units.
    public var accessUnitCount: Int
    /// IDR pictures.
    public var idrCount: Int
    /// Pictures coded as two fields.
    public var fieldPairCount: Int
    /// Different SPS contents seen.
    public var distinctSPSCount: Int
    /// NAL units.
    public var nalUnitCount: Int
    /// NAL units by type name.
    public var nalCounts: [String: Int]
    /// SEI messages by type name.
    public var seiCounts: [String: Int]
    /// NAL units that could not be parsed.
    public var errors: Int
    /// Problems that did not stop parsing.
    public var warnings: Int
    /// What was wrong, where (the first of them).
    public var diagnostics: [String]
    /// Every NAL unit, when listed.
    public var nalUnits: [NALUnitRecord]?
    /// Every sample in decoding order, when listed.
    public var samples: [SampleRecord]?
    /// The frame rate the samples were timed with, when listed.
    public var sampleFrameRate: String?

    /// The summary of what `parser` has read of a stream of `bytes` bytes.
    public init(parser: H264StreamParser, bytes: Int, nalUnits: [NALUnitRecord]? = nil) {
        self.bytes = bytes
        if let sps = parser.firstPictureSPS {
            profile = Nullable(sps.profileName)
            profileIdc = Int(sps.profileIdc)
            constraintSetFlags = Int(sps.constraintSetFlags)
            level = Nullable(Int(sps.levelIdc))
            width = Nullable(sps.width)
            height = Nullable(sps.height)
            codedWidth = sps.codedWidth
            codedHeight = sps.codedHeight
            pixelFormat = Nullable(sps.pixelFormatName)
            chromaFormatIdc = sps.chromaFormatIdc
            bitDepthLuma = sps.bitDepthLuma
            bitDepthChroma = sps.bitDepthChroma
            sampleAspectRatio = sps.vuiParameters?.sampleAspectRatio.map { "\($0.width):\($0.height)" }
            frameRate = Nullable(sps.frameRate?.description)
            interlaced = Nullable(sps.isInterlaced)
            picOrderCntType = sps.picOrderCntType
        }
        frameCount = parser.outputPictureCount
        pictureCount = parser.pictureCount
        sequenceParameterSets = parser.pictureSPSChanges.map { change in
            SequenceParameterSetRecord(firstPicture: change.firstPicture, seqParameterSetId: change.sps.seqParameterSetId, profile: change.sps.profileName,
                                       level: Int(change.sps.levelIdc), width: change.sps.width, height: change.sps.height,
                                       pixelFormat: change.sps.pixelFormatName, frameRate: change.sps.frameRate?.description)
        }
        accessUnitCount = parser.accessUnitCount
        idrCount = parser.pictures.reduce(0) { $0 + ($1.isIDR ? 1 : 0) }
        fieldPairCount = parser.pictures.reduce(0) { $0 + ($1.structure == .fieldPair ? 1 : 0) }
        distinctSPSCount = parser.distinctSPSCount
        nalUnitCount = parser.nalUnitCount
        nalCounts = Dictionary(uniqueKeysWithValues: parser.nalCounts.map { ($0.key.name, $0.value) })
        seiCounts = Dictionary(uniqueKeysWithValues: parser.seiCounts.map { (SEIMessage(payloadType: $0.key, payload: []).typeName, $0.value) })
        errors = parser.errorCount
        warnings = parser.warningCount
        diagnostics = parser.diagnostics.map(\.description)
        self.nalUnits = nalUnits
    }

    /// The summary as text, a field a line, for the stream called `name`.
    public func text(name: String) -> String {
        var lines = ["\(name): H.264 Annex-B elementary stream, \(bytes) bytes"]
        func row(_ label: String, _ value: String) { lines.append("  " + label + String(repeating: " ", count: max(1, 14 - label.count)) + value) }
        if let profile = profile.value, let level = level.value, let profileIdc {
            row("profile", "\(profile) (profile_idc \(profileIdc)), level \(level / 10).\(level % 10)")
        }
        if let width = width.value, let height = height.value, let codedWidth, let codedHeight {
            var size = "\(width)x\(height)"
            if width != codedWidth || height != codedHeight { size += " (coded \(codedWidth)x\(codedHeight))" }
            if let sampleAspectRatio { size += ", SAR \(sampleAspectRatio)" }
            row("size", size)
        }
        if let pixelFormat = pixelFormat.value, let bitDepthLuma { row("pixel format", "\(pixelFormat) (\(bitDepthLuma)-bit)") }
        if let rate = frameRate.value.flatMap(FrameRate.init(parsing:)) {
            row("frame rate", "\(rate) (\(decimalText(rate.framesPerSecond, 3)) fps)")
        } else if profile.value != nil {
            row("frame rate", "not signalled (no VUI timing)")
        }
        if let interlaced = interlaced.value { row("scan", interlaced ? "interlaced (field/MBAFF coding allowed)" : "progressive") }
        if let picOrderCntType { row("POC type", "\(picOrderCntType)") }
        var frames = "\(frameCount) decodable of \(pictureCount) (access units \(accessUnitCount), IDR \(idrCount)"
        if fieldPairCount > 0 { frames += ", field pairs \(fieldPairCount)" }
        row("frames", frames + ")")
        if sequenceParameterSets.count > 1 {
            for change in sequenceParameterSets {
                row("SPS change", "from picture \(change.firstPicture): \(change.profile) level \(change.level), \(change.width)x\(change.height) \(change.pixelFormat)")
            }
        }
        row("NAL units", "\(nalUnitCount): " + nalCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if !seiCounts.isEmpty { row("SEI", seiCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) }
        if errors + warnings > 0 { row("problems", "\(errors) errors, \(warnings) warnings" + (diagnostics.isEmpty ? "" : ", the first: \(diagnostics[0])")) }
        return lines.joined(separator: "\n")
    }
}
