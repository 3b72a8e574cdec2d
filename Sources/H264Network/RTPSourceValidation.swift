/// Which RTP packets belong to the stream being received, decided before any of them changes
/// the stream's state (RFC 3550 §8.2 and appendix A.1): a pure state machine, packets in and
/// verdicts out.
///
/// A source (an SSRC) is taken as the stream once ``Configuration/minimumSequential`` of its
/// packets in a row have come with consecutive sequence numbers, each a well-formed H.264
/// payload (RFC 6184), one of them the start of a NAL unit: until then its packets are held
/// (a bounded number), and handed on together when it is valid, so a stream's first packets
/// are not lost to the probation. From then on:
/// - packets of other SSRCs never touch the stream's state: they are counted apart
///   (``Statistics/packetsFromOtherSources``) and, if one of them becomes valid in its turn,
///   it replaces the stream only once the stream has been silent for
///   ``Configuration/sourceTimeout`` (a sender that restarted with a new SSRC);
/// - a sequence number more than ``Configuration/maximumDropout`` ahead or
///   ``Configuration/maximumMisorder`` behind is a bad jump, dropped and counted, unless the
///   next packet follows it: then the sender restarted its numbering, and the stream restarts
///   there (``Verdict/restart(_:)``);
/// - a packet that is not RTP, of another payload type, or whose H.264 payload is malformed
///   (an aggregate whose sizes run past its end, a fragment with an impossible header, a
///   reserved type) is counted and dropped before it changes anything.
///
/// With ``Configuration/expectedSSRC`` (an SDP's `a=ssrc`, an RTSP `Transport: ssrc=`), only
/// that source is ever the stream, and it needs no probation.
public struct RTPSourceValidation: Sendable {
    /// How packets are judged.
    public struct Configuration: Sendable, Hashable {
        /// Packets in sequence before a source is taken (RFC 3550's MIN_SEQUENTIAL, 2).
        public var minimumSequential: Int
        /// A jump ahead of more packets than this is a bad jump (MAX_DROPOUT, 3000).
        public var maximumDropout: Int
        /// A packet more than this many behind is a bad jump (MAX_MISORDER, 100).
        public var maximumMisorder: Int
        /// The only source to take, when the session description names it.
        public var expectedSSRC: UInt32?
        /// The only payload type to take (nil: any).
        public var payloadType: UInt8?
        /// Seconds the stream must have been silent before another valid source replaces it.
        public var sourceTimeout: Double
        /// Sources followed at once while none is the stream, or besides it (the oldest is
        /// forgotten past this).
        public var maximumCandidates: Int
        /// Packets held per source in probation (the oldest are dropped past this).
        public var maximumHeldPackets: Int
        /// Whether a payload must have the shape of H.264's (RFC 6184 §5.2-5.8: a NAL unit,
        /// an aggregation, a fragment); false for another payload format (AAC), whose packets
        /// need only a payload.
        public var checksH264PayloadShape = true

        /// RFC 3550's constants, a second of silence before a new source replaces the stream.
        public init(minimumSequential: Int = 2, maximumDropout: Int = 3000, maximumMisorder: Int = 100, expectedSSRC: UInt32? = nil,
                    payloadType: UInt8? = nil, sourceTimeout: Double = 1, maximumCandidates: Int = 8, maximumHeldPackets: Int = 64) {
            self.minimumSequential = max(1, minimumSequential)
            self.maximumDropout = max(1, maximumDropout)
            self.maximumMisorder = max(1, maximumMisorder)
            self.expectedSSRC = expectedSSRC
            self.payloadType = payloadType
            self.sourceTimeout = sourceTimeout
            self.maximumCandidates = max(1, maximumCandidates)
            self.maximumHeldPackets = max(1, maximumHeldPackets)
        }
    }

    /// What to do with a packet.
    public enum Verdict: Sendable, Hashable {
        /// Hand these on to the depacketizer, in order: the packet, or, when it made its source
        /// valid, the packets held in probation and then it.
        case accept([RTPPacket])
        /// The stream restarted here (a new sequence numbering, or a new source after the old
        /// one fell silent): end what the depacketizer holds, start again with these packets.
        case restart([RTPPacket])
        /// Dropped: kept in probation, from another source, malformed, or a bad jump (counted).
        case drop
    }

