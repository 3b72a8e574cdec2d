/// What coding an MPEG-4 Audio stream uses: `audioObjectType` (ISO/IEC 14496-3 §1.5.1.1,
/// Table 1.17). The AAC family is what H264Kit carries; the rest are named.
public struct AudioObjectType: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The object type number (0 is "null"; 31 escapes to 32 and above).
    public var rawValue: UInt8

    /// The object type `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// AAC Main.
    public static let aacMain = AudioObjectType(rawValue: 1)
    /// AAC Low Complexity: what nearly every encoder writes.
    public static let aacLC = AudioObjectType(rawValue: 2)
    /// AAC Scalable Sample Rate.
    public static let aacSSR = AudioObjectType(rawValue: 3)
    /// AAC Long Term Prediction.
    public static let aacLTP = AudioObjectType(rawValue: 4)
    /// Spectral Band Replication (HE-AAC v1 when signalled explicitly).
    public static let sbr = AudioObjectType(rawValue: 5)
    /// AAC Scalable.
    public static let aacScalable = AudioObjectType(rawValue: 6)
    /// TwinVQ.
    public static let twinVQ = AudioObjectType(rawValue: 7)
    /// Error-resilient AAC LC.
    public static let erAACLC = AudioObjectType(rawValue: 17)
    /// Error-resilient AAC LTP.
    public static let erAACLTP = AudioObjectType(rawValue: 19)
    /// Error-resilient AAC Scalable.
    public static let erAACScalable = AudioObjectType(rawValue: 20)
    /// Error-resilient BSAC.
    public static let erBSAC = AudioObjectType(rawValue: 22)
    /// Error-resilient AAC LD.
    public static let erAACLD = AudioObjectType(rawValue: 23)
    /// Parametric Stereo (HE-AAC v2 when signalled explicitly).
    public static let ps = AudioObjectType(rawValue: 29)
    /// MPEG-1/2 Layer 3 (MP3) in an MPEG-4 configuration.
    public static let layer3 = AudioObjectType(rawValue: 34)
    /// Error-resilient AAC ELD.
    public static let erAACELD = AudioObjectType(rawValue: 39)
    /// USAC (xHE-AAC).
    public static let usac = AudioObjectType(rawValue: 42)

    /// Whether a `GASpecificConfig` follows in an AudioSpecificConfig (the AAC family and
    /// TwinVQ: §1.6.2.1).
    public var hasGASpecificConfig: Bool { [1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22, 23].contains(rawValue) }

    /// Whether the type is error resilient (an `epConfig` follows the specific config).
    public var isErrorResilient: Bool { (17...27).contains(rawValue) || rawValue == 39 }

    /// Orders by number.
    public static func < (a: AudioObjectType, b: AudioObjectType) -> Bool { a.rawValue < b.rawValue }

    /// The type's name ("AAC LC (2)").
    public var description: String {
        let name: String? = switch rawValue {
        case 1: "AAC Main"
        case 2: "AAC LC"
        case 3: "AAC SSR"
        case 4: "AAC LTP"
        case 5: "SBR"
        case 6: "AAC Scalable"
        case 7: "TwinVQ"
        case 17: "ER AAC LC"
        case 19: "ER AAC LTP"
        case 20: "ER AAC Scalable"
        case 22: "ER BSAC"
        case 23: "ER AAC LD"
        case 29: "PS"
        case 34: "Layer 3"
        case 39: "ER AAC ELD"
        case 42: "USAC"
        default: nil
        }
        return "\(name ?? "audio object type") (\(rawValue))"
    }
}
