public import MediaCore

/// A box header found in a byte range: its type, where its payload is, and its path.
public struct BoxHeader: Sendable, CustomStringConvertible {
    public var type: FourCharCode
    /// Offset of the box's first byte in the file.
    public var start: Int
    /// The payload, after the size/type (and largesize) fields.
    public var payload: Range<Int>
    public var end: Int { payload.upperBound }
    public var description: String { "\(type)@\(start)" }
}

/// Reads big-endian fields from a byte range of a file, every read bounds-checked: running
/// past the range is a ``ContainerError`` naming the box path and offset, never a trap.
struct FieldReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int
    let end: Int
    let path: String
    let file: String

    init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, path: String, file: String) {
        self.bytes = bytes
        self.offset = range.lowerBound
        self.end = range.upperBound
        self.path = path
        self.file = file
    }

    var remaining: Int { end - offset }

    func error(_ reason: String, at: Int? = nil) -> ContainerError {
        ContainerError(.invalidBox, reason, path: file, boxPath: path, byteOffset: at ?? offset)
    }

    mutating func need(_ count: Int, _ what: String) throws(ContainerError) {
        guard count >= 0, count <= remaining else {
            throw ContainerError(.invalidBox, "\(what): needs \(count) bytes, \(remaining) left in the box", path: file, boxPath: path, byteOffset: offset)
        }
    }

    mutating func u8(_ what: String = "field") throws(ContainerError) -> UInt8 {
        try need(1, what)
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16(_ what: String = "field") throws(ContainerError) -> UInt16 {
        try need(2, what)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
    mutating func u24(_ what: String = "field") throws(ContainerError) -> UInt32 {
        try need(3, what)
        defer { offset += 3 }
        return UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
    }
    mutating func u32(_ what: String = "field") throws(ContainerError) -> UInt32 {
        try need(4, what)
        defer { offset += 4 }
        return Self.u32(bytes, offset)
    }
    mutating func u64(_ what: String = "field") throws(ContainerError) -> UInt64 {
        try need(8, what)
        defer { offset += 8 }
        return UInt64(Self.u32(bytes, offset)) << 32 | UInt64(Self.u32(bytes, offset + 4))
    }
    mutating func skip(_ count: Int, _ what: String = "field") throws(ContainerError) {
        try need(count, what)
        offset += count
    }
    mutating func array(_ count: Int, _ what: String = "field") throws(ContainerError) -> [UInt8] {
        try need(count, what)
        defer { offset += count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
    }
    /// Version and flags of a full box.
    mutating func versionAndFlags() throws(ContainerError) -> (version: UInt8, flags: UInt32) {
        let version = try u8("version")
        return (version, try u24("flags"))
    }
    /// Checks that `count` entries of `size` bytes fit in the box before anything is allocated.
    func checkEntries(_ count: UInt32, size: Int, _ what: String) throws(ContainerError) {
        guard UInt64(count) * UInt64(size) <= UInt64(remaining) else {
            throw error("\(what) declares \(count) entries of \(size) bytes, only \(remaining) bytes remain")
        }
    }

    @inline(__always) static func u32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}

extension FieldReader {
    /// The boxes in this reader's range, in order. A size past the range is an error (or, at the
    /// top level of a truncated file, cut short and reported through `truncated`).
    mutating func boxes(allowTruncatedLast: Bool = false, truncated: ((BoxHeader, Int) -> Void)? = nil) throws(ContainerError) -> [BoxHeader] {
        var result: [BoxHeader] = []
        while remaining > 0 {
            let start = offset
            guard remaining >= 8 else {
                // QuickTime ends some atom lists with a 32-bit zero terminator; FFmpeg skips any
                // short tail too.
                offset = end
                break
            }
            var size = UInt64(try u32("box size"))
            let type = FourCharCode(rawValue: try u32("box type"))
            var headerSize = 8
            if size == 1 {
                guard remaining >= 8 else { throw error("\(type) box: 64-bit size cut off", at: start) }
                size = try u64("largesize")
                headerSize = 16
            } else if size == 0 {
                size = UInt64(end - start)  // to the end of the enclosing range
            }
            guard size >= UInt64(headerSize) else {
                if allowTruncatedLast {
                    truncated?(BoxHeader(type: type, start: start, payload: start..<end), -1)
                    offset = end
                    break
                }
                throw error("\(type) box size \(size) is smaller than its header", at: start)
            }
            if size > UInt64(end - start) {
                guard allowTruncatedLast else {
                    throw error("\(type) box size \(size) runs \(size - UInt64(end - start)) bytes past its parent", at: start)
                }
                let header = BoxHeader(type: type, start: start, payload: (start + headerSize)..<end)
                truncated?(header, Int(size))
                result.append(header)
                offset = end
                break
            }
            let header = BoxHeader(type: type, start: start, payload: (start + headerSize)..<(start + Int(size)))
            result.append(header)
            offset = header.end
        }
        return result
    }

    /// A reader over a child box's payload, with the path extended.
    func child(_ box: BoxHeader, index: Int? = nil) -> FieldReader {
        FieldReader(bytes, box.payload, path: path.isEmpty ? "\(box.type)" : "\(path)/\(box.type)\(index.map { "[\($0)]" } ?? "")", file: file)
    }
}
