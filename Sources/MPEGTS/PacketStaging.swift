/// Bytes a muxer gathers before they are handed on: one growable region written through raw
/// pointers, a packet at a time, without the per-byte bookkeeping of an array. Owned by one
/// muxer; a copied muxer copies it before writing (``copy()``).
final class PacketStaging: @unchecked Sendable {  // written only by its one owner, which copies it first when shared
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        base = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// A copy of the bytes gathered.
    func copy() -> PacketStaging {
        let other = PacketStaging(capacity: max(capacity, 1))
        other.base.copyMemory(from: base, byteCount: count)
        other.count = count
        return other
    }

    /// The bytes gathered.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Room for `extra` more bytes; returns where they go.
    @inline(__always)
    func reserve(_ extra: Int) -> UnsafeMutableRawPointer {
        if count + extra > capacity {
            let grown = max(capacity * 2, count + extra)
            let bigger = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            bigger.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = bigger
            capacity = grown
        }
        return base + count
    }

    /// Marks `written` bytes after the end as gathered.
    @inline(__always)
    func commit(_ written: Int) { count += written }

    /// Appends bytes.
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    /// Forgets what was gathered, keeping the room.
    func reset() { count = 0 }
}
