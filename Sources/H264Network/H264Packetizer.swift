public import MediaCore

/// The RTP payload format for H.264 (RFC 6184), sending side: the NAL units of each access
/// unit into RTP packets.
///
/// - Packetization mode 0 (§6.2): one NAL unit per packet; a NAL unit that does not fit the
///   packet size is an error naming its size.
/// - Packetization mode 1 (§6.3): single NAL unit packets, STAP-A aggregation (§5.7.1) of
///   consecutive NAL units that fit one packet together (parameter sets, SEI, small slices),
///   FU-A fragmentation (§5.8) of a NAL unit larger than the packet.
///
/// The RTP timestamp is the sample's presentation time on the 90 kHz clock plus a random
/// offset; the marker bit is set on the access unit's last packet; sequence numbers start at a
/// random value and wrap at 2^16 (RFC 3550 §5.1). A sync sample is preceded by the format
/// description's parameter sets, so that a receiver can join at any sync sample. A value type:
/// it holds the next sequence number.
public struct H264Packetizer: Sendable {
    /// How the packets are made.
    public struct Configuration: Sendable, Hashable {
        /// 0: single NAL unit mode; 1: non-interleaved mode (STAP-A and FU-A).
        public var packetizationMode: Int
        /// The largest RTP packet, header included (the path MTU less the IP and UDP headers;
        /// 1200 keeps clear of tunnels and VPNs, as WebRTC does).
        public var maximumPacketSize: Int
        /// The payload type (dynamic: 96–127).
        public var payloadType: UInt8
        /// The synchronization source.
        public var ssrc: UInt32
        /// The first sequence number.
        public var initialSequenceNumber: UInt16
        /// Added to every timestamp (RFC 3550: random, so that times say nothing of the source).
        public var timestampOffset: UInt32
        /// Send the format description's SPS and PPS before each sync sample.
        public var sendsParameterSetsAtSyncSamples: Bool

        /// A configuration; the SSRC, first sequence number and timestamp offset are random unless given.
        public init(packetizationMode: Int = 1, maximumPacketSize: Int = 1200, payloadType: UInt8 = 96, ssrc: UInt32? = nil,
                    initialSequenceNumber: UInt16? = nil, timestampOffset: UInt32? = nil, sendsParameterSetsAtSyncSamples: Bool = true) {
            self.packetizationMode = packetizationMode
            self.maximumPacketSize = maximumPacketSize
            self.payloadType = payloadType
            self.ssrc = ssrc ?? .random(in: .min ... .max)
            self.initialSequenceNumber = initialSequenceNumber ?? .random(in: .min ... .max)
            self.timestampOffset = timestampOffset ?? .random(in: .min ... .max)
            self.sendsParameterSetsAtSyncSamples = sendsParameterSetsAtSyncSamples
        }
    }

    /// The RTP clock rate of H.264 video (RFC 6184 §8.2.1).
    public static let clockRate: Int32 = 90_000
    /// The largest packet a UDP datagram carries over IPv4 (65,535 less the IP and UDP headers).
    public static let largestPacketSize = 65_507
    /// The smallest packet size: the RTP header, the FU indicator and header, one byte.
    public static let smallestPacketSize = RTPPacket.fixedHeaderSize + 3

    /// How the packets are made.
    public let configuration: Configuration
    /// The sequence number of the next packet.
    public private(set) var nextSequenceNumber: UInt16
    /// Packets made so far.
    public private(set) var packetCount = 0
    /// Payload bytes made so far (RTCP's sender octet count).
    public private(set) var octetCount = 0

    /// A packetizer; the configuration must have mode 0 or 1 and a packet size between
    /// ``smallestPacketSize`` and ``largestPacketSize``.
    public init(configuration: Configuration = Configuration()) throws(NetworkError) {
        guard (0...1).contains(configuration.packetizationMode) else {
            throw NetworkError(.unsupported, "packetization mode \(configuration.packetizationMode): 0 or 1 (mode 2, interleaved, is not supported)")
        }
        guard (Self.smallestPacketSize...Self.largestPacketSize).contains(configuration.maximumPacketSize) else {
            throw NetworkError(.tooLarge, "a packet size of \(configuration.maximumPacketSize) bytes: \(Self.smallestPacketSize)–\(Self.largestPacketSize)")
        }
        guard configuration.payloadType < 128 else { throw NetworkError(.invalidHeader, "payload type \(configuration.payloadType): 0–127") }
        self.configuration = configuration
        nextSequenceNumber = configuration.initialSequenceNumber
    }

