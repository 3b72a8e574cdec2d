import FoundationEssentials
import H264Bitstream
import MediaCore
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

/// Feeds an Annex-B stream's NAL units to `builder`, calling `afterEach` with the bytes read so
/// far and the builder (to take its samples) after each unit (or chunk). A regular file is mapped and the samples refer to its
/// slices without a copy; standard input and pipes are read in chunks. Returns the bytes read
/// and the bytes skipped before the first start code.
func feedAnnexB(
    _ input: String, name: String, into builder: inout SampleBufferBuilder, afterEach: (Int, inout SampleBufferBuilder) throws -> Void
) throws -> (bytesRead: Int, leadingGarbage: Int) {
    if input != "-", let size = fileSize(input), size > 0 {
        let mapped = try MappedFile(path: input)
        let file = BlockBuffer(referencing: mapped.bytes) { _ in withExtendedLifetime(mapped) {} }
        let limit = AnnexBStreamSplitter.defaultMaximumNALUnitSize
        let garbage = try forEachNALUnitInWindows(in: mapped.bytes) { nal in
            guard nal.payload.count <= limit else {
                throw ToolError("\(name): byte \(nal.startCodeOffset): NAL unit larger than \(limit) bytes; is this an H.264 stream?")
            }
            try builder.append(nalUnit: file[nal.payload], at: nal)
            try afterEach(nal.payload.upperBound, &builder)
        }
        return (size, garbage)
    }
    let fd = input == "-" ? 0 : open(input, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ToolError("\(input): cannot open: \(errnoText())") }
    defer { if fd != 0 { close(fd) } }
    var splitter = AnnexBStreamSplitter()
    var bytesRead = 0
    try readChunks(fd: fd, name: name, chunkSize: 4 << 20) { chunk in
        bytesRead += chunk.count
        try splitter.append(chunk) { (location, bytes) throws(BitstreamError) in
            try builder.append(nalUnit: bytes.bindMemory(to: UInt8.self).span, at: location)
        }
        if splitter.isOverLimit {
            throw ToolError("\(name): byte \(splitter.currentNALUnitOffset): NAL unit larger than \(splitter.maximumNALUnitSize) bytes; is this an H.264 stream?")
        }
        try afterEach(bytesRead, &builder)
    }
    try splitter.finish { (location, bytes) throws(BitstreamError) in
        try builder.append(nalUnit: bytes.bindMemory(to: UInt8.self).span, at: location)
    }
    return (bytesRead, splitter.leadingGarbageCount)
}
