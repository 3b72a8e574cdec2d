public import MediaCore

/// The payload format of one RTP medium of a session: H.264 video (RFC 6184) or AAC as
/// `mpeg4-generic` (RFC 3640). What a session description's `m=` section announces and what an
/// RTSP server sets up per medium.
public enum RTPPayloadFormat: Sendable, Hashable {
    /// H.264 video.
    case h264(H264PayloadFormat)
    /// AAC in RFC 3640's AAC-hbr mode.
    case mpeg4Generic(MPEG4GenericPayloadFormat)

    /// The kind of media the format carries.
    public var mediaType: MediaType {
        switch self {
        case .h264: .video
        case .mpeg4Generic: .audio
        }
    }

    /// The RTP payload type.
    public var payloadType: UInt8 {
        switch self {
        case .h264(let format): format.payloadType
        case .mpeg4Generic(let format): format.payloadType
        }
    }

    /// The RTP clock rate: 90 kHz for video, the sampling rate for AAC.
    public var clockRate: Int {
        switch self {
        case .h264: Int(H264Packetizer.clockRate)
        case .mpeg4Generic(let format): format.clockRate
        }
    }

    /// The medium's `a=control` URL (RTSP), if any.
    public var control: String? {
        switch self {
        case .h264(let format): format.control
        case .mpeg4Generic(let format): format.control
        }
    }

    /// The medium on `port` with this format's attributes.
    public func medium(port: Int) -> SessionDescription.Media {
        switch self {
        case .h264(let format): format.medium(port: port)
        case .mpeg4Generic(let format): format.medium(port: port)
        }
    }
}
