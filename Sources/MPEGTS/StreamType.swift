/// What an elementary stream carries: `stream_type` (ISO/IEC 13818-1 Table 2-34, and the
/// values ATSC and SCTE assign).
public struct StreamType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The `stream_type` byte.
    public var rawValue: UInt8

    /// The type of byte `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// MPEG-1 video.
    public static let mpeg1Video = StreamType(rawValue: 0x01)
    /// MPEG-2 video.
    public static let mpeg2Video = StreamType(rawValue: 0x02)
    /// MPEG-1 audio.
    public static let mpeg1Audio = StreamType(rawValue: 0x03)
    /// MPEG-2 audio.
    public static let mpeg2Audio = StreamType(rawValue: 0x04)
    /// Private sections.
    public static let privateSections = StreamType(rawValue: 0x05)
    /// PES packets of private data (subtitles, AC-3 in DVB, KLV).
    public static let privateData = StreamType(rawValue: 0x06)
    /// AAC audio in ADTS frames.
    public static let aacADTS = StreamType(rawValue: 0x0F)
    /// MPEG-4 visual.
    public static let mpeg4Video = StreamType(rawValue: 0x10)
    /// AAC audio in LATM.
    public static let aacLATM = StreamType(rawValue: 0x11)
    /// Metadata in PES packets (ID3 in HLS).
    public static let metadata = StreamType(rawValue: 0x15)
    /// H.264 / AVC video (ITU-T H.264 Annex B byte stream).
    public static let h264 = StreamType(rawValue: 0x1B)
    /// H.265 / HEVC video.
    public static let h265 = StreamType(rawValue: 0x24)
    /// AC-3 audio (ATSC).
    public static let ac3 = StreamType(rawValue: 0x81)
    /// SCTE-35 splice information.
    public static let scte35 = StreamType(rawValue: 0x86)
    /// E-AC-3 audio (ATSC).
    public static let eac3 = StreamType(rawValue: 0x87)

    /// Whether the stream's packets are PES packets (not sections).
    public var carriesPES: Bool { self != .privateSections && self != .scte35 }

    /// The type's name, e.g. "H.264 (0x1b)".
    public var description: String {
        let name: String? = switch self {
        case .mpeg1Video: "MPEG-1 video"
        case .mpeg2Video: "MPEG-2 video"
        case .mpeg1Audio: "MPEG-1 audio"
        case .mpeg2Audio: "MPEG-2 audio"
        case .privateSections: "private sections"
        case .privateData: "private data"
        case .aacADTS: "AAC (ADTS)"
        case .mpeg4Video: "MPEG-4 video"
        case .aacLATM: "AAC (LATM)"
        case .metadata: "metadata"
        case .h264: "H.264"
        case .h265: "H.265"
        case .ac3: "AC-3"
        case .scte35: "SCTE-35"
        case .eac3: "E-AC-3"
        default: nil
        }
        return "\(name ?? "stream type") (0x\(String(rawValue, radix: 16)))"
    }
}