    /// The RTP timestamp of a presentation time: 90 kHz ticks plus the offset, modulo 2^32.
    public func timestamp(for time: MediaTime) -> UInt32 {
        let ticks = time.converted(toTimescale: Self.clockRate).value
        return configuration.timestampOffset &+ UInt32(truncatingIfNeeded: ticks)
    }

    /// The packets of one access unit, in sending order.
    /// A sample that is not H.264 video is an error.
    public mutating func packets(for sample: SampleBuffer) throws(NetworkError) -> [RTPPacket] {
        guard let format = sample.videoFormatDescription else {
            throw NetworkError(.unsupported, "a \(sample.formatDescription.codecName) sample given to the H.264 packetizer")
        }
        var nalUnits: [[UInt8]] = []
        if sample.isSync, configuration.sendsParameterSetsAtSyncSamples {
            nalUnits += format.sequenceParameterSets + format.pictureParameterSets
        }
        do { nalUnits += try sample.nalUnits() } catch { throw NetworkError(.invalidPayload, "a sample does not frame its NAL units", cause: error) }
        return try packets(nalUnits: nalUnits, timestamp: timestamp(for: sample.presentationTime))
    }

    /// The packets of one access unit given as NAL units (header byte first, no start codes).
    public mutating func packets(nalUnits: [[UInt8]], timestamp: UInt32) throws(NetworkError) -> [RTPPacket] {
        let units = nalUnits.filter { !$0.isEmpty }
        // Types 0 and 24–31 are unspecified in H.264 and taken by the payload format (STAP, MTAP,
        // FU): sent as they are, a receiver would read them as packet structures.
        if let odd = units.first(where: { !(1...23).contains($0[0] & 0x1F) }) {
            throw NetworkError(.invalidPayload, "a NAL unit of type \(odd[0] & 0x1F): types 0 and 24–31 are not H.264 NAL units an encoder makes, and RFC 6184 uses them for its own packets")
        }
        let room = configuration.maximumPacketSize - RTPPacket.fixedHeaderSize
        var payloads: [[UInt8]] = []
        var index = 0
        while index < units.count {
            let unit = units[index]
            if unit.count > room {
                guard configuration.packetizationMode == 1 else {
                    throw NetworkError(.tooLarge, "a \(unit.count)-byte NAL unit does not fit a \(configuration.maximumPacketSize)-byte packet in packetization mode 0; use mode 1 (FU-A) or a packet size up to \(Self.largestPacketSize)")
                }
                payloads += Self.fragmentationUnits(unit, room: room)
                index += 1
                continue
            }
            // STAP-A: this unit and the following ones while they fit (one byte of STAP-A header,
            // two of size before each unit); a single unit goes alone.
            var end = index + 1
            var size = 1 + 2 + unit.count
            if configuration.packetizationMode == 1 {
                while end < units.count, size + 2 + units[end].count <= room { size += 2 + units[end].count; end += 1 }
            }
            if end - index == 1 {
                payloads.append(unit)
            } else {
                // F: any F bit set; NRI: the highest of the aggregated units (§5.7.1).
                let forbidden = units[index..<end].reduce(0) { $0 | $1[0] & 0x80 }
                let nri = units[index..<end].map { $0[0] & 0x60 }.max() ?? 0
                var payload = [forbidden | nri | 24]
                payload.reserveCapacity(size)
                for aggregated in units[index..<end] {
                    payload += [UInt8(aggregated.count >> 8), UInt8(aggregated.count & 0xFF)]
                    payload += aggregated
                }
                payloads.append(payload)
            }
            index = end
        }
        var packets: [RTPPacket] = []
        packets.reserveCapacity(payloads.count)
        for (number, payload) in payloads.enumerated() {
            packets.append(RTPPacket(marker: number == payloads.count - 1, payloadType: configuration.payloadType, sequenceNumber: nextSequenceNumber,
                                     timestamp: timestamp, ssrc: configuration.ssrc, payload: payload))
            nextSequenceNumber &+= 1
            packetCount += 1
            octetCount += payload.count
        }
        return packets
    }

    /// FU-A payloads of `unit` (§5.8): the FU indicator carries F and NRI with type 28, the FU
    /// header the start and end bits and the unit's type; the unit's header byte is not repeated.
    static func fragmentationUnits(_ unit: [UInt8], room: Int) -> [[UInt8]] {
        let indicator = unit[0] & 0xE0 | 28
        let type = unit[0] & 0x1F
        let chunk = room - 2
        var payloads: [[UInt8]] = []
        var offset = 1
        while offset < unit.count {
            let end = min(unit.count, offset + chunk)
            let header = (offset == 1 ? 0x80 : 0) | (end == unit.count ? 0x40 : 0) | type
            payloads.append([indicator, header] + unit[offset..<end])
            offset = end
        }
        return payloads
    }
}
