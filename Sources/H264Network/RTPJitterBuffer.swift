/// The receiving side's packet order (RFC 3550 §A.1, A.3): packets back in sequence-number
/// order (16-bit wrap included), duplicates and hopelessly late packets dropped, a gap it cannot
/// wait out (more than ``reorderDepth`` packets held) counted as loss, a sender that restarted
/// its numbering taken up once a second packet confirms it. A pure state machine: packets in,
/// ``Event``s out, for the payload format's depacketizer (H.264, AAC, ...) to turn into units.
public struct RTPJitterBuffer: Sendable {
    /// What the buffer hands on, in order.
    public enum Event: Sendable, Hashable {
        /// The next packet in sequence.
        case packet(RTPPacket)
        /// `count` packets (sequence numbers) never came before the next event's packet.
        case loss(count: Int)
        /// The sender restarted its numbering: everything before was handed on; what is being
        /// assembled ends here.
        case restart
    }

    /// What the buffer has seen.
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
        /// Packets far behind the others, held on probation as a possible restart, and dropped.
        public var packetsOutOfRange = 0
        /// The highest sequence number received, extended past its wraps (RFC 3550 A.3).
        public var extendedHighestSequenceNumber: Int64 = 0

        /// No packets seen.
        public init() {}
    }

    /// Packets held waiting for a missing one before it is declared lost.
    public let reorderDepth: Int
    /// What has been seen so far.
    public private(set) var statistics = Statistics()

    private var held: [Int64: RTPPacket] = [:]
    private var nextExpected: Int64?
    private var highest: Int64?
    /// Sequence numbers taken recently (to tell a duplicate from a late packet).
    private var taken: Set<Int64> = []
    /// A packet far behind the others: a restarted sender, confirmed when the next one follows it.
    private var probation: Int64?

    /// How far behind the expected sequence number a packet is taken as a sender's restart
    /// rather than a late one (RFC 3550 A.1's MAX_MISORDER).
    static let maximumMisorder: Int64 = 100

    /// A buffer that holds up to `reorderDepth` packets behind a missing one (0: none, a gap
    /// is loss at once).
    public init(reorderDepth: Int = 64) {
        self.reorderDepth = max(0, reorderDepth)
    }

    /// Packets held behind a missing one, waiting for it.
    public var heldPacketCount: Int { held.count }

    /// Takes one packet; returns what it releases, in order.
    public mutating func insert(_ packet: RTPPacket) -> [Event] {
        statistics.packetsReceived += 1
        let sequence = extend(packet.sequenceNumber)
        if let next = nextExpected, sequence < next {
            if taken.contains(sequence) {
                statistics.packetsDuplicated += 1
                return []
            }
            guard sequence < next - Self.maximumMisorder else {
                statistics.packetsLate += 1
                return []
            }
            // Far behind: a sender that restarted its numbering, once a second packet follows.
            guard probation == sequence else {
                probation = sequence + 1
                statistics.packetsOutOfRange += 1
                return []
            }
            probation = nil
            var events = drain()
            events.append(.restart)
            forgetSequence()
            return events + insertInSequence(packet, sequence: Int64(packet.sequenceNumber))
        }
        probation = nil
        return insertInSequence(packet, sequence: sequence)
    }

    /// Gives up waiting for the missing packets before the held ones (they have been awaited
    /// long enough): counts them lost and goes on from the first held packet.
    public mutating func skipMissing() -> [Event] {
        guard let first = held.keys.min(), let next = nextExpected, first > next else { return [] }
        var events: [Event] = []
        skip(to: first, into: &events)
        release(into: &events)
        return events
    }

    /// The end of the stream (RTCP BYE, a timeout): every held packet is released, the gaps
    /// between them counted as loss.
    public mutating func drain() -> [Event] {
        var events: [Event] = []
        while let first = held.keys.min() {
            if let next = nextExpected, first > next { skip(to: first, into: &events) }
            nextExpected = first
            release(into: &events)
        }
        return events
    }

    /// Forgets the sequence (a new source, a restart the caller knows of): the next packet is
    /// taken as a first one; the counts are kept. Held packets are dropped: ``drain()`` first
    /// to keep them.
    public mutating func forgetSequence() {
        held = [:]
        taken = []
        highest = nil
        nextExpected = nil
        probation = nil
    }

    private mutating func insertInSequence(_ packet: RTPPacket, sequence: Int64) -> [Event] {
        guard held[sequence] == nil else {
            statistics.packetsDuplicated += 1
            return []
        }
        if let highest, sequence < highest { statistics.packetsReordered += 1 }
        highest = max(highest ?? sequence, sequence)
        statistics.extendedHighestSequenceNumber = highest ?? 0
        if nextExpected == nil { nextExpected = sequence }
        held[sequence] = packet
        var events: [Event] = []
        release(into: &events)
        if taken.count > 4 * Int(Self.maximumMisorder) + 2 * reorderDepth, let next = nextExpected {
            taken = taken.filter { $0 >= next - 2 * Self.maximumMisorder }
        }
        while held.count > reorderDepth, let first = held.keys.min() {
            // The missing packets are not coming: count them lost, go on from the next held one.
            skip(to: first, into: &events)
            release(into: &events)
        }
        return events
    }

    private mutating func skip(to sequence: Int64, into events: inout [Event]) {
        guard let next = nextExpected, sequence > next else { return }
        let lost = Int(sequence - next)
        statistics.packetsLost += lost
        nextExpected = sequence
        events.append(.loss(count: lost))
    }

    /// The packet's sequence number extended to 64 bits: the candidate nearest the highest seen.
    private func extend(_ sequence: UInt16) -> Int64 {
        guard let reference = highest else { return Int64(sequence) }
        let delta = Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: reference)))
        return reference + delta
    }

    private mutating func release(into events: inout [Event]) {
        while let next = nextExpected, let packet = held.removeValue(forKey: next) {
            nextExpected = next + 1
            taken.insert(next)
            events.append(.packet(packet))
        }
    }
}
