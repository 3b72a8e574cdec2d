/// What kind of media a track or a format carries (`CMMediaType`): the four-character codes of
/// the MP4/MOV handler types, which Core Media uses too.
public struct MediaType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code: `vide`, `soun`, `tmcd`, ...
    public var rawValue: FourCharCode

    /// The media type of code `rawValue`.
    public init(rawValue: FourCharCode) { self.rawValue = rawValue }

    /// Video (`kCMMediaType_Video`).
    public static let video = MediaType(rawValue: "vide")
    /// Audio (`kCMMediaType_Audio`).
    public static let audio = MediaType(rawValue: "soun")
    /// A timecode track (`kCMMediaType_TimeCode`).
    public static let timecode = MediaType(rawValue: "tmcd")
    /// Timed metadata (`kCMMediaType_Metadata`).
    public static let metadata = MediaType(rawValue: "meta")
    /// Text (`kCMMediaType_Text`): QuickTime text, 3GPP timed text.
    public static let text = MediaType(rawValue: "text")
    /// Subtitles (`kCMMediaType_Subtitle`).
    public static let subtitle = MediaType(rawValue: "subt")
    /// Closed captions (`kCMMediaType_ClosedCaption`).
    public static let closedCaption = MediaType(rawValue: "clcp")

    /// "video", "audio", "timecode", ..., or the code for another type.
    public var description: String {
        switch self {
        case .video: "video"
        case .audio: "audio"
        case .timecode: "timecode"
        case .metadata: "metadata"
        case .text: "text"
        case .subtitle: "subtitle"
        case .closedCaption: "closed captions"
        default: rawValue.description
        }
    }
}
