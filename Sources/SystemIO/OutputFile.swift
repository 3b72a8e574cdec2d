#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import SystemPackage

/// An output written under a temporary name beside its target and renamed into place by
/// ``commit()``, once: a reader never sees a half-written file, and an output that is never
/// committed (an error, a crash of the writer's owner) is removed.
///
/// `"-"` is standard output. An existing device or pipe (`/dev/null`, a FIFO) is written in
/// place and never renamed over; a directory is an error.
package final class OutputFile {
    /// The target path (`"-"` for standard output).
    package let path: String
    /// The descriptor written to: the temporary file's, or the target's when writing in place.
    package let descriptor: FileDescriptor
    /// The name written to until the commit; nil when writing in place.
    package let temporaryPath: String?
    private let ownsDescriptor: Bool
    private var committed = false
    /// Space was reserved past what gets written: freed at the commit.
    private var reserved = false

    /// Creates the output for `path`.
    /// - Parameter readable: open the temporary file for reading too (to copy it back).
    package init(path: String, readable: Bool = false) throws(SystemError) {
        self.path = path
        if path == "-" {
            descriptor = .standardOutput
            temporaryPath = nil
            ownsDescriptor = false
            return
        }
        if let status = try FileStatus.of(path: path), status.kind != .regular {
            guard status.kind != .directory else { throw SystemError(.create, path: path, errno: .isDirectory) }
            descriptor = try FileDescriptor.opening(path, flags: O_WRONLY)
            temporaryPath = nil
            ownsDescriptor = true
            return
        }
        let temporary = Self.temporaryName(for: path)
        descriptor = try FileDescriptor.opening(temporary, flags: (readable ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL, operation: .create)
        temporaryPath = temporary
        ownsDescriptor = true
    }

    /// A unique hidden name beside `path`: `.NAME.PID.RANDOM.partial`.
    package static func temporaryName(for path: String) -> String {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return "\(directory).\(name).\(processID).\(UInt32.random(in: 0...UInt32.max)).partial"
    }

    /// Whether the output is a regular file written under a temporary name (so it can seek,
    /// and it appears only when committed).
    package var isRegularFile: Bool { temporaryPath != nil }

    /// Allocates `length` bytes of disk for the file before it is written, when it is a
    /// regular file (a hint: see `FileDescriptor.reserve(_:)`); what was not written is freed
    /// at the commit, so an estimate a little over the size is right. Call before writing.
    package func reserve(_ length: Int64) {
        guard isRegularFile, !reserved else { return }
        reserved = descriptor.reserve(length)
    }

    /// Writes all of `bytes`.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try descriptor.writeAll(bytes, path: path)
    }

    /// Writes all of `bytes`.
    package func write(_ bytes: [UInt8]) throws(SystemError) {
        try bytes.span.withUnsafeBytes { (raw) throws(SystemError) in try write(raw) }
    }

    /// Writes every waiting piece in order with `writev`.
    package func write(_ pieces: inout GatheredWrites) throws(SystemError) {
        try pieces.write(pieces.count, to: descriptor, path: path)
    }

    /// Closes the file and renames it into place. Called once; afterwards the output is
    /// complete, and nothing is removed.
    package func commit() throws(SystemError) {
        precondition(!committed, "an output file is committed once")
        committed = true
        if reserved {
            do throws(SystemError) { try descriptor.releaseSpacePastEnd(path: temporaryPath ?? path) } catch {
                closeAndRemove()
                throw error
            }
        }
        if ownsDescriptor {
            do throws(SystemError) { try descriptor.closeReporting(path: path) } catch {
                if let temporaryPath { removeFile(temporaryPath) }
                throw error
            }
        }
        if let temporaryPath {
            do throws(SystemError) { try renameFile(temporaryPath, to: path) } catch {
                removeFile(temporaryPath)
                throw error
            }
        }
    }

    /// Commits by renaming another file of ours (one with the same temporary naming, say
    /// the media file of a faststart movie that became the whole movie) into place instead.
    package func commit(replacingWith other: String) throws(SystemError) {
        precondition(!committed, "an output file is committed once")
        committed = true
        if ownsDescriptor { descriptor.closeQuietly() }
        if let temporaryPath { removeFile(temporaryPath) }
        do throws(SystemError) { try renameFile(other, to: path) } catch {
            removeFile(other)
            throw error
        }
    }

    /// Gives up: the temporary file is removed (the owner's error stands).
    package func discard() {
        guard !committed else { return }
        committed = true
        closeAndRemove()
    }

    private func closeAndRemove() {
        if ownsDescriptor { descriptor.closeQuietly() }
        if let temporaryPath { removeFile(temporaryPath) }
    }

    deinit { discard() }
}
