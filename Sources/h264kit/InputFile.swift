import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// Errors of the command-line tool: what went wrong, and with which file.
struct ToolError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// The text of `errno`.
func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

/// A regular file mapped read-only into memory: zero-copy access for the scanners.
///
/// Pages are faulted in as they are touched: a scan that reads only NAL headers touches few.
final class MappedFile: @unchecked Sendable {  // immutable after init
    let path: String
    let bytes: UnsafeRawBufferPointer
    private let mapping: UnsafeMutableRawPointer?

    init(path: String) throws(ToolError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ToolError("\(path): cannot open: \(errnoText())") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ToolError("\(path): cannot stat: \(errnoText())") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ToolError("\(path): not a regular file") }
        let size = Int(info.st_size)
        guard size > 0 else { throw ToolError("\(path): the file is empty") }
        guard let pointer = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), pointer != MAP_FAILED else {
            throw ToolError("\(path): cannot map: \(errnoText())")
        }
        mapping = pointer
        bytes = UnsafeRawBufferPointer(start: pointer, count: size)
    }

    deinit {
        if let mapping { munmap(mapping, bytes.count) }
    }
}

/// Reads a file descriptor (stdin, a pipe) in chunks until end of file.
func readChunks(fd: Int32, name: String, chunkSize: Int = 1 << 20, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
    defer { buffer.deallocate() }
    while true {
        let n = read(fd, buffer.baseAddress, chunkSize)
        if n < 0 {
            if errno == EINTR { continue }
            throw ToolError("\(name): read failed: \(errnoText())")
        }
        if n == 0 { return }
        try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
}

/// Prints a value as sorted, indented JSON (what every `--json` prints).
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Writes a line to standard error.
func printError(_ text: String) {
    printErrorRaw(text.hasSuffix("\n") ? text : text + "\n")
}

/// Writes text to standard error as it is.
func printErrorRaw(_ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
        if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
        offset += n
    }
}
