public import MediaCore
public import MPEG4Audio
import Bitstream

/// The `MP4A-LATM` payload format's session description parameters (RFC 6416 §7.3): AAC in
/// LATM over RTP, as some cameras and ffmpeg's `-rtpflags latm` send it. Received only (the
/// ``LATMDepacketizer`` reads it); H264Kit sends AAC as `mpeg4-generic`
/// (``MPEG4GenericPayloadFormat``).
///
/// With `cpresent=0` the StreamMuxConfig comes in `config=` (hexadecimal) and every element
/// uses it; with `cpresent=1` (the default) elements carry it in band. A config that stops
/// after the AudioSpecificConfig (GStreamer's payloader writes 4 bytes for 48 kHz stereo,
/// without `frameLengthType` and `latmBufferFullness`) is read as if the missing fields were 0.
public struct MP4ALATMPayloadFormat: Sendable, Hashable {
    /// The RTP payload type.
    public var payloadType: UInt8
    /// The RTP clock rate (`a=rtpmap`).
    public var clockRate: Int
    /// The channel count after the rate in `a=rtpmap`, if given.
    public var channelCount: Int?
    /// Whether elements carry their StreamMuxConfig (`cpresent`, 1 by default).
    public var muxConfigPresent: Bool
    /// The StreamMuxConfig's bytes (`config=`), when given.
    public var config: [UInt8]
    /// `profile-level-id`, if stated.
    public var profileLevelID: Int?
    /// The medium's `a=control` URL (RTSP), if any.
    public var control: String?

    /// The parameters of the first `MP4A-LATM` format of `medium`.
    public init(medium: SessionDescription.Media) throws(NetworkError) {
        (payloadType, clockRate, channelCount) = try medium.rtpMap(encoding: "MP4A-LATM")
        muxConfigPresent = true
        config = []
        control = medium.attribute("control")
        for (name, value) in medium.formatParameters(payloadType: payloadType) {
            let pair = [name, value]
            switch pair[0].lowercased() {
            case "cpresent":
                guard pair[1] == "0" || pair[1] == "1" else { throw NetworkError(.invalidDescription, "cpresent=\(pair[1].prefix(20)): 0 or 1") }
                muxConfigPresent = pair[1] == "1"
            case "config":
                guard let bytes = MPEG4GenericPayloadFormat.bytes(hex: pair[1]) else {
                    throw NetworkError(.invalidDescription, "config=\(pair[1].prefix(40)): not hexadecimal bytes")
                }
                config = bytes
            case "profile-level-id": profileLevelID = Int(pair[1])
            default: continue
            }
        }
        if !muxConfigPresent, config.isEmpty {
            throw NetworkError(.invalidDescription, "MP4A-LATM with cpresent=0 and no config= (the StreamMuxConfig)")
        }
    }

    /// The `a=` attributes (`rtpmap`, `fmtp`, and `control` when set).
    public var attributes: [String] {
        var parameters: [String] = []
        if let profileLevelID { parameters.append("profile-level-id=\(profileLevelID)") }
        parameters.append("cpresent=\(muxConfigPresent ? 1 : 0)")
        if !config.isEmpty { parameters.append("config=" + MPEG4GenericPayloadFormat.hex(config)) }
        var result = ["rtpmap:\(payloadType) MP4A-LATM/\(clockRate)" + (channelCount.map { "/\($0)" } ?? ""),
                      "fmtp:\(payloadType) " + parameters.joined(separator: ";")]
        if let control { result.append("control:\(control)") }
        return result
    }

    /// The StreamMuxConfig of `config=`, or nil when there is none (it then comes in band).
    public func streamMuxConfig() throws(NetworkError) -> StreamMuxConfig? {
        guard !config.isEmpty else { return nil }
        do { return try StreamMuxConfig(bytes: config) } catch {
            // A config cut after the AudioSpecificConfig (GStreamer's): the missing fields as 0.
            if let padded = try? StreamMuxConfig(bytes: config + [0, 0]) { return padded }
            throw NetworkError(.invalidDescription, "config= is not a StreamMuxConfig this receiver reads", cause: error)
        }
    }

    /// The format description of `config=`'s AudioSpecificConfig, or nil when the
    /// configuration comes in band.
    public func formatDescription() throws(NetworkError) -> AudioFormatDescription? {
        guard let muxConfig = try streamMuxConfig() else { return nil }
        do { return try AudioFormatDescription(aac: muxConfig.audioSpecificConfig) } catch {
            throw NetworkError(.invalidDescription, "the StreamMuxConfig's AudioSpecificConfig describes no channels", cause: error)
        }
    }
}