    /// What was decided, packet by packet.
    public struct Statistics: Sendable, Hashable, Codable {
        /// Packets handed on as the stream's.
        public var packetsAccepted = 0
        /// Datagrams that are not RTP version 2 (too short, another version, a header that
        /// does not fit).
        public var packetsUnparsable = 0
        /// Packets of another payload type than the one expected.
        public var packetsOfOtherPayloadTypes = 0
        /// Packets whose H.264 payload is malformed (RFC 6184).
        public var packetsMalformed = 0
        /// Packets of sources that are not the stream.
        public var packetsFromOtherSources = 0
        /// Packets of the stream's source with a sequence number far off (dropped).
        public var packetsWithBadSequence = 0
        /// Packets held in probation and then dropped (their source never became valid, or
        /// held past the bound).
        public var packetsDroppedInProbation = 0
        /// Times the stream restarted (new numbering, or a new source).
        public var restarts = 0
    }

    /// One source's A.1 state.
    struct Source: Sendable {
        var ssrc: UInt32
        var maximumSequence: UInt16
        var badSequence: UInt32 = 1 << 16 + 1  // (RTP_SEQ_MOD + 1: none)
        var probation: Int
        var startsNALUnit = false
        var held: [RTPPacket] = []
        var lastArrival: Double
    }

    /// How packets are judged.
    public let configuration: Configuration
    /// What was decided so far.
    public private(set) var statistics = Statistics()
    /// The stream's source, once one is valid.
    public private(set) var ssrc: UInt32?
    private var stream: Source?
    private var candidates: [Source] = []

    /// A validation with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Judges a datagram that arrived at `arrival` seconds (any monotonic origin).
    public mutating func admit(datagram: UnsafeRawBufferPointer, arrival: Double) -> Verdict {
        guard let packet = try? RTPPacket(parsing: datagram) else {
            statistics.packetsUnparsable += 1
            return .drop
        }
        return admit(packet, arrival: arrival)
    }

    /// Judges a parsed packet that arrived at `arrival` seconds.
    public mutating func admit(_ packet: RTPPacket, arrival: Double) -> Verdict {
        if let expected = configuration.payloadType, packet.payloadType != expected {
            statistics.packetsOfOtherPayloadTypes += 1
            return .drop
        }
        guard let shape = configuration.checksH264PayloadShape ? Self.payloadShape(packet.payload) : (packet.payload.isEmpty ? nil : .startsNALUnit) else {
            statistics.packetsMalformed += 1
            return .drop
        }
        if let expected = configuration.expectedSSRC, packet.ssrc != expected {
            statistics.packetsFromOtherSources += 1
            return .drop
        }
        if var current = stream, current.ssrc == packet.ssrc {
            let verdict = update(&current, with: packet, arrival: arrival)
            stream = current
            return verdict
        }
        return probe(packet, startsNALUnit: shape == .startsNALUnit, arrival: arrival)
    }

    // MARK: The stream's own packets (A.1 update_seq)

    private mutating func update(_ source: inout Source, with packet: RTPPacket, arrival: Double) -> Verdict {
        source.lastArrival = arrival
        let sequence = packet.sequenceNumber
        let delta = Int(sequence &- source.maximumSequence)  // (unsigned 16-bit difference)
        if delta < configuration.maximumDropout {
            // In order, with a permissible gap (the depacketizer counts the loss).
            source.maximumSequence = sequence
        } else if delta <= (1 << 16) - configuration.maximumMisorder {
            // A very large jump: a restart of the sender's numbering if the next packet follows.
            guard UInt32(sequence) == source.badSequence else {
                source.badSequence = (UInt32(sequence) + 1) & 0xFFFF
                statistics.packetsWithBadSequence += 1
                return .drop
            }
            source.maximumSequence = sequence
            source.badSequence = 1 << 16 + 1
            statistics.restarts += 1
            statistics.packetsAccepted += 1
            return .restart([packet])
        }
        // Else a duplicate or a packet shortly behind: the depacketizer places it.
        statistics.packetsAccepted += 1
        return .accept([packet])
    }

