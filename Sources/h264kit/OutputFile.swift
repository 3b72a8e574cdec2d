import MediaCore
#if canImport(Glibc)
import Glibc
#endif

/// An output file written under a temporary name and renamed into place by ``commit()``;
/// removed if never committed. "-" is standard output; an existing device or pipe
/// (`/dev/null`, a FIFO) is written directly, never renamed over.
final class OutputFile {
    let path: String
    private let temporary: String?
    private let fd: Int32
    private var committed = false

    init(path: String) throws(ToolError) {
        self.path = path
        if path == "-" {
            fd = 1
            temporary = nil
            return
        }
        var existing = stat()
        if stat(path, &existing) == 0 && existing.st_mode & S_IFMT != S_IFREG {
            guard existing.st_mode & S_IFMT != S_IFDIR else { throw ToolError("\(path): is a directory") }
            fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw ToolError("\(path): cannot open: \(errnoText())") }
            temporary = nil
            return
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let temporary = "\(directory).\(name).\(getpid()).partial"
        fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ToolError("\(path): cannot create: \(errnoText())") }
        self.temporary = temporary
    }

    func write(_ bytes: [UInt8]) throws(ToolError) {
        var failure: ToolError?
        bytes.withUnsafeBytes { raw in
            do throws(ToolError) { try write(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(ToolError) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw ToolError("\(path): write failed: \(errnoText())")
            }
            offset += n
        }
    }

    /// Writes a picture in rawvideo layout: its rows, gathered by `writev` without a copy.
    func write(_ picture: PixelBuffer) throws(ToolError) {
        var rows: [iovec] = []
        rows.reserveCapacity(min(1024, picture.planes.reduce(0) { $0 + $1.height }))
        func flush() throws(ToolError) {
            var first = 0
            while first < rows.count {
                let n = rows.withUnsafeBufferPointer { writev(fd, $0.baseAddress! + first, Int32(rows.count - first)) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ToolError("\(path): write failed: \(errnoText())")
                }
                var left = n
                while first < rows.count && left >= rows[first].iov_len { left -= rows[first].iov_len; first += 1 }
                if left > 0 { rows[first].iov_base += left; rows[first].iov_len -= left }
            }
            rows.removeAll(keepingCapacity: true)
        }
        for plane in picture.planes {
            if plane.bytesPerRow == plane.rowBytes {
                rows.append(iovec(iov_base: plane.base, iov_len: plane.rowBytes * plane.height))
            } else {
                for row in 0..<plane.height {
                    rows.append(iovec(iov_base: plane.base + row * plane.bytesPerRow, iov_len: plane.rowBytes))
                    if rows.count == 1024 { try flush() }
                }
            }
            if rows.count >= 1000 { try flush() }
        }
        try withExtendedLifetime(picture) { () throws(ToolError) in try flush() }
    }

    func commit() throws(ToolError) {
        guard let temporary else {
            if fd > 2 { close(fd) }
            committed = true
            return
        }
        guard close(fd) == 0 else { throw ToolError("\(path): write failed: \(errnoText())") }
        committed = true
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ToolError("\(path): cannot rename into place: \(errnoText())")
        }
    }

    deinit {
        guard !committed else { return }
        if let temporary {
            close(fd)
            unlink(temporary)
        } else if fd > 2 {
            close(fd)
        }
    }
}
