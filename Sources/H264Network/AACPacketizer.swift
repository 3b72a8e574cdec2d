public import MediaCore

/// The RTP payload format for AAC (RFC 3640 `mpeg4-generic`, AAC-hbr mode), sending side: raw
/// AAC frames (one sample buffer each, as an MP4 or ADTS reader gives them) into RTP packets.
///
/// - Each packet starts with the AU-headers-length (16 bits, in bits) and one 16-bit AU-header
///   per frame: a 13-bit AU-size and a 3-bit AU-index (delta) of 0, frames in order (§3.3.6).
/// - Up to ``Configuration/maximumFramesPerPacket`` consecutive frames share a packet while
///   they fit (§3.1, §3.2.3); the packet's timestamp is its first frame's. With more than one, a
///   packet is sent when it is full or the next frame does not follow on in time; ``flush()``
///   sends what is pending at the end.
/// - A frame larger than a packet is fragmented (§3.2.3.1): each fragment has one AU-header
///   whose AU-size is the whole frame's, the same timestamp, and the marker bit on the last.
/// - The marker bit is set on every packet that ends a frame (§3.1).
///
/// The RTP clock is the sample rate the frames are timed in (``MPEG4GenericPayloadFormat``
/// says so in the SDP). A value type: it holds the next sequence number.
public struct AACPacketizer: Sendable {
    /// How the packets are made.
    public struct Configuration: Sendable, Hashable {
        /// The largest RTP packet, header included.
        public var maximumPacketSize: Int
        /// Frames in one packet at most (1: each frame leaves at once, the least delay, as
        /// GStreamer sends; ffmpeg gathers up to 50 within its delay).
        public var maximumFramesPerPacket: Int
        /// The payload type (dynamic: 96–127).
        public var payloadType: UInt8
        /// The synchronization source.
        public var ssrc: UInt32
        /// The first sequence number.
        public var initialSequenceNumber: UInt16
        /// Added to every timestamp (random unless given).
        public var timestampOffset: UInt32

        /// A configuration; the SSRC, first sequence number and timestamp offset are random unless given.
        public init(maximumPacketSize: Int = 1200, maximumFramesPerPacket: Int = 1, payloadType: UInt8 = 97, ssrc: UInt32? = nil,
                    initialSequenceNumber: UInt16? = nil, timestampOffset: UInt32? = nil) {
            self.maximumPacketSize = maximumPacketSize
            self.maximumFramesPerPacket = maximumFramesPerPacket
            self.payloadType = payloadType
            self.ssrc = ssrc ?? .random(in: .min ... .max)
            self.initialSequenceNumber = initialSequenceNumber ?? .random(in: .min ... .max)
            self.timestampOffset = timestampOffset ?? .random(in: .min ... .max)
        }
    }

    /// The largest frame an AAC-hbr AU-size (13 bits) can state.
    public static let largestFrameSize = (1 << 13) - 1
    /// The most frames in one packet (a bound of ours: the packet size bounds it before, at
    /// 2 bytes of header and at least 1 of frame each).
    public static let largestFrameCount = 64
    /// The smallest packet size: the RTP header, the AU-headers-length, one AU-header, one byte.
    public static let smallestPacketSize = RTPPacket.fixedHeaderSize + 5

    /// How the packets are made.
    public let configuration: Configuration
    /// The RTP clock rate: the frames' sample rate.
    public let clockRate: Int32
    /// The sequence number of the next packet.
    public private(set) var nextSequenceNumber: UInt16
    /// Packets made so far.
    public private(set) var packetCount = 0
    /// Payload bytes made so far (RTCP's sender octet count).
    public private(set) var octetCount = 0

    /// Frames waiting for their packet, and the timestamp of the first.
    private var pending: [[UInt8]] = []
    private var pendingTimestamp: UInt32 = 0
    /// Where the next frame must start to join the pending ones.
    private var pendingEnd: UInt32 = 0

    /// A packetizer of frames timed at `clockRate` Hz (the sample rate); the configuration's
    /// packet size must lie between ``smallestPacketSize`` and the largest UDP payload, its
    /// frames per packet between 1 and ``largestFrameCount``.
    public init(configuration: Configuration = Configuration(), clockRate: Int) throws(NetworkError) {
        guard (Self.smallestPacketSize...H264Packetizer.largestPacketSize).contains(configuration.maximumPacketSize) else {
            throw NetworkError(.tooLarge, "a packet size of \(configuration.maximumPacketSize) bytes: \(Self.smallestPacketSize)–\(H264Packetizer.largestPacketSize)")
        }
        guard (1...Self.largestFrameCount).contains(configuration.maximumFramesPerPacket) else {
            throw NetworkError(.invalidHeader, "\(configuration.maximumFramesPerPacket) frames per packet: 1–\(Self.largestFrameCount)")
        }
        guard configuration.payloadType < 128 else { throw NetworkError(.invalidHeader, "payload type \(configuration.payloadType): 0–127") }
        guard (1...1_000_000).contains(clockRate) else { throw NetworkError(.invalidHeader, "a clock rate of \(clockRate) Hz") }
        self.configuration = configuration
        self.clockRate = Int32(clockRate)
        nextSequenceNumber = configuration.initialSequenceNumber
    }

