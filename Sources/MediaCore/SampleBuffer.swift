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
    /// outside the movie's edit list (`kCMSampleAttachmentKey_DoNotDisplay`). For audio: none
    /// of its samples are played (all of it lies before the edit: encoder priming).
    public var doNotDisplay: Bool
    /// How much of the start of the sample's duration is not presented: an audio packet the
    /// edit list begins inside of (the last of an encoder's priming,
    /// `kCMSampleBufferAttachmentKey_TrimDurationAtStart`); zero when all of it is.
    public var trimDurationAtStart: MediaTime
    /// How much of the end of the sample's duration is not presented (the padding after the last
    /// audio sample, `kCMSampleBufferAttachmentKey_TrimDurationAtEnd`); zero when all of it is.
    public var trimDurationAtEnd: MediaTime

    /// Attachments with the given values.
    public init(isSync: Bool, dependsOnOthers: Bool? = nil, isDependedOnByOthers: Bool? = nil, earlierDisplayTimesAllowed: Bool = false,
                doNotDisplay: Bool = false, trimDurationAtStart: MediaTime = .zero, trimDurationAtEnd: MediaTime = .zero) {
        self.isSync = isSync
        self.dependsOnOthers = dependsOnOthers
        self.isDependedOnByOthers = isDependedOnByOthers
        self.earlierDisplayTimesAllowed = earlierDisplayTimesAllowed
        self.doNotDisplay = doNotDisplay
        self.trimDurationAtStart = trimDurationAtStart
        self.trimDurationAtEnd = trimDurationAtEnd
    }

    private enum CodingKeys: String, CodingKey {
        case isSync, dependsOnOthers, isDependedOnByOthers, earlierDisplayTimesAllowed, doNotDisplay, trimDurationAtStart, trimDurationAtEnd
    }

    /// Decodes attachments; the trims (added with audio) default to zero when absent.
    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        isSync = try values.decode(Bool.self, forKey: .isSync)
        dependsOnOthers = try values.decodeIfPresent(Bool.self, forKey: .dependsOnOthers)
        isDependedOnByOthers = try values.decodeIfPresent(Bool.self, forKey: .isDependedOnByOthers)
        earlierDisplayTimesAllowed = try values.decodeIfPresent(Bool.self, forKey: .earlierDisplayTimesAllowed) ?? false
        doNotDisplay = try values.decodeIfPresent(Bool.self, forKey: .doNotDisplay) ?? false
        trimDurationAtStart = try values.decodeIfPresent(MediaTime.self, forKey: .trimDurationAtStart) ?? .zero
        trimDurationAtEnd = try values.decodeIfPresent(MediaTime.self, forKey: .trimDurationAtEnd) ?? .zero
    }
}

/// One sample of a track, with the format description that decodes it, its timing and
/// attachments, and the track it belongs to: the `CMSampleBuffer` analogue. For H.264 video, an
/// access unit (a frame, or a field pair) as length-prefixed NAL units; for AAC, one raw frame
/// (1024 samples per channel); for what H264Kit only carries, the container's sample as it was.
///
/// Code written when every sample was H.264 video reads the video description through
/// ``videoFormatDescription`` (`formatDescription` became media-agnostic with audio).
public struct SampleBuffer: Sendable {
    /// The sample's bytes. For H.264: the NAL units, each after a big-endian length of the
    /// format's `nalUnitLengthSize` bytes.
    public var data: BlockBuffer
    /// The format that decodes the sample (`CMSampleBufferGetFormatDescription`).
    public var formatDescription: FormatDescription
    /// The sample's presentation and decode times and duration.
    public var timing: SampleTiming
    /// Sync and dependency information.
    public var attachments: SampleAttachments
    /// The track the sample belongs to in its source (``TrackID/first`` for a source of one
    /// stream).
    public var trackID: TrackID

    /// A sample of `data` described by `formatDescription`, of track `trackID` (unchecked: see
    /// ``validate()`` for H.264).
    public init(data: BlockBuffer, formatDescription: FormatDescription, timing: SampleTiming, attachments: SampleAttachments, trackID: TrackID = .first) {
        self.data = data
        self.formatDescription = formatDescription
        self.timing = timing
        self.attachments = attachments
        self.trackID = trackID
    }

    /// An H.264 sample of the NAL units in `data`, framed with the format's length size
    /// (unchecked: see ``validate()``).
    public init(data: BlockBuffer, formatDescription: VideoFormatDescription, timing: SampleTiming, attachments: SampleAttachments, trackID: TrackID = .first) {
        self.init(data: data, formatDescription: .video(formatDescription), timing: timing, attachments: attachments, trackID: trackID)
    }

    /// The H.264 format description, for a video sample.
    public var videoFormatDescription: VideoFormatDescription? { formatDescription.video }
    /// The audio format description, for an audio sample H264Kit reads.
    public var audioFormatDescription: AudioFormatDescription? { formatDescription.audio }
    /// The kind of media.
    public var mediaType: MediaType { formatDescription.mediaType }

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
        let lengthSize = try h264LengthSize()
        try data.withUnsafeBytes { (raw) throws(BitstreamError) in
            let ranges = try AVCC.nalUnitRanges(in: raw.bindMemory(to: UInt8.self).span, lengthSize: lengthSize)
            for range in ranges { try body(UnsafeRawBufferPointer(rebasing: raw[range])) }
        }
    }

    /// The NAL unit length size of an H.264 sample; any other sample has no NAL units.
    private func h264LengthSize() throws(BitstreamError) -> Int {
        guard let video = formatDescription.video else {
            throw BitstreamError(.invalidStructure, "a \(formatDescription.codecName) sample has no NAL units")
        }
        return video.nalUnitLengthSize
    }

    /// The NAL units as arrays (a convenience for tests and small tools).
    public func nalUnits() throws(BitstreamError) -> [[UInt8]] {
        var result: [[UInt8]] = []
        try forEachNALUnit { result.append(Array($0)) }
        return result
    }

    /// Checks the framing: every length prefix fits the data and every NAL unit header is valid.
    public func validate() throws(BitstreamError) {
        let lengthSize = try h264LengthSize()
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
        "\(mediaType == .video ? "" : "\(formatDescription.codecName) ")sample pts \(presentationTime) dts \(decodeTime) dur \(duration) \(size) bytes\(isSync ? " sync" : "")"
    }
}
