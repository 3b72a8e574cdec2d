import Bitstream
/// Cuts a byte stream that arrives in chunks into transport packets: finds the first run of
/// sync bytes, hands each 188-byte packet over with its offset (and, for M2TS, its arrival
/// time stamp), and after a lost sync byte (a byte flipped, bytes lost) hunts for the next run
/// of sync bytes one stride apart, counting what it skipped. The packets are those of the whole
/// stream however it is chunked; memory is a few packets.
public struct TransportPacketFramer: Sendable {
    /// The layout of the packets.
    public let layout: TransportPacketLayout
    /// Sync bytes in a row that end a hunt (fewer at the end of the stream).
    public static let resyncRun = 3

    /// Times the sync byte was missing where a packet was due (the first hunt, before any
    /// packet, not counted).
    public private(set) var syncLosses = 0
    /// Bytes skipped while hunting for sync, leading bytes before the first packet included.
    public private(set) var skippedBytes = 0
    /// Packets handed over.
    public private(set) var packetCount = 0
    /// Bytes taken in.
    public private(set) var bytesConsumed = 0
    /// The PID of a last packet the end of the stream cut off, when its header came whole
    /// enough to tell (set by ``finish(_:)``).
    public private(set) var cutOffPID: UInt16?

    /// Bytes of a unit in progress (a packet split across chunks), or of the hunt window.
    private var carry: [UInt8] = []
    /// Stream offset of `carry[0]` when hunting, or of the unit in `carry`.
    private var carryOffset = 0
    private var hunting = true
    /// The unit at the start of the hunt window is the one whose sync byte was missing.
    private var skipsFirstCandidate = false

    /// A framer for packets laid out as `layout`.
    public init(layout: TransportPacketLayout) {
        self.layout = layout
        carry.reserveCapacity(Self.resyncRun * layout.stride + layout.stride)
    }

    /// One packet: its 188 bytes (valid during the call), the stream offset of its sync byte,
    /// and the arrival time stamp of an M2TS packet (27 MHz, 30 bits).
    public typealias Handler<E: Error> = (_ packet: UnsafeRawBufferPointer, _ offset: Int, _ arrivalTime: UInt32?) throws(E) -> Void

