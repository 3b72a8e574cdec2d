public import Bitstream
public import MPEG4Audio

/// The format of compressed audio samples (`CMAudioFormatDescription`): the codec, the rate
/// its samples are timed at, the channels, the frames (PCM samples per channel) in each
/// packet, and the codec's configuration (the magic cookie: for AAC the AudioSpecificConfig's
/// bytes, as an `esds` carries them).
///
/// For AAC the rate is the one the decoder outputs, and a packet's frames follow from it: 1024
/// (or 960) at the core rate, 2048 (1920) at the rate SBR outputs when HE-AAC is signalled in
/// the configuration, as a movie's audio track times them. HE-AAC signalled implicitly is
/// timed at the core rate, which is all the configuration says.
public struct AudioFormatDescription: Hashable, Sendable, CustomStringConvertible {
    /// The sample entry type: `mp4a` (AAC), `ulaw`, `alaw`.
    public var codec: FourCharCode
    /// Samples per second per channel, and the clock the packets are timed in.
    public var sampleRate: Int
    /// Channels the decoder outputs.
    public var channelCount: Int
    /// Samples per channel in one packet (one sample buffer).
    public var framesPerPacket: Int
    /// The codec's configuration as it came (AAC: the AudioSpecificConfig's bytes). Setting it
    /// reads it again as an AudioSpecificConfig when ``codec`` is `mp4a`.
    public var magicCookie: [UInt8] {
        get { configuration.bytes }
        set { configuration = Configuration(newValue, configuration: codec == "mp4a" ? try? AudioSpecificConfig(bytes: newValue) : nil) }
    }
    /// For AAC, the configuration read.
    public var audioSpecificConfig: AudioSpecificConfig? { configuration.parsed }
    /// The configuration's bytes and what they say, shared by every copy: every sample buffer
    /// carries its description, and copying one is a single retain here.
    private var configuration: Configuration

    private final class Configuration: Sendable {
        let bytes: [UInt8]
        let parsed: AudioSpecificConfig?
        init(_ bytes: [UInt8], configuration: AudioSpecificConfig?) {
            self.bytes = bytes
            parsed = configuration
        }
        static let none = Configuration([], configuration: nil)
    }

    /// AAC described by the AudioSpecificConfig in `magicCookie` (an esds's DecoderSpecificInfo,
    /// an RTP session's `config=`): rate, channels and frames per packet from it. A
    /// configuration without a channel count (a reserved value) is refused.
    public init(aacConfiguration magicCookie: [UInt8]) throws(BitstreamError) {
        let config = try AudioSpecificConfig(bytes: magicCookie)
        try self.init(aac: config, magicCookie: magicCookie)
    }

    /// AAC described by `config`; its bytes are serialized unless given.
    public init(aac config: AudioSpecificConfig, magicCookie: [UInt8]? = nil) throws(BitstreamError) {
        guard let channels = config.channelCount else {
            throw BitstreamError(.unsupported, "channel configuration \(config.channelConfiguration) of \(config.audioObjectType): no channel count")
        }
        let frames = config.frameLength ?? 1024
        codec = "mp4a"
        sampleRate = config.outputSamplingFrequency
        channelCount = channels
        framesPerPacket = config.outputSamplingFrequency == config.samplingFrequency ? frames : frames * config.outputSamplingFrequency / max(config.samplingFrequency, 1)
        let bytes: [UInt8]
        if let magicCookie { bytes = magicCookie } else { bytes = try config.serialized() }
        configuration = Configuration(bytes, configuration: config)
    }

    /// Audio of another codec: `codec`, timed at `sampleRate`, with `framesPerPacket` samples
    /// per packet (1 for G.711, where a packet is any number of bytes: one per sample).
    public init(codec: FourCharCode, sampleRate: Int, channelCount: Int, framesPerPacket: Int, magicCookie: [UInt8] = []) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.framesPerPacket = framesPerPacket
        configuration = magicCookie.isEmpty ? .none : Configuration(magicCookie, configuration: nil)
    }

    /// Whether the samples are AAC.
    public var isAAC: Bool { codec == "mp4a" && audioSpecificConfig != nil }

    /// Whether the samples are G.711 (`ulaw` or `alaw`): a byte a sample per channel, any
    /// number of samples in a sample buffer.
    public var isG711: Bool { codec == "ulaw" || codec == "alaw" }

    /// One packet's duration, in ``sampleRate`` ticks.
    public var packetDuration: MediaTime { MediaTime(value: Int64(framesPerPacket), timescale: Int32(clamping: sampleRate)) }

    /// The RFC 6381 codec string (`mp4a.40.2` for AAC LC, `mp4a.40.5` and `mp4a.40.29` for
    /// HE-AAC signalled hierarchically); the sample entry type for others.
    public var codecString: String { audioSpecificConfig?.codecString ?? codec.description }

    /// Equal in codec, rate, channels, frames and configuration bytes.
    public static func == (a: AudioFormatDescription, b: AudioFormatDescription) -> Bool {
        a.codec == b.codec && a.sampleRate == b.sampleRate && a.channelCount == b.channelCount && a.framesPerPacket == b.framesPerPacket
            && (a.configuration === b.configuration || a.magicCookie == b.magicCookie)
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(codec)
        hasher.combine(sampleRate)
        hasher.combine(channelCount)
        hasher.combine(magicCookie)
    }

    /// "mp4a.40.2 48000 Hz, 2 channels, 1024 frames per packet"; "ulaw 8000 Hz, 1 channel" for
    /// sound whose packets are single frames (G.711, PCM).
    public var description: String {
        "\(codecString) \(sampleRate) Hz, \(channelCount) channel\(channelCount == 1 ? "" : "s")" + (framesPerPacket > 1 ? ", \(framesPerPacket) frames per packet" : "")
    }
}