    // MARK: Sources in probation (A.1 init_seq, probation)

    private mutating func probe(_ packet: RTPPacket, startsNALUnit: Bool, arrival: Double) -> Verdict {
        // Packets are held only while there is no stream: a source that replaces a stream
        // gone silent starts with the packet that made it valid (the stream restarts anyway).
        let holding = stream == nil
        let index: Int
        if let found = candidates.firstIndex(where: { $0.ssrc == packet.ssrc }) {
            index = found
        } else {
            if candidates.count == configuration.maximumCandidates {
                statistics.packetsDroppedInProbation += candidates[0].held.count
                candidates.removeFirst()
            }
            candidates.append(Source(ssrc: packet.ssrc, maximumSequence: packet.sequenceNumber &- 1,
                                     probation: configuration.expectedSSRC == nil ? configuration.minimumSequential : 1, lastArrival: arrival))
            index = candidates.count - 1
        }
        var candidate = candidates[index]
        candidate.lastArrival = arrival
        if packet.sequenceNumber == candidate.maximumSequence &+ 1 {
            candidate.probation -= 1
        } else {
            // Out of sequence: probation starts again from this packet.
            statistics.packetsDroppedInProbation += candidate.held.count
            candidate.held.removeAll()
            candidate.probation = configuration.expectedSSRC == nil ? configuration.minimumSequential - 1 : 0
            candidate.startsNALUnit = false
        }
        candidate.maximumSequence = packet.sequenceNumber
        candidate.startsNALUnit = candidate.startsNALUnit || startsNALUnit
        if holding {
            candidate.held.append(packet)
            if candidate.held.count > configuration.maximumHeldPackets {
                candidate.held.removeFirst()
                statistics.packetsDroppedInProbation += 1
            }
        }
        let valid = candidate.probation <= 0 && candidate.startsNALUnit
        // A valid source replaces the stream only when the stream has fallen silent.
        if !valid || stream.map({ arrival - $0.lastArrival < configuration.sourceTimeout }) == true {
            candidates[index] = candidate
            if !holding { statistics.packetsFromOtherSources += 1 }
            return .drop
        }
        candidates.remove(at: index)
        let released = holding ? candidate.held : [packet]
        candidate.held = []
        // The other sources' held packets go nowhere now.
        for other in candidates.indices {
            statistics.packetsDroppedInProbation += candidates[other].held.count
            candidates[other].held = []
        }
        let replacing = stream != nil
        stream = candidate
        ssrc = candidate.ssrc
        statistics.packetsAccepted += released.count
        if replacing {
            statistics.restarts += 1
            return .restart(released)
        }
        return .accept(released)
    }

    // MARK: The payload's shape (RFC 6184 §5.2–5.8)

    enum PayloadShape { case startsNALUnit, continuesNALUnit }

    /// Whether a payload is well-formed H.264, and whether it begins a NAL unit; nil when it is
    /// malformed: empty, a reserved or interleaved-mode type, an aggregate whose sizes run
    /// past its end or hold a packet type, a fragment too short or with an impossible header.
    static func payloadShape(_ payload: [UInt8]) -> PayloadShape? {
        guard let first = payload.first, first & 0x80 == 0 else { return nil }  // forbidden_zero_bit
        switch first & 0x1F {
        case 1...23:
            return .startsNALUnit
        case 24:  // STAP-A
            var offset = 1
            guard payload.count > 3 else { return nil }
            while offset < payload.count {
                guard offset + 2 <= payload.count else { return nil }
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                offset += 2
                guard size > 0, offset + size <= payload.count, (1...23).contains(payload[offset] & 0x1F) else { return nil }
                offset += size
            }
            return .startsNALUnit
        case 28:  // FU-A
            guard payload.count >= 3 else { return nil }
            let header = payload[1]
            let start = header & 0x80 != 0, end = header & 0x40 != 0
            guard !(start && end), (1...23).contains(header & 0x1F) else { return nil }  // (R is ignored, §5.8)
            return start ? .startsNALUnit : .continuesNALUnit
        default:
            return nil
        }
    }
}
