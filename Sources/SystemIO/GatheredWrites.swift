#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import SystemPackage

/// Bytes waiting to be written, as a list of pieces in file order (`iovec`s), written with
/// `writev` a part at a time: the gathered-write half of a buffered writer that references
/// large pieces rather than copying them. Pieces that are contiguous in memory are merged.
///
/// The caller keeps the memory each piece points into alive and unchanged until it is written.
package struct GatheredWrites {
    private var pieces: [iovec] = []
    /// Bytes waiting.
    package private(set) var count = 0

    /// An empty list.
    package init() {}

    /// Whether nothing waits.
    package var isEmpty: Bool { pieces.isEmpty }

    /// Adds `bytes` after the pieces already waiting (merged with the last when it ends where
    /// they begin).
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        if let last = pieces.last, last.iov_base.map({ UnsafeRawPointer($0) + last.iov_len }) == base {
            pieces[pieces.count - 1].iov_len += bytes.count
        } else {
            pieces.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: bytes.count))
        }
        count += bytes.count
    }

    /// Writes the first `byteCount` waiting bytes to `descriptor` with `writev` (at most 1024
    /// pieces a call, resumed after short writes; EINTR is retried by ``syscall(_:)``), and
    /// drops them from the list.
    package mutating func write(_ byteCount: Int, to descriptor: FileDescriptor, path: String) throws(SystemError) {
        var left = min(byteCount, count)
        while left > 0 {
            // The pieces that make up the next `left` bytes, the last one cut short.
            var last = 0, total = 0
            while last < pieces.count && last < 1024 && total < left { total += pieces[last].iov_len; last += 1 }
            let cut = max(0, total - left)
            pieces[last - 1].iov_len -= cut
            let written: Int
            do {
                written = try pieces.withUnsafeBufferPointer { (list) throws(Errno) in
                    try syscall { writev(descriptor.rawValue, list.baseAddress!, Int32(last)) }
                }
            } catch {
                pieces[last - 1].iov_len += cut
                throw SystemError(.write, path: path, errno: error)
            }
            pieces[last - 1].iov_len += cut
            // Drop what was written, then split the piece it ended in.
            var consumed = written
            var first = 0
            while first < pieces.count && consumed >= pieces[first].iov_len {
                consumed -= pieces[first].iov_len
                first += 1
            }
            pieces.removeFirst(first)
            if consumed > 0 {
                pieces[0].iov_base += consumed
                pieces[0].iov_len -= consumed
            }
            left -= written
            count -= written
        }
    }

    /// Whether any waiting piece points into `region`.
    package func references(_ region: UnsafeMutableRawBufferPointer) -> Bool {
        pieces.contains { Self.isIn($0, region) }
    }

    /// Moves the waiting pieces that point into `region` to its start, in order (they are in
    /// address order there, so each moves down), and returns the bytes of `region` they fill.
    package mutating func compact(into region: UnsafeMutableRawBufferPointer) -> Int {
        var target = 0
        for index in pieces.indices where Self.isIn(pieces[index], region) {
            let destination = region.baseAddress! + target
            if pieces[index].iov_base != destination { memmove(destination, pieces[index].iov_base, pieces[index].iov_len) }
            pieces[index].iov_base = destination
            target += pieces[index].iov_len
        }
        return target
    }

    private static func isIn(_ piece: iovec, _ region: UnsafeMutableRawBufferPointer) -> Bool {
        guard let base = piece.iov_base, let start = region.baseAddress else { return false }
        return base >= start && base < start + region.count
    }
}
