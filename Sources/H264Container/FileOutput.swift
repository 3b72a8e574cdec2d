import MediaCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file descriptor written through a buffer: large payloads go straight to `write(2)`, small
/// ones are gathered. Every failure (disk full, a closed pipe) is a ``ContainerError``.
final class FileOutput {
    let fd: Int32
    let path: String
    private let ownsDescriptor: Bool
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Bytes written so far, buffered ones included: the offset of the next byte.
    private(set) var position: UInt64 = 0

    static let bufferSize = 1 << 20

    init(fd: Int32, path: String, ownsDescriptor: Bool) {
        self.fd = fd
        self.path = path
        self.ownsDescriptor = ownsDescriptor
        buffer = .allocate(byteCount: Self.bufferSize, alignment: 64)
    }

    /// Creates `path` (which must not exist: a temporary name of ours), readable too when asked.
    convenience init(creating path: String, readable: Bool = false) throws(ContainerError) {
        let fd = open(path, (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .system("cannot create", path: path) }
        self.init(fd: fd, path: path, ownsDescriptor: true)
    }

    deinit {
        buffer.deallocate()
        if ownsDescriptor { close(fd) }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ContainerError) {
        position += UInt64(bytes.count)
        if used + bytes.count <= buffer.count {
            if !bytes.isEmpty { UnsafeMutableRawBufferPointer(rebasing: buffer[used...]).copyMemory(from: bytes) }
            used += bytes.count
            return
        }
        try flush()
        if bytes.count >= buffer.count / 2 {
            try writeAll(bytes)
        } else {
            UnsafeMutableRawBufferPointer(rebasing: buffer[0...]).copyMemory(from: bytes)
            used = bytes.count
        }
    }

    func write(_ bytes: [UInt8]) throws(ContainerError) {
        try bytes.span.withUnsafeBytes { (raw) throws(ContainerError) in try write(raw) }
    }

    /// Writes a block buffer. A large chained one (length prefixes between NAL units still in a
    /// mapped input) goes to `writev(2)` piece by piece, never through a copy.
    func write(_ data: BlockBuffer) throws(ContainerError) {
        if data.isContiguous || data.count < Self.bufferSize / 16 {
            try data.forEachSegment { (raw) throws(ContainerError) in try write(raw) }
            return
        }
        try flush()
        var pieces: [iovec] = []
        pieces.reserveCapacity(data.segmentCount)
        data.forEachSegment { raw in pieces.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count)) }
        // The pointers stay valid: `data` keeps its storage alive until this returns.
        try withExtendedLifetime(data) { () throws(ContainerError) in try writeAll(&pieces) }
        position += UInt64(data.count)
    }

    private func writeAll(_ pieces: inout [iovec]) throws(ContainerError) {
        var first = 0
        var written = 0
        while first < pieces.count {
            let n = pieces.withUnsafeBufferPointer { writev(fd, $0.baseAddress! + first, Int32(min(pieces.count - first, 1024))) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system("write failed after \(position + UInt64(written)) bytes", path: path)
            }
            written += n
            var left = n
            while first < pieces.count && left >= pieces[first].iov_len {
                left -= pieces[first].iov_len
                first += 1
            }
            if left > 0 {
                pieces[first].iov_base += left
                pieces[first].iov_len -= left
            }
        }
    }

    func flush() throws(ContainerError) {
        guard used > 0 else { return }
        let pending = UnsafeRawBufferPointer(rebasing: buffer[0..<used])
        used = 0
        try writeAll(pending)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(ContainerError) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw .system("write failed after \(position - UInt64(bytes.count - offset)) bytes", path: path)
            }
            offset += n
        }
    }

    /// Overwrites bytes already written (a box size), after flushing the buffer.
    func patch(_ bytes: [UInt8], at offset: UInt64) throws(ContainerError) {
        try flush()
        let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard n == bytes.count else { throw .system("cannot update the file at byte \(offset)", path: path) }
    }

    /// Accounts for bytes written to the descriptor directly (after a flush).
    func skipped(_ count: UInt64) {
        precondition(used == 0)
        position += count
    }

}
