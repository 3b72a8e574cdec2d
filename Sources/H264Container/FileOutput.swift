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
