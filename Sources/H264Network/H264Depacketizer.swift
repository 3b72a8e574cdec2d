/// The RTP payload format for H.264 (RFC 6184), receiving side: a pure state machine from RTP
/// packets to whole access units (packets in, access units out; no sockets, no clocks).
///
/// A small jitter buffer puts packets back in sequence-number order (16-bit wrap included) and
/// drops duplicates; a gap it cannot wait out (more than ``Configuration/reorderDepth`` packets
/// held) is counted as loss. NAL units come from single NAL unit packets, STAP-A aggregates and
/// FU-A fragments (packetization modes 0 and 1). An access unit ends at the marker bit or at the
/// first packet of a new timestamp. An access unit touched by loss, or with a malformed payload,
/// is dropped and counted, never handed on as if whole; after it, and at the start, access units
/// are skipped until the next IDR picture so that decoding starts and resumes cleanly.
public struct H264Depacketizer: Sendable {
    /// How packets are taken.
    public struct Configuration: Sendable, Hashable {
        /// Packets held waiting for a missing one before it is declared lost.
        public var reorderDepth: Int
        /// Accept only this payload type (nil: any).
        public var payloadType: UInt8?
        /// Skip access units until an IDR picture at the start and after a dropped one.
        public var resumesAtSyncSample: Bool
        /// The largest access unit: bytes of NAL units, each unit charged 64 bytes more for
        /// holding it (so memory stays near the limit however small the units); a larger one is
        /// dropped as damaged.
        public var maximumAccessUnitSize: Int

        /// A configuration.
        public init(reorderDepth: Int = 64, payloadType: UInt8? = nil, resumesAtSyncSample: Bool = true, maximumAccessUnitSize: Int = 32 << 20) {
            self.reorderDepth = max(0, reorderDepth)
            self.payloadType = payloadType
            self.resumesAtSyncSample = resumesAtSyncSample
            self.maximumAccessUnitSize = maximumAccessUnitSize
        }
    }

    /// One access unit as it arrived.
    public struct AccessUnit: Sendable, Hashable {
        /// The RTP timestamp (90 kHz).
        public var timestamp: UInt32
        /// The timestamp counted from the first access unit's, wraps of 2^32 unfolded.
        public var extendedTimestamp: Int64
        /// The NAL units, header byte first, no start codes.
        public var nalUnits: [[UInt8]]
        /// Whether it holds an IDR picture's slices.
        public var isIDR: Bool

        /// An access unit (for a builder fed from elsewhere than a depacketizer).
        public init(timestamp: UInt32, extendedTimestamp: Int64, nalUnits: [[UInt8]], isIDR: Bool) {
            self.timestamp = timestamp
            self.extendedTimestamp = extendedTimestamp
            self.nalUnits = nalUnits
            self.isIDR = isIDR
        }
    }

