public import MediaCore
import MPEG4Audio

/// The `mpeg4-generic` payload format's session description parameters (RFC 3640 §4.1): the
/// `a=rtpmap` and `a=fmtp` lines of an audio medium carrying AAC, with the AU-header layout
/// (`sizeLength`, `indexLength`, ...) that ``AACDepacketizer`` reads and ``AACPacketizer``
/// writes.
///
/// What is written is the AAC-hbr mode (§3.3.6): 13-bit AU sizes, 3-bit indices, the
/// AudioSpecificConfig in `config=`, `streamtype=5`. What is read is any layout a sender states
/// (parameter names in any case, as RFC 4566 §6 asks; ffmpeg omits `streamtype`, which is
/// then taken as audio).
public struct MPEG4GenericPayloadFormat: Sendable, Hashable {
    /// The RTP payload type.
    public var payloadType: UInt8
    /// The RTP clock rate (`a=rtpmap`): the sampling rate the access units are timed in.
    public var clockRate: Int
    /// The channel count after the rate in `a=rtpmap`, if given.
    public var channelCount: Int?
    /// The mode: `AAC-hbr`, `AAC-lbr`, `generic`, ...
    public var mode: String
    /// The AudioSpecificConfig's bytes (`config=`, hexadecimal).
    public var config: [UInt8]
    /// Bits of each AU-header's AU-size (13 in AAC-hbr; 0: no size, one AU per packet).
    public var sizeLength: Int
    /// Bits of the first AU-header's AU-index (3 in AAC-hbr).
    public var indexLength: Int
    /// Bits of the later AU-headers' AU-index-delta (3 in AAC-hbr).
    public var indexDeltaLength: Int
    /// Bits of the CTS-delta, after a CTS-flag in every AU-header (the flag 0 in the first).
    public var ctsDeltaLength: Int
    /// Bits of the DTS-delta, after a DTS-flag.
    public var dtsDeltaLength: Int
    /// Whether each AU-header has a RAP-flag.
    public var randomAccessIndication: Bool
    /// Bits of each AU-header's stream-state.
    public var streamStateIndication: Int
    /// Bits of the auxiliary section's size field (0: no auxiliary section).
    public var auxiliaryDataSizeLength: Int
    /// The duration of every access unit in clock ticks (`constantDuration`), if stated.
    public var constantDuration: Int?
    /// The MPEG-4 audio profile and level (`profile-level-id`, decimal), if stated.
    public var profileLevelID: Int?
    /// The medium's `a=control` URL (RTSP), if any.
    public var control: String?

    /// The largest field length in bits accepted from a description (a 32-bit value at most).
    public static let maximumFieldLength = 32

    /// The parameters for sending AAC samples of `description` in AAC-hbr mode, timed at its
    /// sample rate (as ffmpeg and GStreamer send it).
    public init(formatDescription description: AudioFormatDescription, payloadType: UInt8 = 97, control: String? = nil) {
        self.payloadType = payloadType
        clockRate = description.sampleRate
        channelCount = description.channelCount
        mode = "AAC-hbr"
        config = description.magicCookie
        sizeLength = 13
        indexLength = 3
        indexDeltaLength = 3
        ctsDeltaLength = 0
        dtsDeltaLength = 0
        randomAccessIndication = false
        streamStateIndication = 0
        auxiliaryDataSizeLength = 0
        constantDuration = nil
        // The AAC Profile's level for the channels and rate: 2 (0x29: up to 2 channels at 48 kHz), else 4
        // (0x2A: 5 channels at 48 kHz, or 2 at 96 kHz). (ffmpeg writes 1; receivers do not check it.)
        profileLevelID = description.channelCount <= 2 && description.sampleRate <= 48_000 ? 0x29 : 0x2A
        self.control = control
    }

