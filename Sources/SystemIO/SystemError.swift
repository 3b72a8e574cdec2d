public import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which operation, on which file, and the `errno` it set.
///
/// The library modules' errors carry it as their cause (`ContainerError/systemError`,
/// `MediaIOError/systemError`, `SampleFlowError/file(_:)`, ...), so that a caller sees one error
/// type per module and can still tell a full disk (`Errno.noSpace`) from a missing file.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done.
    public enum Operation: String, Hashable, Sendable {
        /// Opening a file (`open`).
        case open = "cannot open"
        /// Creating a file (`open` with `O_CREAT`).
        case create = "cannot create"
        /// Reading a file's status (`stat`, `fstat`).
        case stat = "cannot stat"
        /// Mapping a file (`mmap`), or refusing one that cannot be mapped.
        case map = "cannot map"
        /// Reading (`read`, `pread`).
        case read = "read failed"
        /// Writing (`write`, `pwrite`, `writev`).
        case write = "write failed"
        /// Seeking (`lseek`).
        case seek = "cannot seek"
        /// Renaming a finished file into place (`rename`).
        case rename = "cannot rename into place"
        /// Removing a file.
        case remove = "cannot remove"
        /// Closing a descriptor (`close`), where a deferred write can fail.
        case close = "cannot close"
        /// Creating a directory (`mkdtemp`).
        case makeDirectory = "cannot create a directory"
        /// Reserving space in a file.
        case allocate = "cannot allocate file space"
        /// Copying one file into another (`sendfile`).
        case copy = "copying failed"
        /// Starting a child process (`posix_spawn`) or waiting for it (`waitpid`).
        case spawn = "cannot run"
    }

    /// What was being done.
    public var operation: Operation
    /// The file it was done to.
    public var path: String
    /// The error the call set.
    public var errno: Errno

    /// An error of `operation` on `path` with `errno`.
    public init(_ operation: Operation, path: String, errno: Errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// The error the last failed call left in `errno`.
    package static func last(_ operation: Operation, path: String) -> SystemError {
        SystemError(operation, path: path, errno: Errno(rawValue: Glibc.errno))
    }

    /// A mapping refused because the file is empty.
    package var isEmptyFile: Bool { operation == .map && errno == .noData }
    /// A mapping refused because the path is not a regular file (a pipe, a device, a directory).
    package var isNotRegularFile: Bool { operation == .map && errno == .invalidArgument }

    /// Reads like `in.264: cannot open: No such file or directory`.
    public var description: String { "\(path): \(operation.rawValue): \(errno)" }
}
