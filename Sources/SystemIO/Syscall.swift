#if canImport(Glibc)
package import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import SystemPackage
import Dispatch

/// The one place system calls are retried on `EINTR` and their failures turned into `Errno`
/// (NIOPosix's `syscall(blocking:)` pattern): `body` returns the call's result, -1 on failure.
@inline(__always)
package func syscall<Result: FixedWidthInteger>(_ body: () -> Result) throws(Errno) -> Result {
    while true {
        let result = body()
        if result != -1 { return result }
        let code = Errno(rawValue: errno)
        if code != .interrupted { throw code }
    }
}

/// What `stat` says of a path or descriptor, as far as this package needs it.
package struct FileStatus: Sendable, Hashable {
    /// The file type (`st_mode & S_IFMT`).
    package enum Kind: Sendable, Hashable { case regular, directory, characterDevice, blockDevice, fifo, socket, other }
    /// What the path is: a regular file, a directory, a device, a FIFO, a socket.
    package var kind: Kind
    /// The size in bytes (`st_size`).
    package var size: Int

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFCHR: kind = .characterDevice
        case S_IFBLK: kind = .blockDevice
        case S_IFIFO: kind = .fifo
        case S_IFSOCK: kind = .socket
        default: kind = .other
        }
        size = Int(info.st_size)
    }

    /// The status of `path`, following links; nil when it does not exist.
    package static func of(path: String) throws(SystemError) -> FileStatus? {
        var info = stat()
        do {
            _ = try syscall { stat(path, &info) }
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw SystemError(.stat, path: path, errno: error)
        }
        return FileStatus(info)
    }

    /// The status of an open descriptor.
    package static func of(descriptor: FileDescriptor, path: String) throws(SystemError) -> FileStatus {
        var info = stat()
        do { _ = try syscall { fstat(descriptor.rawValue, &info) } } catch { throw SystemError(.stat, path: path, errno: error) }
        return FileStatus(info)
    }
}

extension FileDescriptor {
    /// Opens `path` with the given flags (`O_CLOEXEC` added).
    package static func opening(_ path: String, flags: Int32, permissions: mode_t = 0o644, operation: SystemError.Operation = .open) throws(SystemError) -> FileDescriptor {
        do {
            return FileDescriptor(rawValue: try syscall { Glibc.open(path, flags | O_CLOEXEC, permissions) })
        } catch {
            throw SystemError(operation, path: path, errno: error)
        }
    }

    /// Reads up to `buffer.count` bytes; 0 at the end of the file.
    package func readSome(into buffer: UnsafeMutableRawBufferPointer, path: String) throws(SystemError) -> Int {
        do { return try syscall { Glibc.read(rawValue, buffer.baseAddress, buffer.count) } } catch { throw SystemError(.read, path: path, errno: error) }
    }

    /// Reads up to `buffer.count` bytes at `offset`; 0 at the end of the file.
    package func readSome(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws(SystemError) -> Int {
        do { return try syscall { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) } } catch { throw SystemError(.read, path: path, errno: error) }
    }

    /// Writes all of `bytes`, resuming after short writes.
    package func writeAll(_ bytes: UnsafeRawBufferPointer, path: String) throws(SystemError) {
        var offset = 0
        while offset < bytes.count {
            do {
                offset += try syscall { Glibc.write(rawValue, bytes.baseAddress! + offset, bytes.count - offset) }
            } catch {
                throw SystemError(.write, path: path, errno: error)
            }
        }
    }

    /// Writes all of `bytes` at `offset`, resuming after short writes.
    package func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            do {
                done += try syscall { Glibc.pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done)) }
            } catch {
                throw SystemError(.write, path: path, errno: error)
            }
        }
    }

    /// Writes the pieces in order with `writev`, resuming after short writes. The pieces are
    /// consumed (their bases and lengths advance) as they are written.
    package func writeAll(_ pieces: inout [iovec], path: String) throws(SystemError) {
        var first = 0
        while first < pieces.count {
            let count = Int32(min(pieces.count - first, 1024))
            let written: Int
            do {
                written = try pieces.span.withUnsafeBufferPointer { (list) throws(Errno) in try syscall { Glibc.writev(rawValue, list.baseAddress! + first, count) } }
            } catch {
                throw SystemError(.write, path: path, errno: error)
            }
            var left = written
            while first < pieces.count && left >= pieces[first].iov_len {
                left -= pieces[first].iov_len
                first += 1
            }
            if left > 0 {
                pieces[first].iov_base += left
                pieces[first].iov_len -= left
            }
        }
        pieces.removeAll(keepingCapacity: true)
    }

    /// Closes the descriptor, reporting a failure (a write the kernel deferred can fail here).
    package func closeReporting(path: String) throws(SystemError) {
        // close(2) must not be retried on EINTR on Linux: the descriptor is gone either way.
        if Glibc.close(rawValue) != 0 { throw SystemError(.close, path: path, errno: Errno(rawValue: errno)) }
    }

    /// Closes the descriptor, ignoring failure (clean-up after another error).
    package func closeQuietly() { _ = Glibc.close(rawValue) }
}

/// Removes a file, ignoring a missing one.
package func removeFile(_ path: String) { unlink(path) }

/// Renames `source` over `destination` atomically.
package func renameFile(_ source: String, to destination: String) throws(SystemError) {
    do { _ = try syscall { rename(source, destination) } } catch { throw SystemError(.rename, path: destination, errno: error) }
}

/// The process id, for unique temporary names.
package var processID: Int32 { getpid() }

/// Raw descriptors for the writers that manage their own buffering.
package enum FileDescriptorHandle {
    /// Creates `path`, which must not exist (a temporary name), for reading and writing.
    package static func create(_ path: String) throws(SystemError) -> Int32 {
        try FileDescriptor.opening(path, flags: O_RDWR | O_CREAT | O_EXCL, operation: .create).rawValue
    }

    /// Creates or truncates `path` for writing in place.
    package static func truncate(_ path: String) throws(SystemError) -> Int32 {
        try FileDescriptor.opening(path, flags: O_WRONLY | O_CREAT | O_TRUNC, operation: .create).rawValue
    }
}

extension FileDescriptorHandle {
    /// Writes all of `bytes` at `offset` of raw descriptor `fd`.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String) throws(SystemError) {
        try FileDescriptor(rawValue: fd).writeAll(bytes, at: offset, path: path)
    }

    /// Reads up to `buffer.count` bytes at `offset` of raw descriptor `fd`.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws(SystemError) -> Int {
        try FileDescriptor(rawValue: fd).readSome(into: buffer, at: offset, path: path)
    }
}

/// Runs blocking work (a read from a pipe, a decode) on a dispatch queue and suspends until it
/// is done, so that it never holds one of Swift's cooperative threads: what the readers'
/// `AsyncSequence` iterators do.
package func offloaded<T, E: Error>(_ work: @escaping @Sendable () throws(E) -> sending T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
        DispatchQueue.global().async {
            do throws(E) { continuation.resume(returning: .success(try work())) } catch { continuation.resume(returning: .failure(error)) }
        }
    }
    return try result.get()
}

/// Writes text to standard error as it is (failures ignored: there is nowhere left to say so).
package func writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { raw in try? FileDescriptor.standardError.writeAll(UnsafeRawBufferPointer(raw), path: "stderr") }
}
