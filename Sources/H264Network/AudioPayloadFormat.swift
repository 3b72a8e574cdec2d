public import MediaCore

/// The payload format of a sound medium this side receives: AAC as RFC 3640 `mpeg4-generic`
/// (AAC-hbr) or as RFC 6416 `MP4A-LATM`, or G.711 (PCMU, PCMA). What a session description
/// announces and an ``RTPAudioReceivingSession`` depacketizes.
public enum AudioPayloadFormat: Sendable, Hashable {
    /// AAC in RFC 3640's AAC-hbr mode.
    case mpeg4Generic(MPEG4GenericPayloadFormat)
    /// AAC in LATM (RFC 6416), its StreamMuxConfig in the description (`cpresent=0`) or in band.
    case latm(MP4ALATMPayloadFormat)
    /// G.711 µ-law or A-law (RFC 3551).
    case g711(G711PayloadFormat)

    /// The format of an `m=audio` medium this side receives (AAC preferred); nil for another
    /// (Opus, G.722...).
    public init?(medium: SessionDescription.Media) {
        guard medium.type == "audio" else { return nil }
        if let format = try? MPEG4GenericPayloadFormat(medium: medium) {
            self = .mpeg4Generic(format)
        } else if let format = try? MP4ALATMPayloadFormat(medium: medium) {
            self = .latm(format)
        } else if let format = try? G711PayloadFormat(medium: medium) {
            self = .g711(format)
        } else {
            return nil
        }
    }

    /// The format a sender of `description` announces: AAC as `mpeg4-generic` (AAC-hbr) with
    /// `dynamicPayloadType`, G.711 as PCMU or PCMA (static 0 or 8 at 8 kHz mono); nil for a
    /// sound sent by neither.
    public init?(sending description: AudioFormatDescription, dynamicPayloadType: UInt8 = 97, control: String? = nil) {
        if description.isAAC {
            self = .mpeg4Generic(MPEG4GenericPayloadFormat(formatDescription: description, payloadType: dynamicPayloadType, control: control))
        } else if let format = G711PayloadFormat(formatDescription: description, dynamicPayloadType: dynamicPayloadType, control: control) {
            self = .g711(format)
        } else {
            return nil
        }
    }

    /// The `a=` attributes a sender announces (`rtpmap`, `fmtp`, `control`).
    public var attributes: [String] {
        switch self {
        case .mpeg4Generic(let format): format.attributes
        case .latm(let format): format.attributes
        case .g711(let format): format.attributes
        }
    }

    /// The `m=audio` medium a sender announces on `port`.
    public func medium(port: Int) -> SessionDescription.Media {
        SessionDescription.Media(type: "audio", port: port, formats: ["\(payloadType)"], attributes: attributes)
    }

    /// The RTP payload type.
    public var payloadType: UInt8 {
        switch self {
        case .mpeg4Generic(let format): format.payloadType
        case .latm(let format): format.payloadType
        case .g711(let format): format.payloadType
        }
    }

    /// The RTP clock rate.
    public var clockRate: Int {
        switch self {
        case .mpeg4Generic(let format): format.clockRate
        case .latm(let format): format.clockRate
        case .g711(let format): format.clockRate
        }
    }

    /// The medium's `a=control` URL (RTSP), if any.
    public var control: String? {
        switch self {
        case .mpeg4Generic(let format): format.control
        case .latm(let format): format.control
        case .g711(let format): format.control
        }
    }

    /// The encoding's name in `a=rtpmap`.
    public var encodingName: String {
        switch self {
        case .mpeg4Generic: "mpeg4-generic"
        case .latm: "MP4A-LATM"
        case .g711(let format): format.law.rawValue
        }
    }

    /// The sound's format from the description's configuration; an error when the
    /// description does not give it (``describedFormat()`` is nil: LATM whose configuration
    /// comes in band only) or gives one that is not AAC.
    public func formatDescription() throws(NetworkError) -> AudioFormatDescription {
        guard let description = try describedFormat() else {
            throw NetworkError(.unsupported, "MP4A-LATM without config= in the session description: the configuration comes in band, with the first element")
        }
        return description
    }

    /// The sound's format as the description gives it; nil when it comes in band only
    /// (``carriesItsConfigurationInBand``: LATM with `cpresent=1` and no `config=`, whose
    /// first AudioMuxElement carries it); an error when the description's configuration is
    /// not one this side reads.
    public func describedFormat() throws(NetworkError) -> AudioFormatDescription? {
        switch self {
        case .mpeg4Generic(let format): try format.formatDescription()
        case .latm(let format): try format.formatDescription()
        case .g711(let format): format.formatDescription
        }
    }

    /// Whether the format is learned from the stream rather than the description (LATM with
    /// `cpresent=1` and no `config=`).
    public var carriesItsConfigurationInBand: Bool {
        if case .latm(let format) = self { format.muxConfigPresent && format.config.isEmpty } else { false }
    }

    /// Whether a receiver can take this medium: the description's configuration reads, or
    /// the stream carries it.
    public var isReceivable: Bool {
        do { return try describedFormat() != nil || carriesItsConfigurationInBand } catch { return false }
    }
}
