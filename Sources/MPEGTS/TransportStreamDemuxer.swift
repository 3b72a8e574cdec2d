public import MediaCore
import Bitstream
/// The transport stream layer of a demuxer as a state machine: 188-byte packets in, tables, PES
/// packets and clock references out (ISO/IEC 13818-1 §2.4). No I/O: a reader feeds it what a
/// ``TransportPacketFramer`` cuts from a file or a pipe, a fuzzer feeds it anything.
///
/// It reads the PAT and every PMT it names (a new version replaces the old), picks the H.264
/// stream to gather (the first program in the PAT's order whose PMT has one, or the program
/// or PID asked for) and gathers that PID's PES packets, and those of the program's other
/// streams ``gathers`` asks for (its audio, say): a packet ends at the next
/// `payload_unit_start_indicator` or at its `PES_packet_length`. Continuity counters are
/// checked on every PID: a jump counts as an error and marks the PES packet being gathered
/// damaged, a `discontinuity_indicator` excuses it, and one repeated packet is dropped as the
/// duplicate the standard allows. Packets with the transport error indicator, scrambled
/// payloads and reserved adaptation field control are counted and left out. Every other PID is
/// counted, not gathered. Memory: one PES packet per gathered PID, capped by
/// ``Limits/maximumPESPacketSize``, and a section per table PID.
public struct TransportStreamDemuxer: Sendable {
    /// Caps for untrusted input.
    public struct Limits: Sendable, Hashable {
        /// The largest PES packet gathered: 64 MiB (a 4K intra picture is a few MB). A larger
        /// one is dropped and counted.
        public var maximumPESPacketSize: Int
        /// Problems kept in ``problems`` (all are counted in ``statistics``).
        public var maximumProblemsKept: Int

        /// The default caps.
        public init(maximumPESPacketSize: Int = 64 << 20, maximumProblemsKept: Int = 100) {
            self.maximumPESPacketSize = maximumPESPacketSize
            self.maximumProblemsKept = maximumProblemsKept
        }
    }

    /// Which of the program's streams are gathered besides the H.264 one.
    public enum Gathered: Sendable, Hashable {
        /// The H.264 stream alone.
        case video
        /// Every stream of the program that carries PES packets.
        case all
        /// Every stream of the program but those of these kinds.
        case allExcept(Set<MediaType>)
        /// The streams on these PIDs (of the program chosen).
        case pids(Set<UInt16>)

        func includes(_ stream: ProgramMapTable.ElementaryStream) -> Bool {
            guard stream.streamType.carriesPES else { return false }
            switch self {
            case .video: return false
            case .all: return true
            case .allExcept(let kinds): return !kinds.contains(stream.mediaType)
            case .pids(let pids): return pids.contains(stream.pid)
            }
        }
    }

    /// Which stream to gather.
    public enum Selection: Sendable, Hashable {
        /// The first H.264 stream of the first program (in the PAT's order) that has one.
        case firstH264
        /// The first H.264 stream of the program with this number.
        case program(UInt16)
        /// The stream on this PID, whatever the tables say.
        case pid(UInt16)
    }

    /// What a packet brought.
    public enum Event: Sendable {
        /// A program association table, new or of a new version.
        case programAssociation(ProgramAssociationTable)
        /// A program map table on `pid`, new or of a new version.
        case programMap(ProgramMapTable, pid: UInt16)
        /// The stream to gather was chosen (again, after a PMT changed it).
        case selected(pid: UInt16, program: UInt16?)
        /// A whole PES packet of the gathered stream.
        case pesPacket(PESPacket)
        /// A program clock reference on `pid` at the packet at `byteOffset`.
        case clockReference(ProgramClockReference, pid: UInt16, byteOffset: Int, discontinuity: Bool)
    }

