public import MediaCore

/// The sending side of a sound medium, whichever payload format it is sent in: AAC as RFC 3640
/// `mpeg4-generic` (``AACPacketizer``) or G.711 as PCMU/PCMA (``G711Packetizer``). What a
/// sender of a picture and its sound holds for the sound: made from the track's format, it
/// packetizes that track's samples and says what the session description announces.
public struct AudioPacketizer: Sendable {
    /// The payload format's packetizer.
    public enum Packetizer: Sendable {
        /// AAC, RFC 3640 AAC-hbr.
        case aac(AACPacketizer)
        /// G.711, RFC 3551.
        case g711(G711Packetizer)
    }

    /// The payload format's packetizer (its counts and configuration).
    public private(set) var packetizer: Packetizer
    /// The payload format the packets are of, as a session description announces it (no
    /// `a=control`: ``payloadFormat(control:)`` adds one).
    public let format: AudioPayloadFormat

    /// A packetizer for samples of `format`, with `configuration`'s packet size, SSRC, first
    /// sequence number and timestamp offset: AAC with the configuration's (dynamic) payload
    /// type, G.711 with the static type (0 or 8) at 8 kHz mono, else the configuration's. An
    /// error for a sound sent by neither (its codec named) or a configuration that does not
    /// hold.
    public init(format: AudioFormatDescription, configuration: AACPacketizer.Configuration) throws(NetworkError) {
        if format.isAAC {
            packetizer = .aac(try AACPacketizer(configuration: configuration, clockRate: format.sampleRate))
            self.format = .mpeg4Generic(MPEG4GenericPayloadFormat(formatDescription: format, payloadType: configuration.payloadType))
        } else if let g711 = G711PayloadFormat(formatDescription: format, dynamicPayloadType: configuration.payloadType) {
            let settings = G711Packetizer.Configuration(maximumPacketSize: configuration.maximumPacketSize,
                                                        samplesPerPacket: max(1, format.sampleRate / 50), payloadType: g711.payloadType,
                                                        ssrc: configuration.ssrc, initialSequenceNumber: configuration.initialSequenceNumber,
                                                        timestampOffset: configuration.timestampOffset)
            let made = try G711Packetizer(configuration: settings, format: g711)
            packetizer = .g711(made)
            self.format = .g711(made.format)
        } else {
            throw NetworkError(.unsupported, "\(format.codec) sound: RTP here sends AAC (mpeg4-generic) and G.711 (PCMU, PCMA)")
        }
    }

    /// Whether a sound of `format` can be sent (AAC, or G.711 µ-law or A-law).
    public static func sends(_ format: AudioFormatDescription) -> Bool {
        format.isAAC || G711PayloadFormat(formatDescription: format) != nil
    }

    /// The payload format the session description announces, its `a=control` `control`.
    public func payloadFormat(control: String? = nil) -> AudioPayloadFormat {
        switch format {
        case .mpeg4Generic(var format):
            format.control = control
            return .mpeg4Generic(format)
        case .latm(var format):
            format.control = control
            return .latm(format)
        case .g711(var format):
            format.control = control
            return .g711(format)
        }
    }

    /// The RTP payload type.
    public var payloadType: UInt8 {
        switch packetizer {
        case .aac(let packetizer): packetizer.configuration.payloadType
        case .g711(let packetizer): packetizer.configuration.payloadType
        }
    }

    /// The RTP clock rate.
    public var clockRate: Int32 {
        switch packetizer {
        case .aac(let packetizer): packetizer.clockRate
        case .g711(let packetizer): packetizer.clockRate
        }
    }

    /// The synchronization source.
    public var ssrc: UInt32 {
        switch packetizer {
        case .aac(let packetizer): packetizer.configuration.ssrc
        case .g711(let packetizer): packetizer.configuration.ssrc
        }
    }

    /// Packets made so far.
    public var packetCount: Int {
        switch packetizer {
        case .aac(let packetizer): packetizer.packetCount
        case .g711(let packetizer): packetizer.packetCount
        }
    }

    /// Payload bytes made so far (RTCP's sender octet count).
    public var octetCount: Int {
        switch packetizer {
        case .aac(let packetizer): packetizer.octetCount
        case .g711(let packetizer): packetizer.octetCount
        }
    }

    /// The RTP timestamp of a presentation time.
    public func timestamp(for time: MediaTime) -> UInt32 {
        switch packetizer {
        case .aac(let packetizer): packetizer.timestamp(for: time)
        case .g711(let packetizer): packetizer.timestamp(for: time)
        }
    }

    /// The packets a sample of the sound completes (AAC may hold a frame back to share a
    /// packet; ``flush()`` sends it).
    public mutating func packets(for sample: SampleBuffer) throws(NetworkError) -> [RTPPacket] {
        switch packetizer {
        case .aac(var made):
            defer { packetizer = .aac(made) }
            return try made.packets(for: sample)
        case .g711(var made):
            defer { packetizer = .g711(made) }
            return try made.packets(for: sample)
        }
    }

    /// The packets still held (AAC frames waiting to share one).
    public mutating func flush() -> [RTPPacket] {
        switch packetizer {
        case .aac(var made):
            defer { packetizer = .aac(made) }
            return made.flush()
        case .g711:
            return []
        }
    }
}
