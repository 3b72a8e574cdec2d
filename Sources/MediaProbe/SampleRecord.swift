public import MediaCore

/// One sample buffer as a report lists it (`h264kit inspect --samples`, ffprobe's
/// `-show_packets`): its times, size and flags.
public struct SampleRecord: Codable, Hashable, Sendable {
    /// The sample's place, in decoding order, from 0.
    public var index: Int
    /// The presentation time.
    public var pts: MediaTimeRecord
    /// The decoding time.
    public var dts: MediaTimeRecord
    /// How long the sample lasts.
    public var duration: MediaTimeRecord
    /// The sample's size in bytes.
    public var size: Int
    /// Whether the sample is a sync sample (decoding can start at it).
    public var sync: Bool
    /// Whether the sample depends on others (nil: not known).
    public var dependsOnOthers: Bool?
    /// Whether other samples depend on this one (nil: not known).
    public var isDependedOnByOthers: Bool?
    /// True for a sample outside a movie's edit list (decoded, not shown); nil otherwise.
    public var hidden: Bool?

    /// The record of `sample`, the `index`th in decoding order.
    public init(index: Int, sample: SampleBuffer) {
        self.index = index
        pts = MediaTimeRecord(sample.presentationTime)
        dts = MediaTimeRecord(sample.decodeTime)
        duration = MediaTimeRecord(sample.duration)
        size = sample.size
        sync = sample.isSync
        dependsOnOthers = sample.attachments.dependsOnOthers
        isDependedOnByOthers = sample.attachments.isDependedOnByOthers
        hidden = sample.attachments.doNotDisplay ? true : nil
    }

    /// The column names of ``line``, tab-separated.
    public static let header = "sample\tpts\tdts\tduration\tsize\tsync"

    /// The record as one tab-separated line (`hidden` last, for hidden samples).
    public var line: String {
        "\(index)\t\(pts.text)\t\(dts.text)\t\(duration.text)\t\(size)\t\(sync ? "sync" : "-")" + (hidden == true ? "\thidden" : "")
    }
}