    /// Counts of what the packets held.
    public struct Statistics: Sendable, Hashable {
        /// Packets taken.
        public var packets = 0
        /// Null packets (PID 0x1FFF).
        public var nullPackets = 0
        /// Continuity counter jumps (packets lost), outside discontinuities.
        public var continuityErrors = 0
        /// Repeated packets dropped.
        public var duplicatePackets = 0
        /// Packets with the transport error indicator set.
        public var transportErrors = 0
        /// Packets whose payload was scrambled.
        public var scrambledPackets = 0
        /// Packets with reserved adaptation field control or a broken adaptation field.
        public var invalidPackets = 0
        /// Discontinuity indicators seen.
        public var discontinuities = 0
        /// Table sections with a bad CRC or a broken structure.
        public var sectionErrors = 0
        /// PES packets of the gathered stream whose header was broken (dropped).
        public var pesHeaderErrors = 0
        /// PES packets of the gathered stream over the size cap (dropped).
        public var oversizedPESPackets = 0
        /// PES packets of the gathered stream handed over.
        public var pesPackets = 0
        /// Of those, packets that arrived damaged.
        public var damagedPESPackets = 0
        /// Bytes of the gathered stream outside any PES packet (before the first start, in a
        /// stream cut in the middle of one, or past a packet's `PES_packet_length`), left out.
        public var bytesOutsidePESPackets = 0
    }

    /// What the PIDs of a program map table carry, as the demuxer knows them.
    public struct PIDInfo: Sendable, Hashable {
        /// The PID.
        public var pid: UInt16
        /// Packets seen on it.
        public var packets: Int
        /// Its stream type, when a PMT lists it.
        public var streamType: StreamType?
        /// Program clock references seen on it.
        public var clockReferences: Int
    }

    /// Caps for untrusted input.
    public let limits: Limits
    /// Which stream to gather.
    public let selection: Selection
    /// Which other streams of the program to gather.
    public let gathers: Gathered
    /// The streams gathered, the H.264 one (if any) first, as the program's PMT lists them.
    public private(set) var gatheredStreams: [ProgramMapTable.ElementaryStream] = []
    /// Counts of what the packets held.
    public private(set) var statistics = Statistics()
    /// The first problems found (``Limits/maximumProblemsKept``), each with its place.
    public private(set) var problems: [TransportStreamError] = []
    /// The program association table in force.
    public private(set) var programAssociation: ProgramAssociationTable?
    /// The program map tables in force, by program number.
    public private(set) var programMaps: [UInt16: ProgramMapTable] = [:]
    /// The PID being gathered and its program, once chosen.
    public private(set) var selected: (pid: UInt16, program: UInt16?)?

    private enum Kind: UInt8 { case unknown, programAssociation, programMap, gathered }
    /// What the demuxer keeps of one PID (24 bytes: a packet reads and writes its PID's in one
    /// access).
    private struct PIDState {
        /// Packets.
        var packets = 0
        /// Program clock references.
        var clockReferences = 0
        /// The PID's place in `gatherings` (-1: not gathered).
        var slot: Int16 = -1
        /// The last continuity counter of a packet with a payload (0xFF: none yet).
        var counter: UInt8 = 0xFF
        /// What the PID carries.
        var kind = Kind.unknown
        /// Whether the last packet was a duplicate already.
        var duplicated = false
        /// A discontinuity indicator was seen since the last PES packet started.
        var discontinuityPending = false
    }
    /// Every PID's state, indexed by PID.
    private var states: [PIDState]
    private var sections: [UInt16: SectionAssembler] = [:]
    /// The PES packets being gathered, one per gathered PID.
    private var gatherings: [Gathering] = []
    private var events: [Event] = []
    private var eventStart = 0

    private struct Gathering {
        var pid: UInt16
        /// The size the PID's last PES packet reached: the next one reserves about that much.
        var lastSize = 64 << 10
        var bytes: [UInt8] = []
        var started = false
        var byteOffset = 0
        var packetCount = 0
        var damage: PESPacket.Damage?
        var randomAccess = false
        var discontinuity = false
        /// 6 + `PES_packet_length` once read (0: unbounded).
        var expected = -1
    }

