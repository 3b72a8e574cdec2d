/// G.711 over RTP, receiving side (RFC 3551): a pure state machine from RTP packets to runs of
/// samples, each packet's payload one run timed at its RTP timestamp. Packets are put back in
/// order by an ``RTPJitterBuffer``; a lost packet leaves a gap in time (the next run keeps its
/// own timestamp), never a run of wrong samples. A payload that is not a whole number of
/// sample frames (one byte per channel) is cut to one.
public struct G711Depacketizer: Sendable {
    /// How packets are taken.
    public struct Configuration: Sendable, Hashable {
        /// The payload format from the session description.
        public var format: G711PayloadFormat
        /// Packets held waiting for a missing one before it is declared lost.
        public var reorderDepth: Int

        /// A configuration for `format`.
        public init(format: G711PayloadFormat, reorderDepth: Int = 64) {
            self.format = format
            self.reorderDepth = reorderDepth
        }
    }

    /// What the depacketizer has seen.
    public struct Statistics: Sendable, Hashable, Codable {
        /// The packets' order: received, lost, reordered, duplicated, late.
        public var packets = RTPJitterBuffer.Statistics()
        /// Packets of another payload type, or not RTP.
        public var packetsIgnored = 0
        /// Runs handed on (a packet each).
        public var runsComplete = 0
        /// Packets with no whole sample frame.
        public var packetsEmpty = 0

        /// Nothing seen.
        public init() {}
    }

    /// How packets are taken.
    public let configuration: Configuration
    /// What has been seen so far.
    public var statistics: Statistics {
        var statistics = counts
        statistics.packets = jitterBuffer.statistics
        return statistics
    }

    private var counts = Statistics()
    private var jitterBuffer: RTPJitterBuffer
    private var lastTimestamp: UInt32?
    private var unfolded: Int64 = 0

    /// A depacketizer with `configuration`.
    public init(configuration: Configuration) {
        self.configuration = configuration
        jitterBuffer = RTPJitterBuffer(reorderDepth: configuration.reorderDepth)
    }

    /// Packets held behind a missing one, waiting for it.
    public var heldPacketCount: Int { jitterBuffer.heldPacketCount }

    /// Takes one packet; returns the runs it completes, in order.
    public mutating func receive(_ packet: RTPPacket) -> [AACDepacketizer.Frame] {
        guard packet.payloadType == configuration.format.payloadType else {
            counts.packetsIgnored += 1
            return []
        }
        return take(jitterBuffer.insert(packet))
    }

    /// Gives up waiting for the packets missing before the held ones.
    public mutating func skipMissing() -> [AACDepacketizer.Frame] { take(jitterBuffer.skipMissing()) }

    /// The end of the stream: every held packet is taken.
    public mutating func finish() -> [AACDepacketizer.Frame] { take(jitterBuffer.drain()) }

    private mutating func take(_ events: [RTPJitterBuffer.Event]) -> [AACDepacketizer.Frame] {
        var runs: [AACDepacketizer.Frame] = []
        for event in events {
            guard case .packet(let packet) = event else { continue }
            let channels = max(1, configuration.format.channelCount)
            let count = packet.payload.count / channels * channels
            guard count > 0 else {
                counts.packetsEmpty += 1
                continue
            }
            // Timestamps unfolded from the first (wrapping at 2^32), as the other depacketizers do.
            if let last = lastTimestamp { unfolded = min(max(unfolded + Int64(Int32(bitPattern: packet.timestamp &- last)), -(1 << 61)), 1 << 61) }
            lastTimestamp = packet.timestamp
            counts.runsComplete += 1
            runs.append(AACDepacketizer.Frame(timestamp: packet.timestamp, extendedTimestamp: unfolded, bytes: Array(packet.payload.prefix(count))))
        }
        return runs
    }
}
