#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import SystemPackage
import CSystemShims
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
    static func opening(_ path: String, flags: Int32, permissions: mode_t = 0o644, operation: SystemError.Operation = .open) throws(SystemError) -> FileDescriptor {
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

/// Makes the directory `path` and any missing directory above it (`mkdir -p`); returns the
/// directories it made, outermost first, for a caller that removes them again on failure.
@discardableResult
package func makeDirectories(_ path: String) throws(SystemError) -> [String] {
    var made: [String] = []
    var prefix = path.hasPrefix("/") ? "/" : ""
    for component in path.split(separator: "/") {
        prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
        if let status = try FileStatus.of(path: prefix) {
            guard status.kind == .directory else { throw SystemError(.create, path: prefix, errno: .notDirectory) }
            continue
        }
        do { _ = try syscall { mkdir(prefix, 0o755) } } catch {
            if error != .fileExists { throw SystemError(.create, path: prefix, errno: error) }
        }
        made.append(prefix)
    }
    return made
}

/// Removes an empty directory, ignoring failure.
package func removeDirectory(_ path: String) { rmdir(path) }

/// Renames `source` over `destination` atomically.
package func renameFile(_ source: String, to destination: String) throws(SystemError) {
    do { _ = try syscall { rename(source, destination) } } catch { throw SystemError(.rename, path: destination, errno: error) }
}

/// The process id, for unique temporary names.
package var processID: Int32 { getpid() }

extension FileDescriptor {
    /// Creates `path`, which must not exist (a temporary name), for reading and writing.
    package static func creating(_ path: String) throws(SystemError) -> FileDescriptor {
        try FileDescriptor.opening(path, flags: O_RDWR | O_CREAT | O_EXCL, operation: .create)
    }

    /// Creates or truncates `path` for writing in place.
    package static func truncating(_ path: String) throws(SystemError) -> FileDescriptor {
        try FileDescriptor.opening(path, flags: O_WRONLY | O_CREAT | O_TRUNC, operation: .create)
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

extension FileDescriptor {
    /// Inserts `length` bytes of hole at `offset`, shifting the rest of the file up without
    /// copying it (`fallocate(FALLOC_FL_INSERT_RANGE)`, ext4 and XFS); both must be multiples of
    /// the file system's block size. Throws (`EOPNOTSUPP` where unsupported).
    package func insertRange(at offset: Int64, length: Int64, path: String) throws(SystemError) {
        do { _ = try syscall { csystem_insert_range(rawValue, off_t(offset), off_t(length)) } } catch {
            throw SystemError(.allocate, path: path, errno: error)
        }
    }

    /// Allocates the file's first `length` bytes on the disk now, without changing its size
    /// (`fallocate(FALLOC_FL_KEEP_SIZE)`), for a file about to be written that long: the file
    /// system then maps each page written into blocks it has already, instead of reserving and
    /// later allocating them page by page (measured with ext4 on a 600 MB remux: a third less
    /// kernel time). A hint: returns false where the file system cannot (tmpfs before 3.5, NFS,
    /// a full disk), and nothing changes. What the writes did not use stays allocated past
    /// the end until ``releaseSpacePastEnd(path:)``.
    @discardableResult
    package func reserve(_ length: Int64) -> Bool {
        length > 0 && csystem_reserve(rawValue, off_t(length)) == 0
    }

    /// Frees space allocated past the end of the file (by ``reserve(_:)``): truncates it to its
    /// own size.
    package func releaseSpacePastEnd(path: String) throws(SystemError) {
        let size = try FileStatus.of(descriptor: self, path: path).size
        do { _ = try syscall { ftruncate(rawValue, off_t(size)) } } catch { throw SystemError(.allocate, path: path, errno: error) }
    }

    /// Starts writing back `length` bytes at `offset` to the disk without waiting for them
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`): a hint, so failures are ignored.
    package func startWriteback(at offset: Int64, length: Int64) {
        _ = csystem_start_writeback(rawValue, off_t(offset), off_t(length))
    }

    /// Copies `count` bytes of `source` from `sourceOffset` to this descriptor at `offset`, in
    /// the kernel (`sendfile`); returns the bytes copied: fewer when the source ends first, or
    /// where the kernel cannot copy between these files (`EINVAL`, `ENOSYS`: the caller copies
    /// the rest itself).
    package func copy(_ count: Int64, from source: FileDescriptor, at sourceOffset: Int64, to offset: Int64, path: String) throws(SystemError) -> Int64 {
        do { _ = try syscall { Glibc.lseek(rawValue, off_t(offset), SEEK_SET) } } catch { throw SystemError(.seek, path: path, errno: error) }
        var inputOffset = off_t(sourceOffset)
        var copied: Int64 = 0
        while copied < count {
            let n: Int
            do { n = try syscall { sendfile(rawValue, source.rawValue, &inputOffset, Int(min(count - copied, 1 << 30))) } } catch {
                if error == .invalidArgument || error == .noFunction { break }
                throw SystemError(.copy, path: path, errno: error)
            }
            if n == 0 { break }
            copied += Int64(n)
        }
        return copied
    }
}

/// Raises this process's limit on open descriptors to the most it may have (the hard limit),
/// for a server that holds thousands of connections; a hint, failures ignored.
package func raiseDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}