    /// A demuxer that has seen nothing; it gathers the stream `selection` picks and the
    /// program's streams `gathers` asks for.
    public init(selection: Selection = .firstH264, gathers: Gathered = .video, limits: Limits = Limits()) {
        self.selection = selection
        self.gathers = gathers
        self.limits = limits
        let pids = Int(TransportPacketHeader.maximumPID) + 1
        states = [PIDState](repeating: PIDState(), count: pids)
        states[Int(TransportPacketHeader.programAssociationPID)].kind = .programAssociation
        if case .pid(let pid) = selection { select(pid: pid & TransportPacketHeader.maximumPID, program: nil) }
    }

    /// The next event, in the order the packets brought them.
    public mutating func nextEvent() -> Event? {
        guard eventStart < events.count else { return nil }
        let event = events[eventStart]
        eventStart += 1
        if eventStart == events.count {
            events.removeAll(keepingCapacity: true)
            eventStart = 0
        }
        return event
    }

    /// The PIDs seen, with their packet counts and the types the PMTs give them, by PID.
    public var pids: [PIDInfo] {
        var types: [UInt16: StreamType] = [:]
        for map in programMaps.values { for stream in map.streams { types[stream.pid] = stream.streamType } }
        return states.indices.compactMap { index in
            guard states[index].packets > 0 else { return nil }
            return PIDInfo(pid: UInt16(index), packets: states[index].packets, streamType: types[UInt16(index)], clockReferences: states[index].clockReferences)
        }
    }

    /// Takes one 188-byte packet whose sync byte is at `byteOffset` in the input.
    public mutating func consume(packet: UnsafeRawBufferPointer, at byteOffset: Int) {
        guard packet.count == TransportPacketHeader.packetSize, packet[0] == TransportPacketHeader.syncByte else {
            statistics.invalidPackets += 1
            return
        }
        statistics.packets += 1
        let b1 = packet[1], b3 = packet[3]
        let pid = UInt16(b1 & 0x1F) << 8 | UInt16(packet[2])
        let index = Int(pid)
        // The PID's state is read once and written back once (before anything else that may
        // change it: the tables, a gathering).
        var state = states[index]
        state.packets += 1
        if pid == TransportPacketHeader.nullPID {
            states[index] = state
            statistics.nullPackets += 1
            return
        }
        if b1 & 0x80 != 0 {
            // Nothing in the packet can be trusted, its PID least of all; a gathered PES packet
            // on that PID lost these bytes.
            states[index] = state
            statistics.transportErrors += 1
            if state.kind == .gathered { markDamaged(.transportError, pid: pid) }
            report(TransportStreamError(.invalidPacket, "transport error indicator set; packet left out", byteOffset: byteOffset, pid: pid))
            return
        }
        let control = (b3 >> 4) & 3
        guard control != 0 else {
            states[index] = state
            statistics.invalidPackets += 1
            report(TransportStreamError(.invalidPacket, "adaptation_field_control '00' (reserved); packet left out", byteOffset: byteOffset, pid: pid))
            return
        }
        var payloadStart = 4
        var discontinuity = false
        var randomAccess = false
        if control & 2 != 0 {
            let length = Int(packet[4])
            guard length <= (control == 2 ? 183 : 182) else {
                states[index] = state
                statistics.invalidPackets += 1
                report(TransportStreamError(.invalidPacket, "adaptation_field_length \(length) does not fit the packet", byteOffset: byteOffset, pid: pid))
                return
            }
            if length > 0 {
                let flags = packet[5]
                discontinuity = flags & 0x80 != 0
                randomAccess = flags & 0x40 != 0
                if flags & 0x10 != 0 {
                    if length >= 7 {
                        state.clockReferences += 1
                        events.append(.clockReference(ProgramClockReference(parsing: packet, at: 6), pid: pid, byteOffset: byteOffset, discontinuity: discontinuity))
                    } else {
                        statistics.invalidPackets += 1
                        report(TransportStreamError(.invalidPacket, "a PCR flagged in a \(length)-byte adaptation field", byteOffset: byteOffset, pid: pid))
                    }
                }
            }
            if discontinuity {
                statistics.discontinuities += 1
                state.discontinuityPending = true
            }
            payloadStart = 5 + length
        }
        guard control & 1 != 0 else {
            states[index] = state
            return
        }
        // Continuity: counted on packets with a payload.
        let counter = b3 & 0x0F
        let last = state.counter
        if last != 0xFF && !discontinuity {
            if counter == last {
                if !state.duplicated {
                    state.duplicated = true
                    states[index] = state
                    statistics.duplicatePackets += 1
                    return
                }
            } else if counter != (last &+ 1) & 0x0F {
                statistics.continuityErrors += 1
                let lost = (Int(counter) - Int(last) - 1 + 16) % 16
                report(TransportStreamError(.invalidPacket, "continuity counter \(counter) after \(last): \(lost == 0 ? "packets" : "\(lost) packet(s)") lost", byteOffset: byteOffset, pid: pid))
                switch state.kind {
                case .gathered: markDamaged(.packetsLost, pid: pid)
                case .programAssociation, .programMap: sections[pid]?.reset()
                case .unknown: break
                }
            }
        }
        state.duplicated = false
        state.counter = counter
        states[index] = state
        guard b3 & 0xC0 == 0 else {
            statistics.scrambledPackets += 1
            if state.kind == .gathered { markDamaged(.scrambled, pid: pid) }
            return
        }
        guard payloadStart < TransportPacketHeader.packetSize else { return }
        let payload = UnsafeRawBufferPointer(rebasing: packet[payloadStart...])
        let unitStart = b1 & 0x40 != 0
        switch state.kind {
        case .unknown:
            return
        case .gathered:
            // A PES packet starting takes the pending discontinuity.
            if unitStart && state.discontinuityPending { states[index].discontinuityPending = false }
            gather(payload, unitStart: unitStart, randomAccess: randomAccess, discontinuity: unitStart && state.discontinuityPending, pid: pid,
                   slot: Int(state.slot), at: byteOffset)
        case .programAssociation, .programMap:
            var assembler = sections[pid] ?? SectionAssembler()
            let complete = assembler.append(payload: payload, unitStart: unitStart)
            sections[pid] = assembler
            for section in complete { table(section, pid: pid, at: byteOffset) }
        }
    }

