public import MediaCore

/// G.711 over RTP (RFC 3551 §4.5.14): PCMU (µ-law, static payload type 0) or PCMA (A-law,
/// static payload type 8), 8 kHz unless a dynamic `rtpmap` says otherwise, one byte a sample
/// (per channel), any number of samples a packet. What IP cameras commonly send beside the
/// picture.
public struct G711PayloadFormat: Sendable, Hashable {
    /// The companding law.
    public enum Law: String, Sendable, Hashable {
        /// µ-law (PCMU; a movie's `ulaw`).
        case mu = "PCMU"
        /// A-law (PCMA; a movie's `alaw`).
        case a = "PCMA"

        /// The sample entry type a movie carries it as.
        public var codec: FourCharCode { self == .mu ? "ulaw" : "alaw" }
        /// The static RTP payload type (RFC 3551 table 4).
        public var staticPayloadType: UInt8 { self == .mu ? 0 : 8 }
    }

    /// The law.
    public var law: Law
    /// The RTP payload type (0 or 8, or a dynamic one).
    public var payloadType: UInt8
    /// The RTP clock rate, the sampling rate (8000 for the static types).
    public var clockRate: Int
    /// Channels (1 unless the `rtpmap` says otherwise).
    public var channelCount: Int
    /// The `a=control` URL (RTSP), if any.
    public var control: String?

    /// A format of `law` at `clockRate`.
    public init(law: Law, payloadType: UInt8? = nil, clockRate: Int = 8000, channelCount: Int = 1, control: String? = nil) {
        self.law = law
        self.payloadType = payloadType ?? law.staticPayloadType
        self.clockRate = clockRate
        self.channelCount = channelCount
        self.control = control
    }

    /// The first G.711 format of `medium`: an `rtpmap` naming PCMU or PCMA, or the static
    /// payload type 0 or 8 without one.
    public init(medium: SessionDescription.Media) throws(NetworkError) {
        let control = medium.attribute("control")
        for law in [Law.mu, .a] {
            if let (type, rate, channels) = try? medium.rtpMap(encoding: law.rawValue), medium.formats.contains(String(type)) {
                guard (1...192_000).contains(rate), (1...8).contains(channels ?? 1) else {
                    throw NetworkError(.invalidDescription, "\(law.rawValue)/\(rate)/\(channels ?? 1): not a rate and channel count this receiver takes")
                }
                self.init(law: law, payloadType: type, clockRate: rate, channelCount: channels ?? 1, control: control)
                return
            }
        }
        for format in medium.formats {
            for law in [Law.mu, .a] where format == String(law.staticPayloadType) {
                // (A static type with an rtpmap naming something else is not G.711.)
                guard !medium.attributes.contains(where: { $0.hasPrefix("rtpmap:\(format) ") }) else { continue }
                self.init(law: law, control: control)
                return
            }
        }
        throw NetworkError(.invalidDescription, "the \(medium.type) medium has no PCMU or PCMA format")
    }

    /// The format a sender announces for `description` (`ulaw` or `alaw`; nil for another
    /// codec): the static payload type (0 or 8) at 8 kHz mono, else `dynamicPayloadType`.
    public init?(formatDescription description: AudioFormatDescription, dynamicPayloadType: UInt8 = 97, control: String? = nil) {
        guard let law = [Law.mu, .a].first(where: { $0.codec == description.codec }) else { return nil }
        let isStatic = description.sampleRate == 8000 && description.channelCount == 1
        self.init(law: law, payloadType: isStatic ? law.staticPayloadType : dynamicPayloadType, clockRate: description.sampleRate,
                  channelCount: description.channelCount, control: control)
    }

    /// The `a=` attributes: `rtpmap` (also for a static type, as most senders write it), and
    /// `control` when set.
    public var attributes: [String] {
        var result = ["rtpmap:\(payloadType) \(law.rawValue)/\(clockRate)" + (channelCount == 1 ? "" : "/\(channelCount)")]
        if let control { result.append("control:\(control)") }
        return result
    }

    /// The medium a sender announces on `port`.
    public func medium(port: Int) -> SessionDescription.Media {
        SessionDescription.Media(type: "audio", port: port, formats: ["\(payloadType)"], attributes: attributes)
    }

    /// The sound's format: `ulaw` or `alaw` at the clock rate, a sample a byte per channel.
    public var formatDescription: AudioFormatDescription {
        AudioFormatDescription(codec: law.codec, sampleRate: clockRate, channelCount: channelCount, framesPerPacket: 1)
    }
}
