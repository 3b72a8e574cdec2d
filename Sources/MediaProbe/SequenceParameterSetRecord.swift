/// The sequence parameter set in force from a picture on, as a stream report lists it each
/// time it changes.
public struct SequenceParameterSetRecord: Codable, Hashable, Sendable {
    /// The first picture (decoding order, from 0) it applies to.
    public var firstPicture: Int
    /// seq_parameter_set_id.
    public var seqParameterSetId: Int
    /// The profile's name.
    public var profile: String
    /// level_idc (31 is level 3.1).
    public var level: Int
    /// The displayed width (after cropping).
    public var width: Int
    /// The displayed height (after cropping).
    public var height: Int
    /// The pixel format's FFmpeg name (yuv420p, yuv422p10le, ...).
    public var pixelFormat: String
    /// The VUI frame rate ("30000/1001"), if the SPS has timing.
    public var frameRate: String?

    /// A record of these fields.
    public init(firstPicture: Int, seqParameterSetId: Int, profile: String, level: Int, width: Int, height: Int, pixelFormat: String, frameRate: String?) {
        self.firstPicture = firstPicture
        self.seqParameterSetId = seqParameterSetId
        self.profile = profile
        self.level = level
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.frameRate = frameRate
    }
}