    /// Ends the input: the PES packet being gathered is handed over. `cutOff`: the input ended
    /// inside a transport packet, of this PID when its header came (nil: it did not); when that
    /// packet was the gathered PES packet's, or may have been, the PES packet lost its last bytes
    /// and is handed over damaged (``PESPacket/Damage/truncated(missing:)``, at least the rest of
    /// that packet), whatever its `PES_packet_length` says (0 for video: unbounded).
    public mutating func finish(cutOff: (bytesMissing: Int, pid: UInt16?)? = nil) {
        for gathering in gatherings {
            if let cutOff, cutOff.pid == nil || cutOff.pid == gathering.pid { markDamaged(.truncated(missing: cutOff.bytesMissing), pid: gathering.pid) }
            completeGathering(gathering.pid)
        }
    }

    // MARK: Tables

    private mutating func table(_ bytes: [UInt8], pid: UInt16, at byteOffset: Int) {
        let section: ProgramSpecificSection
        do { section = try ProgramSpecificSection(parsing: bytes) } catch {
            statistics.sectionErrors += 1
            report(error.placed(at: byteOffset, pid: pid))
            return
        }
        guard section.currentNextIndicator else { return }
        do {
            switch section.tableID {
            case ProgramAssociationTable.tableID where pid == TransportPacketHeader.programAssociationPID:
                let table = try ProgramAssociationTable(section: section)
                guard table != programAssociation else { return }
                programAssociation = table
                for otherPID in states.indices where states[otherPID].kind == .programMap { states[otherPID].kind = .unknown }
                for program in table.programs where states[Int(program.programMapPID)].kind != .gathered && program.programMapPID != 0 {
                    states[Int(program.programMapPID)].kind = .programMap
                }
                programMaps = programMaps.filter { number, _ in table.programs.contains { $0.programNumber == number } }
                events.append(.programAssociation(table))
            case ProgramMapTable.tableID:
                let table = try ProgramMapTable(section: section)
                guard programAssociation?.programs.contains(where: { $0.programNumber == table.programNumber && $0.programMapPID == pid }) ?? false else { return }
                guard programMaps[table.programNumber] != table else { return }
                programMaps[table.programNumber] = table
                events.append(.programMap(table, pid: pid))
                chooseStream()
            default:
                return
            }
        } catch {
            statistics.sectionErrors += 1
            report(error.placed(at: byteOffset, pid: pid))
        }
    }