    /// The RTP timestamp of a presentation time: clock ticks plus the offset, modulo 2^32.
    public func timestamp(for time: MediaTime) -> UInt32 {
        configuration.timestampOffset &+ UInt32(truncatingIfNeeded: time.converted(toTimescale: clockRate).value)
    }

    /// The packets one AAC sample completes (none while it waits to share a packet). A sample
    /// that is not AAC audio, or larger than ``largestFrameSize``, is an error.
    public mutating func packets(for sample: SampleBuffer) throws(NetworkError) -> [RTPPacket] {
        guard let format = sample.audioFormatDescription, format.isAAC else {
            throw NetworkError(.unsupported, "a \(sample.formatDescription.codecName) sample given to the AAC packetizer")
        }
        let duration = UInt32(truncatingIfNeeded: sample.duration.converted(toTimescale: clockRate).value)
        return try packets(frame: sample.data.bytes, timestamp: timestamp(for: sample.presentationTime), duration: duration)
    }

    /// The packets one raw AAC frame (no ADTS header) completes; `duration` is its length in
    /// clock ticks (1024 for most AAC), the start of a frame that may follow it in a packet.
    public mutating func packets(frame: [UInt8], timestamp: UInt32, duration: UInt32) throws(NetworkError) -> [RTPPacket] {
        guard !frame.isEmpty else { throw NetworkError(.invalidPayload, "an empty AAC frame") }
        guard frame.count <= Self.largestFrameSize else {
            throw NetworkError(.tooLarge, "a \(frame.count)-byte AAC frame: AAC-hbr's 13-bit AU-size states at most \(Self.largestFrameSize)")
        }
        let room = configuration.maximumPacketSize - RTPPacket.fixedHeaderSize
        var packets: [RTPPacket] = []
        // The pending frames go first when this one does not follow on or does not fit beside them.
        if !pending.isEmpty, timestamp != pendingEnd || 2 + 2 * (pending.count + 1) + pending.reduce(frame.count, { $0 + $1.count }) > room {
            packets += flush()
        }
        if 2 + 2 + frame.count > room {
            // Fragments: one AU-header each, stating the whole frame's size.
            let chunk = room - 4
            var offset = 0
            while offset < frame.count {
                let end = min(frame.count, offset + chunk)
                packets.append(packet(payload: Self.auHeaderSection(sizes: [frame.count]) + frame[offset..<end], timestamp: timestamp, marker: end == frame.count))
                offset = end
            }
            return packets
        }
        if pending.isEmpty { pendingTimestamp = timestamp }
        pending.append(frame)
        pendingEnd = timestamp &+ duration
        if pending.count >= configuration.maximumFramesPerPacket { packets += flush() }
        return packets
    }

    /// The packet of the frames still waiting to share one (none if none wait).
    public mutating func flush() -> [RTPPacket] {
        guard !pending.isEmpty else { return [] }
        var payload = Self.auHeaderSection(sizes: pending.map(\.count))
        for frame in pending { payload += frame }
        pending = []
        return [packet(payload: payload, timestamp: pendingTimestamp, marker: true)]
    }

    /// The AU-headers-length and one AAC-hbr AU-header per size (index and deltas 0).
    static func auHeaderSection(sizes: [Int]) -> [UInt8] {
        let bits = 16 * sizes.count
        var section: [UInt8] = [UInt8(bits >> 8), UInt8(bits & 0xFF)]
        for size in sizes { section += [UInt8(size >> 5), UInt8((size & 0x1F) << 3)] }
        return section
    }

    private mutating func packet(payload: [UInt8], timestamp: UInt32, marker: Bool) -> RTPPacket {
        let packet = RTPPacket(marker: marker, payloadType: configuration.payloadType, sequenceNumber: nextSequenceNumber,
                               timestamp: timestamp, ssrc: configuration.ssrc, payload: payload)
        nextSequenceNumber &+= 1
        packetCount += 1
        octetCount += payload.count
        return packet
    }
}
