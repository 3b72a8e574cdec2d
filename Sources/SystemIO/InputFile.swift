#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import SystemPackage

/// An input read in chunks: standard input (`"-"`), a pipe, or any file that cannot be mapped.
package final class ChunkedInput {
    /// The input's name: its path, `"-"` for standard input, or the name given with a descriptor.
    package let path: String
    /// The descriptor read from.
    package let descriptor: FileDescriptor
    private let ownsDescriptor: Bool

    /// Opens `path` for reading; `"-"` reads standard input.
    package init(path: String) throws(SystemError) {
        self.path = path
        if path == "-" {
            descriptor = .standardInput
            ownsDescriptor = false
        } else {
            descriptor = try FileDescriptor.opening(path, flags: O_RDONLY)
            ownsDescriptor = true
        }
    }

    /// Reads a descriptor the caller owns (it is not closed here).
    package init(descriptor: FileDescriptor, name: String) {
        path = name
        self.descriptor = descriptor
        ownsDescriptor = false
    }

    deinit { if ownsDescriptor { descriptor.closeQuietly() } }

    /// Reads up to `buffer.count` bytes; 0 at the end.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try descriptor.readSome(into: buffer, path: path)
    }

    /// Fills `buffer` unless the input ends first; returns the bytes read.
    package func readFully(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { break }
            done += n
        }
        return done
    }
}

/// The first `count` bytes of a file (to tell a movie from an Annex-B stream), fewer if it is
/// shorter; read until `count` or the end (a pipe gives a little at a time).
package func filePrefix(_ path: String, count: Int = 16) throws(SystemError) -> [UInt8] {
    let descriptor = try FileDescriptor.opening(path, flags: O_RDONLY)
    defer { descriptor.closeQuietly() }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
    defer { buffer.deallocate() }
    var filled = 0
    while filled < count {
        let n = try descriptor.readSome(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]), path: path)
        if n == 0 { break }
        filled += n
    }
    return Array(buffer.prefix(filled))
}

/// A whole (small) file's bytes.
package func readWholeFile(_ path: String) throws(SystemError) -> [UInt8] {
    let input = try ChunkedInput(path: path)
    var result: [UInt8] = []
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    defer { chunk.deallocate() }
    while true {
        let n = try input.read(into: chunk)
        if n == 0 { return result }
        result += chunk[..<n]
    }
}

/// A directory under `$TMPDIR` (or /tmp), removed with the files in it when this goes away.
package final class TemporaryDirectory {
    /// The directory's path.
    package let path: String

    /// Creates `$TMPDIR/PREFIX-XXXXXX` (`mkdtemp`), or under /tmp when `TMPDIR` is unset or empty.
    package init(prefix: String = "h264kit") throws(SystemError) {
        let environment = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        let base = environment.isEmpty ? "/tmp" : environment
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw SystemError(.makeDirectory, path: base, errno: Errno(rawValue: errno))
        }
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
    }
}