    /// Picks (again) the streams to gather from the tables in force: the H.264 stream of the
    /// first program with one (or of the program asked for) and the program's other streams
    /// asked for; a program without H.264 is chosen for its other streams only when none has it.
    private mutating func chooseStream() {
        guard let association = programAssociation else { return }
        let candidates: [ProgramAssociationTable.Program]
        switch selection {
        case .pid: return
        case .firstH264: candidates = association.programs
        case .program(let number): candidates = association.programs.filter { $0.programNumber == number }
        }
        let maps = candidates.compactMap { programMaps[$0.programNumber] }
        guard let map = maps.first(where: { $0.streams.contains { $0.streamType == .h264 } })
                ?? (gathers == .video ? nil : maps.first(where: { $0.streams.contains { gathers.includes($0) } })) else { return }
        let streams = map.streams.filter { $0.streamType == .h264 }.prefix(1) + map.streams.filter { $0.streamType != .h264 && gathers.includes($0) }
        let pids = streams.map(\.pid)
        guard pids != gatheredStreams.map(\.pid) || selected?.program != map.programNumber else {
            gatheredStreams = Array(streams)
            return
        }
        gather(Array(streams), program: map.programNumber)
    }

    /// Gathers the PES packets of `streams` from now on (the first is the one ``selected``
    /// names); a PID no longer gathered hands its packet over and stops.
    private mutating func gather(_ streams: [ProgramMapTable.ElementaryStream], program: UInt16?) {
        let pids = Set(streams.map(\.pid))
        for gathering in gatherings where !pids.contains(gathering.pid) {
            completeGathering(gathering.pid)
            states[Int(gathering.pid)].kind = .unknown
        }
        gatherings.removeAll { !pids.contains($0.pid) }
        for stream in streams where !gatherings.contains(where: { $0.pid == stream.pid }) {
            gatherings.append(Gathering(pid: stream.pid))
            states[Int(stream.pid)].kind = .gathered
        }
        for index in states.indices { states[index].slot = -1 }
        for (slot, gathering) in gatherings.enumerated() { states[Int(gathering.pid)].slot = Int16(slot) }
        gatheredStreams = streams
        guard let first = streams.first else { return }
        selected = (first.pid, program)
        events.append(.selected(pid: first.pid, program: program))
    }

    private mutating func select(pid: UInt16, program: UInt16?) {
        gather([ProgramMapTable.ElementaryStream(streamType: .h264, pid: pid)], program: program)
    }

    // MARK: PES packets

