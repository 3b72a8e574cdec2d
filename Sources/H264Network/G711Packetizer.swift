public import MediaCore

/// G.711 over RTP (RFC 3551 §4.5.14), sending side: runs of µ-law or A-law samples (a sample
/// buffer of any number of samples, a byte each per channel, as a receiver or a movie's chunk
/// gives them) into RTP packets of at most ``Configuration/samplesPerPacket`` samples each.
///
/// Each packet's timestamp is its first sample's time in the sampling clock; a run is cut
/// at packet boundaries, never through a sample frame (one byte per channel). The marker bit
/// is set on the first packet and on the first after a gap in time (the start of a
/// "talkspurt", §4.1), as RFC 3551 asks of audio sent with silence suppression. A value type:
/// it holds the next sequence number.
public struct G711Packetizer: Sendable {
    /// How the packets are made.
    public struct Configuration: Sendable, Hashable {
        /// The largest RTP packet, header included.
        public var maximumPacketSize: Int
        /// The most samples (per channel) in a packet: 160 by default, 20 ms at 8 kHz (RFC 3551's
        /// default packetization interval, and what cameras and GStreamer send).
        public var samplesPerPacket: Int
        /// The payload type: 0 (PCMU) or 8 (PCMA) at 8 kHz mono, or a dynamic one.
        public var payloadType: UInt8
        /// The synchronization source.
        public var ssrc: UInt32
        /// The first sequence number.
        public var initialSequenceNumber: UInt16
        /// Added to every timestamp (random unless given).
        public var timestampOffset: UInt32

        /// A configuration; the SSRC, first sequence number and timestamp offset are random unless given.
        public init(maximumPacketSize: Int = 1200, samplesPerPacket: Int = 160, payloadType: UInt8 = 0, ssrc: UInt32? = nil,
                    initialSequenceNumber: UInt16? = nil, timestampOffset: UInt32? = nil) {
            self.maximumPacketSize = maximumPacketSize
            self.samplesPerPacket = samplesPerPacket
            self.payloadType = payloadType
            self.ssrc = ssrc ?? .random(in: .min ... .max)
            self.initialSequenceNumber = initialSequenceNumber ?? .random(in: .min ... .max)
            self.timestampOffset = timestampOffset ?? .random(in: .min ... .max)
        }
    }

    /// How the packets are made.
    public let configuration: Configuration
    /// The payload format the packets are of (its clock rate the sampling rate).
    public let format: G711PayloadFormat
    /// The sequence number of the next packet.
    public private(set) var nextSequenceNumber: UInt16
    /// Packets made so far.
    public private(set) var packetCount = 0
    /// Payload bytes made so far (RTCP's sender octet count).
    public private(set) var octetCount = 0
    /// Where the next run must start to follow on without a gap (nil before the first).
    private var nextTimestamp: UInt32?

    /// A packetizer of `format`'s samples (the payload type is the configuration's); the
    /// configuration's packets must hold at least one sample frame and at most the largest UDP
    /// payload.
    public init(configuration: Configuration = Configuration(), format: G711PayloadFormat) throws(NetworkError) {
        let channels = max(1, format.channelCount)
        guard configuration.samplesPerPacket >= 1, RTPPacket.fixedHeaderSize + channels <= configuration.maximumPacketSize,
              configuration.maximumPacketSize <= H264Packetizer.largestPacketSize else {
            throw NetworkError(.tooLarge, "\(configuration.samplesPerPacket) samples a packet of at most \(configuration.maximumPacketSize) bytes: a sample frame (\(channels) bytes) or more, packets of \(RTPPacket.fixedHeaderSize + channels)–\(H264Packetizer.largestPacketSize) bytes")
        }
        guard configuration.payloadType < 128 else { throw NetworkError(.invalidHeader, "payload type \(configuration.payloadType): 0–127") }
        guard (1...192_000).contains(format.clockRate) else { throw NetworkError(.invalidHeader, "a clock rate of \(format.clockRate) Hz") }
        self.configuration = configuration
        var format = format
        format.payloadType = configuration.payloadType
        self.format = format
        nextSequenceNumber = configuration.initialSequenceNumber
    }

    /// The RTP clock rate: the sampling rate.
    public var clockRate: Int32 { Int32(format.clockRate) }

    /// The RTP timestamp of a presentation time: clock ticks plus the offset, modulo 2^32.
    public func timestamp(for time: MediaTime) -> UInt32 {
        configuration.timestampOffset &+ UInt32(truncatingIfNeeded: time.converted(toTimescale: clockRate).value)
    }

    /// The packets of one sample buffer of G.711 samples of this packetizer's law (a byte each
    /// per channel). A sample of another codec, or not a whole number of sample frames, is an
    /// error.
    public mutating func packets(for sample: SampleBuffer) throws(NetworkError) -> [RTPPacket] {
        guard let audio = sample.audioFormatDescription, audio.codec == format.law.codec else {
            throw NetworkError(.unsupported, "a \(sample.formatDescription.codecName) sample given to the \(format.law.rawValue) packetizer")
        }
        return try packets(samples: sample.data.bytes, timestamp: timestamp(for: sample.presentationTime))
    }

    /// The packets of a run of samples (a byte each per channel, interleaved) whose first
    /// sample is at `timestamp`.
    public mutating func packets(samples: [UInt8], timestamp: UInt32) throws(NetworkError) -> [RTPPacket] {
        let channels = max(1, format.channelCount)
        guard !samples.isEmpty, samples.count % channels == 0 else {
            throw NetworkError(.invalidPayload, "a run of \(samples.count) G.711 bytes: a whole number of \(channels)-byte sample frames, at least one")
        }
        let fit = (configuration.maximumPacketSize - RTPPacket.fixedHeaderSize) / channels
        let perPacket = min(configuration.samplesPerPacket, fit) * channels
        var packets: [RTPPacket] = []
        packets.reserveCapacity((samples.count + perPacket - 1) / perPacket)
        var offset = 0
        var time = timestamp
        while offset < samples.count {
            let end = min(samples.count, offset + perPacket)
            let marker = nextTimestamp.map { $0 != time } ?? true
            packets.append(RTPPacket(marker: marker, payloadType: configuration.payloadType, sequenceNumber: nextSequenceNumber, timestamp: time,
                                     ssrc: configuration.ssrc, payload: Array(samples[offset..<end])))
            nextSequenceNumber &+= 1
            packetCount += 1
            octetCount += end - offset
            time &+= UInt32((end - offset) / channels)
            nextTimestamp = time
            offset = end
        }
        return packets
    }
}
