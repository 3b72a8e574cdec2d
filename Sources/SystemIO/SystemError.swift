package import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which operation, on which file, and the `errno` it set.
///
/// The library modules wrap it in their own error type (``ContainerError``, ``MediaIOError``, ...)
/// so that a caller sees one error type per module; the `errno` stays available as `Errno`.
package struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done.
    package enum Operation: String, Hashable, Sendable {
        case open = "cannot open"
        case create = "cannot create"
        case stat = "cannot stat"
        case map = "cannot map"
        case read = "read failed"
        case write = "write failed"
        case seek = "cannot seek"
        case rename = "cannot rename into place"
        case remove = "cannot remove"
        case close = "cannot close"
        case makeDirectory = "cannot create a directory"
        case allocate = "cannot allocate file space"
        case copy = "copying failed"
    }

    package var operation: Operation
    package var path: String
    package var errno: Errno

    package init(_ operation: Operation, path: String, errno: Errno) {
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

    package var description: String { "\(path): \(operation.rawValue): \(errno)" }
}
