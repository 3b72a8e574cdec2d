public import MediaCore

/// The payload format of one RTP medium of a session: H.264 video (RFC 6184) or AAC as
/// `mpeg4-generic` (RFC 3640). What a session description's `m=` section announces and what an
/// RTSP server sets up per medium.
public enum RTPPayloadFormat: Sendable, Hashable {
    /// H.264 video.
    case h264(H264PayloadFormat)
    /// AAC in RFC 3640's AAC-hbr mode.
    case mpeg4Generic(MPEG4GenericPayloadFormat)
    /// A medium by its session description lines alone: one this side does not read (a
    /// publisher's Opus, say: set up as the description states it, its packets not taken), or a
    /// sound it sends in a format the others do not name (G.711).
    case carried(SessionDescription.Media)

    /// The medium a sender of `sound` announces: AAC as ``mpeg4Generic(_:)``, any other as
    /// ``carried(_:)`` its description lines.
    public init(sending sound: AudioPayloadFormat) {
        if case .mpeg4Generic(let format) = sound { self = .mpeg4Generic(format) } else { self = .carried(sound.medium(port: 0)) }
    }

    /// The kind of media the format carries.
    public var mediaType: MediaType {
        switch self {
        case .h264: .video
        case .mpeg4Generic: .audio
        case .carried(let medium): medium.type == "video" ? .video : medium.type == "audio" ? .audio : MediaType(rawValue: "data")
        }
    }

    /// The RTP payload type.
    public var payloadType: UInt8 {
        switch self {
        case .h264(let format): format.payloadType
        case .mpeg4Generic(let format): format.payloadType
        case .carried(let medium): medium.formats.first.flatMap { UInt8($0) } ?? 0
        }
    }

    /// The RTP clock rate: 90 kHz for video, the sampling rate for AAC.
    public var clockRate: Int {
        switch self {
        case .h264: Int(H264Packetizer.clockRate)
        case .mpeg4Generic(let format): format.clockRate
        case .carried(let medium):
            // `a=rtpmap:PT NAME/RATE...` of its first format (8000 for the static G.711 types).
            medium.attributes.lazy.compactMap { attribute -> Int? in
                guard attribute.lowercased().hasPrefix("rtpmap:"), let slash = attribute.firstIndex(of: "/") else { return nil }
                return Int(attribute[attribute.index(after: slash)...].prefix { $0.isNumber })
            }.first ?? 8000
        }
    }

    /// The medium's `a=control` URL (RTSP), if any.
    public var control: String? {
        switch self {
        case .h264(let format): format.control
        case .mpeg4Generic(let format): format.control
        case .carried(let medium): medium.attribute("control")
        }
    }

    /// The medium on `port` with this format's attributes.
    public func medium(port: Int) -> SessionDescription.Media {
        switch self {
        case .h264(let format): return format.medium(port: port)
        case .mpeg4Generic(let format): return format.medium(port: port)
        case .carried(var medium):
            medium.port = port
            return medium
        }
    }
}