    /// What the depacketizer has seen.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Packets taken (duplicates and late ones included).
        public var packetsReceived = 0
        /// Packets never received (sequence numbers skipped).
        public var packetsLost = 0
        /// Packets that arrived after a later-numbered one.
        public var packetsReordered = 0
        /// Packets received twice.
        public var packetsDuplicated = 0
        /// Packets that arrived after their place was given up (counted lost), then dropped.
        public var packetsLate = 0
        /// Packets that were not RTP or not H.264 of the expected payload type, or malformed.
        public var packetsInvalid = 0
        /// Access units handed on whole.
        public var accessUnitsComplete = 0
        /// Access units dropped because of loss or a malformed payload.
        public var accessUnitsDropped = 0
        /// Access units skipped while waiting for an IDR picture.
        public var accessUnitsSkipped = 0
        /// The highest sequence number received, extended past its wraps (RFC 3550 A.3).
        public var extendedHighestSequenceNumber: Int64 = 0
    }

    /// How packets are taken.
    public let configuration: Configuration
    /// What has been seen so far.
    public var statistics: Statistics {
        var statistics = counts
        let order = jitterBuffer.statistics
        statistics.packetsReceived = order.packetsReceived + wrongPayloadType
        statistics.packetsLost = order.packetsLost
        statistics.packetsReordered = order.packetsReordered
        statistics.packetsDuplicated = order.packetsDuplicated
        statistics.packetsLate = order.packetsLate
        statistics.packetsInvalid += order.packetsOutOfRange + wrongPayloadType
        statistics.extendedHighestSequenceNumber = order.extendedHighestSequenceNumber
        return statistics
    }

    /// The counts of the payload: malformed packets and access units.
    private var counts = Statistics()
    private var wrongPayloadType = 0
    private var jitterBuffer: RTPJitterBuffer
    private var current = Assembly()
    private var gapBeforeNext = false
    /// The timestamp of the access unit a one-packet gap interrupted (its marker packet, if the next one starts another).
    private var gapEndsUnit: UInt32?
    private var waitingForIDR: Bool
    private var lastTimestamp: UInt32?
    private var unfolded: Int64 = 0

    /// An access unit being put together.
    private struct Assembly {
        var timestamp: UInt32?
        var nalUnits: [[UInt8]] = []
        var size = 0
        var fragment: [UInt8]?
        var damaged = false
    }

    /// Whether access units are being skipped until the next IDR picture (after a loss, or
    /// at the start): the moment a receiver asks the sender for one (RTCP PLI, RFC 4585 §6.3.1).
    public var isWaitingForSyncSample: Bool { waitingForIDR }

    /// A depacketizer with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        jitterBuffer = RTPJitterBuffer(reorderDepth: configuration.reorderDepth)
        waitingForIDR = configuration.resumesAtSyncSample
    }

    /// Takes one datagram; returns the access units it completes, in order. A datagram that is
    /// not an RTP packet is counted and ignored.
    public mutating func receive(datagram: UnsafeRawBufferPointer) -> [AccessUnit] {
        do { return receive(try RTPPacket(parsing: datagram)) } catch {
            counts.packetsInvalid += 1
            return []
        }
    }

    /// Takes one packet; returns the access units it completes, in order.
    public mutating func receive(_ packet: RTPPacket) -> [AccessUnit] {
        if let expected = configuration.payloadType, packet.payloadType != expected {
            wrongPayloadType += 1
            return []
        }
        return take(jitterBuffer.insert(packet))
    }

    /// Packets held behind a missing one, waiting for it.
    public var heldPacketCount: Int { jitterBuffer.heldPacketCount }

    /// Gives up waiting for the missing packets before the held ones (they have been awaited
    /// long enough): counts them lost and goes on from the first held packet; returns the
    /// access units that completes.
    public mutating func skipMissing() -> [AccessUnit] { take(jitterBuffer.skipMissing()) }

    /// The end of the stream (RTCP BYE, a timeout): every held packet is taken, gaps counted as
    /// loss, and the last access unit handed on if it is whole.
    public mutating func finish() -> [AccessUnit] {
        var units = take(jitterBuffer.drain())
        endAccessUnit(into: &units)
        return units
    }

    /// The stream starts again (its sender restarted its numbering, or another source took
    /// over): what is held is ended as at ``finish()``, and the sequence state is forgotten,
    /// the counts kept. The next packet is taken as a first one, and access units are skipped
    /// until an IDR picture.
    public mutating func restart() -> [AccessUnit] {
        let units = finish()
        jitterBuffer.forgetSequence()
        gapBeforeNext = false
        gapEndsUnit = nil
        waitingForIDR = configuration.resumesAtSyncSample
        return units
    }

    private mutating func take(_ events: [RTPJitterBuffer.Event]) -> [AccessUnit] {
        var units: [AccessUnit] = []
        for event in events {
            switch event {
            case .packet(let packet): take(packet, into: &units)
            case .loss(let count): noteLoss(count)
            case .restart: endAccessUnit(into: &units)
            }
        }
        return units
    }

    /// Loss in the sequence of `count` packets: the access unit being assembled cannot be
    /// whole, and neither can the one the next packet continues or starts, unless the loss is
    /// one packet taken from an access unit whose marker never came and the next packet starts
    /// another (a new timestamp): then the lost packet was the marker packet (RFC 6184 §5.1:
    /// the marker is on an access unit's last packet), and the next access unit is whole.
    private mutating func noteLoss(_ count: Int) {
        gapEndsUnit = count == 1 ? current.timestamp : nil
        if current.timestamp != nil { current.damaged = true }
        current.fragment = nil
        gapBeforeNext = true
    }

    private mutating func take(_ packet: RTPPacket, into units: inout [AccessUnit]) {
        let afterGap = gapBeforeNext
        let lostMarkerOf = gapEndsUnit
        gapBeforeNext = false
        gapEndsUnit = nil
        if let timestamp = current.timestamp, timestamp != packet.timestamp {
            // A new timestamp without the previous marker: the previous access unit ended.
            endAccessUnit(into: &units)
        }
        if current.timestamp == nil {
            current.timestamp = packet.timestamp
            // The first packet after a gap may not be its access unit's first.
            if afterGap, lostMarkerOf == nil || lostMarkerOf == packet.timestamp || !Self.startsNALUnit(packet.payload) { current.damaged = true }
        }
        depayload(packet.payload)
        if packet.marker { endAccessUnit(into: &units) }
    }

    /// Whether a payload begins a NAL unit (a single NAL unit, an aggregation, an FU-A start).
    private static func startsNALUnit(_ payload: [UInt8]) -> Bool {
        guard let first = payload.first else { return false }
        switch first & 0x1F {
        case 1...23, 24: return true
        case 28: return payload.count > 1 && payload[1] & 0x80 != 0
        default: return false
        }
    }

    /// The NAL units of one payload (RFC 6184 §5.6–5.8) into the current access unit.
    private mutating func depayload(_ payload: [UInt8]) {
        guard let first = payload.first else { return malformed() }
        let type = first & 0x1F
        switch type {
        case 1...23:
            current.fragment = nil
            append(payload)
        case 24:  // STAP-A: 16-bit sizes, each unit within the payload
            var offset = 1
            while offset < payload.count {
                guard offset + 2 <= payload.count else { return malformed() }
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                offset += 2
                guard size > 0, offset + size <= payload.count else { return malformed() }
                // An aggregated unit is a NAL unit (types 1–23), never another packet type.
                guard (1...23).contains(payload[offset] & 0x1F) else { return malformed() }
                append(Array(payload[offset..<(offset + size)]))
                offset += size
            }
        case 28:  // FU-A
            guard payload.count >= 3 else { return malformed() }
            let header = payload[1]
            let start = header & 0x80 != 0, end = header & 0x40 != 0
            if start {
                if current.fragment != nil { current.damaged = true }  // the previous one never ended
                // A fragmented unit is a NAL unit (types 1–23), never another packet type.
                guard !end, (1...23).contains(header & 0x1F) else { return malformed() }
                current.fragment = [first & 0xE0 | header & 0x1F] + payload[2...]
            } else if current.fragment != nil {
                current.fragment! += payload[2...]
            } else {
                current.damaged = true  // a middle or end without its start: the start was lost
                return
            }
            if current.size + current.fragment!.count > configuration.maximumAccessUnitSize { current.damaged = true; current.fragment = nil; return }
            if end, let unit = current.fragment {
                current.fragment = nil
                append(unit)
            }
        default:  // STAP-B, MTAP16/24, FU-B (interleaved mode) and the reserved types
            malformed()
        }
    }

    private mutating func malformed() {
        counts.packetsInvalid += 1
        current.damaged = true
    }

    /// What one NAL unit held costs beyond its bytes (an array's header and allocation): a
    /// STAP-A of one-byte units would otherwise hold many times the limit.
    static let unitOverhead = 64

    /// The bound on ``AccessUnit/extendedTimestamp`` (2^61 ticks, some 800,000 years at 90 kHz):
    /// a sender whose every access unit jumps 2^31 ticks would otherwise overflow it, and the
    /// sums made from it, after 2^32 access units.
    static let extendedTimestampLimit: Int64 = 1 << 61

    private mutating func append(_ unit: [UInt8]) {
        current.size += unit.count + Self.unitOverhead
        guard current.size <= configuration.maximumAccessUnitSize else { current.damaged = true; return }
        if !current.damaged { current.nalUnits.append(unit) }
    }

    private mutating func endAccessUnit(into units: inout [AccessUnit]) {
        defer { current = Assembly() }
        guard let timestamp = current.timestamp else { return }
        if current.fragment != nil { current.damaged = true }
        if current.damaged || current.nalUnits.isEmpty {
            counts.accessUnitsDropped += 1
            waitingForIDR = configuration.resumesAtSyncSample
            return
        }
        let isIDR = current.nalUnits.contains { $0[0] & 0x1F == 5 }
        if waitingForIDR {
            guard isIDR else {
                counts.accessUnitsSkipped += 1
                return
            }
            waitingForIDR = false
        }
        if let lastTimestamp {
            let limit = Self.extendedTimestampLimit
            unfolded = min(max(unfolded + Int64(Int32(bitPattern: timestamp &- lastTimestamp)), -limit), limit)
        }
        lastTimestamp = timestamp
        counts.accessUnitsComplete += 1
        units.append(AccessUnit(timestamp: timestamp, extendedTimestamp: unfolded, nalUnits: current.nalUnits, isIDR: isIDR))
    }
}
