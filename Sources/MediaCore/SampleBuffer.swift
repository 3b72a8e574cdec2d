public import H264Bitstream

/// When a sample is decoded and shown, and for how long (`CMSampleTimingInfo`).
public struct SampleTiming: Hashable, Sendable, Codable {
    /// When the sample is shown.
    public var presentationTime: MediaTime
    /// When the sample is decoded; equals the presentation time without reordering.
    public var decodeTime: MediaTime
    /// How long the sample is shown.
    public var duration: MediaTime

    /// Timing with the given times.
    public init(presentationTime: MediaTime, decodeTime: MediaTime, duration: MediaTime) {
        self.presentationTime = presentationTime
        self.decodeTime = decodeTime
        self.duration = duration
    }

    /// Presentation time minus decode time: what an MP4 `ctts` entry stores.
    public var compositionOffset: MediaTime { presentationTime - decodeTime }
}

/// What a sample means for random access and dependency (the `kCMSampleAttachmentKey_*`
/// attachments; MP4 `stss` and `sdtp`).
public struct SampleAttachments: Hashable, Sendable, Codable {
    /// Decoding can start here: an IDR picture, or a recovery point with its SEI.
    public var isSync: Bool
    /// Whether decoding needs earlier samples; nil when unknown.
    public var dependsOnOthers: Bool?
    /// Whether later samples reference this one (nal_ref_idc ≠ 0); nil when unknown.
    public var isDependedOnByOthers: Bool?
    /// A sync sample after which samples may be shown before it (an open-GOP recovery point,
    /// whose leading pictures reference the previous GOP).
    public var earlierDisplayTimesAllowed: Bool
    /// Decode the sample (later samples may need it) but do not show its picture: it lies
    /// outside the movie's edit list (`kCMSampleAttachmentKey_DoNotDisplay`).
    public var doNotDisplay: Bool

    /// Attachments with the given values.
    public init(isSync: Bool, dependsOnOthers: Bool? = nil, isDependedOnByOthers: Bool? = nil, earlierDisplayTimesAllowed: Bool = false,
                doNotDisplay: Bool = false) {
        self.isSync = isSync
        self.dependsOnOthers = dependsOnOthers
        self.isDependedOnByOthers = isDependedOnByOthers
        self.earlierDisplayTimesAllowed = earlierDisplayTimesAllowed
        self.doNotDisplay = doNotDisplay
    }
}

/// One access unit of H.264 video (a frame, or a field pair) as length-prefixed NAL units, with
/// the format description that decodes it, its timing and attachments: the `CMSampleBuffer`
/// analogue.
public struct SampleBuffer: Sendable {
    /// The NAL units, each after a big-endian length of `formatDescription.nalUnitLengthSize` bytes.
    public var data: BlockBuffer
    /// The format that decodes the sample: parameter sets and NAL length size.
    public var formatDescription: VideoFormatDescription
    /// The sample's presentation and decode times and duration.
    public var timing: SampleTiming
    /// Sync and dependency information.
    public var attachments: SampleAttachments

    /// A sample of the NAL units in `data`, framed with the format's length size (unchecked: see ``validate()``).
    public init(data: BlockBuffer, formatDescription: VideoFormatDescription, timing: SampleTiming, attachments: SampleAttachments) {
        self.data = data
        self.formatDescription = formatDescription
        self.timing = timing
        self.attachments = attachments
    }

    /// When the sample is shown.
    public var presentationTime: MediaTime { timing.presentationTime }
    /// When the sample is decoded.
    public var decodeTime: MediaTime { timing.decodeTime }
    /// How long the sample is shown.
    public var duration: MediaTime { timing.duration }
    /// Whether decoding can start at the sample.
    public var isSync: Bool { attachments.isSync }
    /// The sample's size in bytes, length prefixes included.
    public var size: Int { data.count }

    /// Calls `body` with each NAL unit (header byte first, no length prefix). A length running
    /// past the end of the data, or a cut-off length field, throws with the byte offset in the
    /// sample; an error `body` throws is passed on.
    public func forEachNALUnit(_ body: (UnsafeRawBufferPointer) throws(BitstreamError) -> Void) throws(BitstreamError) {
        let lengthSize = formatDescription.nalUnitLengthSize
        try data.withUnsafeBytes { (raw) throws(BitstreamError) in
            let ranges = try AVCC.nalUnitRanges(in: raw.bindMemory(to: UInt8.self).span, lengthSize: lengthSize)
            for range in ranges { try body(UnsafeRawBufferPointer(rebasing: raw[range])) }
        }
    }

    /// The NAL units as arrays (a convenience for tests and small tools).
    public func nalUnits() throws(BitstreamError) -> [[UInt8]] {
        var result: [[UInt8]] = []
        try forEachNALUnit { result.append(Array($0)) }
        return result
    }

    /// Checks the framing: every length prefix fits the data and every NAL unit header is valid.
    public func validate() throws(BitstreamError) {
        let lengthSize = formatDescription.nalUnitLengthSize
        try data.withUnsafeBytes { (raw) throws(BitstreamError) in
            var index = 0
            try AVCC.forEachNALUnit(in: raw.bindMemory(to: UInt8.self).span, lengthSize: lengthSize) { range throws(BitstreamError) in
                defer { index += 1 }
                if raw[range.lowerBound] & 0x80 != 0 {
                    throw BitstreamError(.invalidNALUnitHeader, "forbidden_zero_bit is 1", byteOffset: range.lowerBound, nalIndex: index)
                }
            }
        }
    }
}

extension SampleBuffer: CustomStringConvertible {
    /// The times, the size and whether the sample is sync, for logs.
    public var description: String {
        "sample pts \(presentationTime) dts \(decodeTime) dur \(duration) \(size) bytes\(isSync ? " sync" : "")"
    }
}
