import MediaCore
import SystemIO

/// Buffers for fragments' sample bytes, used again once the caller lets a fragment go: memory
/// that is written again rather than fresh pages faulted in for every fragment. A buffer comes
/// back through the deallocator of the `BlockBuffer` that hands it out; the pool keeps a few.
final class ByteBufferPool: Sendable {
    private let free = Locked<[UnsafeMutableRawBufferPointer]>([])
    /// Buffers kept for reuse at the most.
    static let kept = 3

    deinit { free.withLock { buffers in for buffer in buffers { buffer.deallocate() } } }

    /// A buffer of at least `capacity` bytes: a kept one when one is large enough.
    func take(capacity: Int) -> UnsafeMutableRawBufferPointer {
        if let buffer = free.withLock({ buffers -> UnsafeMutableRawBufferPointer? in
            guard let index = buffers.firstIndex(where: { $0.count >= capacity }) else { return nil }
            return buffers.remove(at: index)
        }) {
            return buffer
        }
        return .allocate(byteCount: max(capacity, 1 << 16), alignment: 16)
    }

    /// Takes a buffer back (the largest few are kept).
    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        let dropped = free.withLock { buffers -> UnsafeMutableRawBufferPointer? in
            buffers.append(buffer)
            guard buffers.count > Self.kept, let smallest = buffers.indices.min(by: { buffers[$0].count < buffers[$1].count }) else { return nil }
            return buffers.remove(at: smallest)
        }
        dropped?.deallocate()
    }

    /// `count` bytes of `buffer` as a block buffer that gives the buffer back when let go.
    func handOut(_ buffer: UnsafeMutableRawBufferPointer, count: Int) -> BlockBuffer {
        // (The buffer crosses into the deallocator as its address and size, which are Sendable.)
        let address = UInt(bitPattern: buffer.baseAddress), capacity = buffer.count
        return BlockBuffer(referencing: UnsafeRawBufferPointer(rebasing: buffer[..<count])) { [self] _ in
            give(UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(bitPattern: address), count: capacity))
        }
    }
}