    /// The parameters of the first `mpeg4-generic` format of `medium`.
    public init(medium: SessionDescription.Media) throws(NetworkError) {
        (payloadType, clockRate, channelCount) = try medium.rtpMap(encoding: "mpeg4-generic")
        mode = ""
        config = []
        sizeLength = 0
        indexLength = 0
        indexDeltaLength = 0
        ctsDeltaLength = 0
        dtsDeltaLength = 0
        randomAccessIndication = false
        streamStateIndication = 0
        auxiliaryDataSizeLength = 0
        control = medium.attribute("control")
        var streamType = 5
        for (name, value) in medium.formatParameters(payloadType: payloadType) {
            let pair = [name, value]
            func length() throws(NetworkError) -> Int {
                guard let value = Int(pair[1]), (0...Self.maximumFieldLength).contains(value) else {
                    throw NetworkError(.invalidDescription, "\(pair[0])=\(pair[1].prefix(20)): a length of 0–\(Self.maximumFieldLength) bits")
                }
                return value
            }
            switch pair[0].lowercased() {
            case "mode": mode = String(pair[1])
            case "config":
                guard let bytes = Self.bytes(hex: pair[1]) else {
                    throw NetworkError(.invalidDescription, "config=\(pair[1].prefix(40)): not hexadecimal bytes")
                }
                config = bytes
            case "streamtype":
                guard let value = Int(pair[1]) else { throw NetworkError(.invalidDescription, "streamtype=\(pair[1].prefix(20)): not a number") }
                streamType = value
            case "sizelength": sizeLength = try length()
            case "indexlength": indexLength = try length()
            case "indexdeltalength": indexDeltaLength = try length()
            case "ctsdeltalength": ctsDeltaLength = try length()
            case "dtsdeltalength": dtsDeltaLength = try length()
            case "randomaccessindication": randomAccessIndication = pair[1] == "1"
            case "streamstateindication": streamStateIndication = try length()
            case "auxiliarydatasizelength": auxiliaryDataSizeLength = try length()
            case "constantduration": constantDuration = Int(pair[1]).flatMap { $0 > 0 ? $0 : nil }
            case "profile-level-id": profileLevelID = Int(pair[1])
            default: continue
            }
        }
        guard streamType == 5 else {
            throw NetworkError(.unsupported, "mpeg4-generic streamtype=\(streamType): only audio (5) is carried")
        }
        guard !config.isEmpty else {
            throw NetworkError(.invalidDescription, "the mpeg4-generic format has no config= (the AudioSpecificConfig)")
        }
    }

    /// The `a=` attributes (`rtpmap`, `fmtp`, and `control` when set).
    public var attributes: [String] {
        var parameters = ["streamtype=5"]
        if let profileLevelID { parameters.append("profile-level-id=\(profileLevelID)") }
        parameters.append("mode=\(mode)")
        parameters.append("config=" + Self.hex(config))
        for (name, value) in [("sizelength", sizeLength), ("indexlength", indexLength), ("indexdeltalength", indexDeltaLength),
                              ("ctsdeltalength", ctsDeltaLength), ("dtsdeltalength", dtsDeltaLength),
                              ("streamstateindication", streamStateIndication), ("auxiliarydatasizelength", auxiliaryDataSizeLength)] where value > 0 {
            parameters.append("\(name)=\(value)")
        }
        if randomAccessIndication { parameters.append("randomaccessindication=1") }
        if let constantDuration { parameters.append("constantduration=\(constantDuration)") }
        var result = ["rtpmap:\(payloadType) mpeg4-generic/\(clockRate)" + (channelCount.map { "/\($0)" } ?? ""),
                      "fmtp:\(payloadType) " + parameters.joined(separator: "; ")]
        if let control { result.append("control:\(control)") }
        return result
    }

    /// An audio medium on `port` with these parameters.
    public func medium(port: Int) -> SessionDescription.Media {
        SessionDescription.Media(type: "audio", port: port, formats: ["\(payloadType)"], attributes: attributes)
    }

    /// The format description from `config`; the RTP clock must be its sample rate (the rate
    /// the access units are timed in), else an error names both.
    public func formatDescription() throws(NetworkError) -> AudioFormatDescription {
        let description: AudioFormatDescription
        do { description = try AudioFormatDescription(aacConfiguration: config) } catch {
            throw NetworkError(.invalidDescription, "config= is not an AudioSpecificConfig this receiver reads", cause: error)
        }
        guard description.sampleRate == clockRate || description.audioSpecificConfig?.samplingFrequency == clockRate else {
            throw NetworkError(.unsupported, "an RTP clock of \(clockRate) Hz for AAC at \(description.sampleRate) Hz: the clock must be the sampling rate")
        }
        return description
    }

    /// The bytes as lower-case hexadecimal digits.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(2 * bytes.count)
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: text, as: UTF8.self)
    }

    /// Hexadecimal digits (an even count) as bytes, or nil.
    static func bytes(hex: some StringProtocol) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0, digits.count <= 2 * 4096 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