    /// Adds a packet's payload to the PES packet gathered on `pid` (at `slot`); a unit start
    /// begins a new one, `discontinuity` when a discontinuity was flagged since the last.
    private mutating func gather(_ payload: UnsafeRawBufferPointer, unitStart: Bool, randomAccess: Bool, discontinuity: Bool, pid: UInt16, slot: Int,
                                 at byteOffset: Int) {
        guard slot >= 0 && slot < gatherings.count else { return }
        if unitStart {
            completeGathering(pid)
            gatherings[slot].started = true
            gatherings[slot].byteOffset = byteOffset
            gatherings[slot].randomAccess = randomAccess
            gatherings[slot].discontinuity = discontinuity
            // One allocation of about the last packet's size, in steps of 256 KiB for large
            // ones: the heap reuses freed buffers instead of fragmenting.
            let wanted = gatherings[slot].lastSize + gatherings[slot].lastSize / 4
            gatherings[slot].bytes.reserveCapacity(wanted > 65536 ? (wanted + 262143) / 262144 * 262144 : wanted)
        } else if !gatherings[slot].started {
            statistics.bytesOutsidePESPackets += payload.count
            return
        }
        // One access to the gathering (the per-packet path).
        let (count, expected) = gatherings.withUnsafeMutableBufferPointer { all in
            let gathering = all.baseAddress! + slot
            gathering.pointee.packetCount += 1
            gathering.pointee.bytes.append(contentsOf: payload.assumingMemoryBound(to: UInt8.self))
            let count = gathering.pointee.bytes.count
            if gathering.pointee.expected < 0 && count >= 6 {
                let length = Int(gathering.pointee.bytes[4]) << 8 | Int(gathering.pointee.bytes[5])
                gathering.pointee.expected = length == 0 ? 0 : 6 + length
            }
            return (count, gathering.pointee.expected)
        }
        if count > limits.maximumPESPacketSize {
            statistics.oversizedPESPackets += 1
            report(TransportStreamError(.limitExceeded, "a PES packet over \(limits.maximumPESPacketSize) bytes (the limit); dropped", byteOffset: gatherings[slot].byteOffset, pid: pid))
            gatherings[slot] = Gathering(pid: pid, lastSize: gatherings[slot].lastSize)
            return
        }
        if expected > 0 && count >= expected { completeGathering(pid) }
    }

    private mutating func markDamaged(_ damage: PESPacket.Damage, pid: UInt16) {
        let slot = Int(states[Int(pid)].slot)
        guard slot >= 0, gatherings[slot].started, gatherings[slot].damage == nil else { return }
        gatherings[slot].damage = damage
    }

    /// Hands the PES packet being gathered on `pid` over, if there is one.
    private mutating func completeGathering(_ pid: UInt16) {
        let slot = Int(states[Int(pid)].slot)
        guard slot >= 0, gatherings[slot].started else { return }
        var current = gatherings[slot]
        gatherings[slot] = Gathering(pid: pid, lastSize: current.bytes.count)
        let header: PESPacketHeader
        do {
            header = try current.bytes.withTypedBytes { (raw) throws(TransportStreamError) in
                guard let needed = PESPacketHeader.sizeNeeded(raw), raw.count >= needed else {
                    throw TransportStreamError(.invalidPES, raw.count >= 3 && raw[0] == 0 && raw[1] == 0 && raw[2] == 1
                                               ? "a PES header cut off after \(raw.count) bytes" : "no packet_start_code_prefix (00 00 01) where a PES packet starts")
                }
                return try PESPacketHeader(parsing: raw)
            }
        } catch {
            statistics.pesHeaderErrors += 1
            report(error.placed(at: current.byteOffset, pid: current.pid))
            return
        }
        var end = current.bytes.count
        if current.expected > 0 {
            if current.expected > end {
                if current.damage == nil { current.damage = .truncated(missing: current.expected - end) }
            } else {
                end = current.expected
            }
        }
        statistics.pesPackets += 1
        if current.damage != nil { statistics.damagedPESPackets += 1 }
        events.append(.pesPacket(PESPacket(pid: current.pid, header: header, bytes: current.bytes, payloadRange: min(header.headerSize, end)..<end,
                                           byteOffset: current.byteOffset, packetCount: current.packetCount, damage: current.damage,
                                           randomAccessIndicator: current.randomAccess, discontinuityIndicator: current.discontinuity)))
    }

    private mutating func report(_ problem: TransportStreamError) {
        if problems.count < limits.maximumProblemsKept { problems.append(problem) }
    }
}
