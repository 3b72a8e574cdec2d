/// Gathers the sections of one PID from its packets' payloads: a `pointer_field` where a
/// section starts, sections across packets, several sections in a packet, `0xFF` stuffing
/// after the last. Bounded: a section is at most 4096 bytes (12-bit `section_length`).
struct SectionAssembler: Sendable {
    private var partial: [UInt8] = []
    private var collecting = false

    /// Drops a partly gathered section (a packet of the PID was lost).
    mutating func reset() {
        partial.removeAll(keepingCapacity: true)
        collecting = false
    }

    /// Takes a packet's payload; returns the sections it completes.
    mutating func append(payload: UnsafeRawBufferPointer, unitStart: Bool) -> [[UInt8]] {
        var sections: [[UInt8]] = []
        var offset = 0
        if unitStart {
            guard !payload.isEmpty else { return [] }
            let pointer = Int(payload[0])
            offset = 1
            if collecting {
                // The end of the section begun before, then the new ones.
                let end = min(payload.count, offset + pointer)
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: payload[offset..<end]).assumingMemoryBound(to: UInt8.self))
                if let section = completed() { sections.append(section) }
            }
            offset += pointer
            reset()
            collecting = true
        } else if !collecting {
            return []
        }
        while offset < payload.count {
            if partial.isEmpty && payload[offset] == 0xFF { collecting = false; break }  // stuffing
            let take = min(payload.count - offset, needed() ?? (3 - partial.count))
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: payload[offset..<(offset + take)]).assumingMemoryBound(to: UInt8.self))
            offset += take
            if let section = completed() {
                sections.append(section)
                partial.removeAll(keepingCapacity: true)
            }
        }
        return sections
    }

    /// Bytes still missing from the section, once its length is known.
    private func needed() -> Int? {
        guard partial.count >= 3 else { return nil }
        let length = Int(partial[1] & 0x0F) << 8 | Int(partial[2])
        return max(0, 3 + length - partial.count)
    }

    private func completed() -> [UInt8]? {
        guard let needed = needed(), needed == 0 else { return nil }
        return partial
    }
}
