public import MediaCore

/// The H.264 payload format's session description parameters (RFC 6184 §8.1, §8.2.1): the
/// payload type, `packetization-mode`, `profile-level-id` and `sprop-parameter-sets`, as the
/// `a=rtpmap` and `a=fmtp` lines of a video medium.
public struct H264PayloadFormat: Sendable, Hashable {
    /// The RTP payload type.
    public var payloadType: UInt8
    /// 0 (single NAL unit) or 1 (non-interleaved).
    public var packetizationMode: Int
    /// profile_idc, the constraint flags byte and level_idc (`profile-level-id`, 6 hex digits).
    public var profileLevelID: (profile: UInt8, constraints: UInt8, level: UInt8)? {
        get { profileLevel.map { (UInt8($0 >> 16), UInt8(($0 >> 8) & 0xFF), UInt8($0 & 0xFF)) } }
        set { profileLevel = newValue.map { UInt32($0.profile) << 16 | UInt32($0.constraints) << 8 | UInt32($0.level) } }
    }
    /// The parameter sets sent out of band (`sprop-parameter-sets`): SPS and PPS NAL units.
    public var parameterSets: [[UInt8]]
    /// The medium's `a=control` URL (RTSP), if any.
    public var control: String?

    var profileLevel: UInt32?

    /// The RTP clock rate of H.264 (RFC 6184 §8.2.1).
    public static let clockRate = 90_000

    /// The parameters for sending samples of `description`.
    public init(formatDescription description: VideoFormatDescription, payloadType: UInt8 = 96, packetizationMode: Int = 1, control: String? = nil) {
        self.payloadType = payloadType
        self.packetizationMode = packetizationMode
        self.parameterSets = description.sequenceParameterSets + description.pictureParameterSets
        self.control = control
        self.profileLevelID = (description.profileIdc, description.profileCompatibility, description.levelIdc)
    }

    /// The parameters of the first H.264 format of `medium` (its `rtpmap` says `H264/90000`).
    public init(medium: SessionDescription.Media) throws(NetworkError) {
        var found: UInt8?
        for attribute in medium.attributes where attribute.hasPrefix("rtpmap:") {
            let fields = attribute.dropFirst(7).split(separator: " ", maxSplits: 1)
            guard fields.count == 2, let type = UInt8(fields[0]), type < 128 else { continue }
            if fields[1].uppercased().hasPrefix("H264/90000") { found = type; break }
        }
        guard let payloadType = found else {
            throw NetworkError(.invalidDescription, "the \(medium.type) medium has no 'a=rtpmap:PT H264/90000' line")
        }
        self.payloadType = payloadType
        packetizationMode = 0  // RFC 6184 §8.1: absent means 0
        parameterSets = []
        control = medium.attribute("control")
        for (name, value) in medium.formatParameters(payloadType: payloadType) {
            let pair = [name, value]
            switch pair[0].lowercased() {
            case "packetization-mode":
                guard let mode = Int(pair[1]), (0...2).contains(mode) else {
                    throw NetworkError(.invalidDescription, "packetization-mode=\(pair[1]): 0, 1 or 2")
                }
                packetizationMode = mode
            case "profile-level-id":
                guard pair[1].count == 6, let value = UInt32(pair[1], radix: 16) else {
                    throw NetworkError(.invalidDescription, "profile-level-id=\(pair[1]): six hexadecimal digits")
                }
                profileLevel = value
            case "sprop-parameter-sets":
                for encoded in pair[1].split(separator: ",") where !encoded.isEmpty {
                    guard let unit = Base64.decode(encoded), !unit.isEmpty else {
                        throw NetworkError(.invalidDescription, "sprop-parameter-sets: '\(encoded.prefix(40))' is not base64")
                    }
                    parameterSets.append(unit)
                }
            default:
                continue
            }
        }
    }

    /// The `a=` attributes (`rtpmap`, `fmtp`, and `control` when set).
    public var attributes: [String] {
        var parameters = ["packetization-mode=\(packetizationMode)"]
        if let profileLevel { parameters.append("profile-level-id=" + String(profileLevel | 0x1000000, radix: 16).dropFirst().uppercased()) }
        if !parameterSets.isEmpty { parameters.append("sprop-parameter-sets=" + parameterSets.map(Base64.encode).joined(separator: ",")) }
        var result = ["rtpmap:\(payloadType) H264/90000", "fmtp:\(payloadType) " + parameters.joined(separator: "; ")]
        if let control { result.append("control:\(control)") }
        return result
    }

    /// A video medium on `port` with these parameters.
    public func medium(port: Int) -> SessionDescription.Media {
        SessionDescription.Media(type: "video", port: port, formats: ["\(payloadType)"], attributes: attributes)
    }

    /// The format description from the out-of-band parameter sets, or nil when there are none
    /// (the stream then carries them in band).
    public func formatDescription() throws(NetworkError) -> VideoFormatDescription? {
        let sps = parameterSets.filter { $0[0] & 0x1F == 7 }, pps = parameterSets.filter { $0[0] & 0x1F == 8 }
        guard !sps.isEmpty, !pps.isEmpty else { return nil }
        do { return try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps) } catch {
            throw NetworkError(.invalidDescription, "sprop-parameter-sets do not parse", cause: error)
        }
    }

    /// Equal parameters.
    public static func == (a: Self, b: Self) -> Bool {
        a.payloadType == b.payloadType && a.packetizationMode == b.packetizationMode && a.profileLevel == b.profileLevel
            && a.parameterSets == b.parameterSets && a.control == b.control
    }

    /// Hashes the parameters.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(payloadType)
        hasher.combine(packetizationMode)
        hasher.combine(profileLevel)
        hasher.combine(parameterSets)
        hasher.combine(control)
    }
}