    /// Takes the next chunk; `body` receives each packet now complete.
    public mutating func append<E: Error>(_ chunk: UnsafeRawBufferPointer, _ body: Handler<E>) throws(E) {
        var index = 0
        let unit = layout.stride
        let syncAt = layout.prefixSize
        defer { bytesConsumed += chunk.count }
        while index < chunk.count {
            if hunting {
                let window = Self.resyncRun * unit + unit
                let take = min(window - carry.count, chunk.count - index)
                if carry.isEmpty { carryOffset = bytesConsumed + index }
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[index..<(index + take)]).assumingMemoryBound(to: UInt8.self))
                index += take
                guard carry.count == window else { return }
                try hunt(final: false, body)
                continue
            }
            if !carry.isEmpty {
                // A unit begun in the last chunk.
                let take = min(unit - carry.count, chunk.count - index)
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[index..<(index + take)]).assumingMemoryBound(to: UInt8.self))
                index += take
                guard carry.count == unit else { return }
                let offset = carryOffset
                let synced = carry[syncAt] == TransportPacketHeader.syncByte
                if synced {
                    try carry.withTypedBytes { (raw) throws(E) in try emit(raw, at: offset, body) }
                    carry.removeAll(keepingCapacity: true)
                } else {
                    loseSync()  // the unit in `carry` starts the hunt window
                }
                continue
            }
            // Whole units straight from the chunk.
            while index + unit <= chunk.count {
                guard chunk[index + syncAt] == TransportPacketHeader.syncByte else { break }
                try emit(UnsafeRawBufferPointer(rebasing: chunk[index..<(index + unit)]), at: bytesConsumed + index, body)
                index += unit
            }
            if index + unit <= chunk.count {
                loseSync()
                carryOffset = bytesConsumed + index
                continue
            }
            carryOffset = bytesConsumed + index
            carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[index...]).assumingMemoryBound(to: UInt8.self))
            index = chunk.count
        }
    }

    /// Ends the stream: packets still in the hunt window are handed over; returns the bytes of
    /// a last packet cut off (0 when the stream ends on a packet boundary).
    public mutating func finish<E: Error>(_ body: Handler<E>) throws(E) -> Int {
        while hunting && carry.count >= layout.stride { try hunt(final: true, body) }
        let left = carry.count
        let sync = layout.prefixSize
        if !hunting, left > sync + 2, carry[sync] == TransportPacketHeader.syncByte {
            cutOffPID = UInt16(carry[sync + 1] & 0x1F) << 8 | UInt16(carry[sync + 2])
        }
        carry.removeAll()
        return left
    }

    private mutating func loseSync() {
        syncLosses += 1
        hunting = true
        skipsFirstCandidate = true
    }

    private func emitPacket<E: Error>(_ unit: UnsafeRawBufferPointer, at offset: Int, _ body: Handler<E>) throws(E) {
        let syncAt = layout.prefixSize
        var arrival: UInt32?
        if syncAt == 4 {
            arrival = (UInt32(unit[0]) << 24 | UInt32(unit[1]) << 16 | UInt32(unit[2]) << 8 | UInt32(unit[3])) & 0x3FFF_FFFF
        }
        try body(UnsafeRawBufferPointer(rebasing: unit[syncAt..<(syncAt + TransportPacketHeader.packetSize)]), offset + syncAt, arrival)
    }

    private mutating func emit<E: Error>(_ unit: UnsafeRawBufferPointer, at offset: Int, _ body: Handler<E>) throws(E) {
        packetCount += 1
        try emitPacket(unit, at: offset, body)
    }

    /// Looks for a run of sync bytes in the hunt window; on finding one, skips what is before
    /// it and hands over the packets of the window; else drops what cannot start a run.
    private mutating func hunt<E: Error>(final: Bool, _ body: Handler<E>) throws(E) {
        let unit = layout.stride
        let syncAt = layout.prefixSize
        let available = carry.count / unit
        let run = final ? max(1, min(Self.resyncRun, available)) : Self.resyncRun
        var found: Int?
        // A unit starts at `start`; its sync byte is `syncAt` later. (After a lost sync, the
        // unit that failed is not a candidate: the search starts one byte in.)
        let first = skipsFirstCandidate ? 1 : 0
        if carry.count - unit >= first {
            for start in first...(carry.count - unit) {
                var matches = true
                for packet in 0..<run {
                    let position = start + packet * unit + syncAt
                    if position >= carry.count { matches = packet > 0 && final; break }
                    if carry[position] != TransportPacketHeader.syncByte { matches = false; break }
                }
                if matches { found = start; break }
            }
        }
        guard let start = found else {
            // Keep the last unit's worth (a run may start there), drop the rest.
            let keep = final ? 0 : unit - 1
            let drop = carry.count - keep
            skippedBytes += drop
            carry.removeFirst(drop)
            carryOffset += drop
            skipsFirstCandidate = false
            return
        }
        skippedBytes += start
        hunting = false
        skipsFirstCandidate = false
        var position = start
        let base = carryOffset
        while position + unit <= carry.count, carry[position + syncAt] == TransportPacketHeader.syncByte {
            packetCount += 1
            try carry.withTypedBytes { (raw) throws(E) in try emitPacket(UnsafeRawBufferPointer(rebasing: raw[position..<(position + unit)]), at: base + position, body) }
            position += unit
        }
        carry.removeFirst(position)
        carryOffset = base + position
        if !carry.isEmpty && carry.count >= unit {
            // A sync byte missing again inside the window.
            loseSync()
        }
    }
}
