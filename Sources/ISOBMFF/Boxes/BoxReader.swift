public import MediaCore

/// A box header found in a byte range: its type, where its payload is, and its path.
public struct BoxHeader: Sendable, Hashable, CustomStringConvertible {
    /// The box type.
    public var type: FourCharCode
    /// Offset of the box's first byte.
    public var start: Int
    /// The payload, after the size/type (and largesize) fields.
    public var payload: Range<Int>
    /// Whether the size was written as a 64-bit `largesize`.
    public var hasLargeSize: Bool
    /// The offset just past the box.
    public var end: Int { payload.upperBound }
    /// The header's size in bytes.
    public var headerSize: Int { payload.lowerBound - start }
    /// "type@offset", e.g. "moov@1024".
    public var description: String { "\(type)@\(start)" }
}

/// Reads a box's payload: big-endian fields, every read bounds-checked, so running past the
/// box is a `ContainerError` naming the file, the box path and the offset, never a trap.
/// Box types parse themselves from it (``Box/init(parsing:)``); counts read from the data
/// are checked against the bytes left (``checkEntries(_:size:_:)``) before anything is
/// allocated from them.
public struct BoxReader {
    /// The whole buffer (a mapped file, or bytes in memory); offsets index it.
    public let bytes: UnsafeRawBufferPointer
    /// The next byte to read.
    public private(set) var offset: Int
    /// The end of this box's payload.
    public let end: Int
    /// The type of the box being read.
    public let boxType: FourCharCode
    /// The box path, for errors ("moov/trak[1]/mdia/minf/stbl/stsz").
    public let path: String
    /// The file, for errors.
    public let file: String
    /// How many boxes enclose this one (0 at the top level).
    public let depth: Int

    /// The deepest nesting of boxes read. The deepest real nesting is about 8
    /// (`moov/trak/mdia/minf/stbl/stsd/avc1/avcC`); a file nesting container boxes deeper is
    /// built to exhaust the stack, and is an error (FFmpeg stops at 10).
    public static let maximumDepth = 16

    /// A reader over `range` of `bytes`, the payload of a box of type `boxType` inside `depth`
    /// others.
    public init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, boxType: FourCharCode, path: String, file: String, depth: Int = 0) {
        self.bytes = bytes
        offset = range.lowerBound
        end = range.upperBound
        self.boxType = boxType
        self.path = path
        self.file = file
        self.depth = depth
    }

    /// Bytes left in the box.
    public var remaining: Int { end - offset }

    /// An error at the current offset (or `at`).
    public func error(_ reason: String, at: Int? = nil) -> ContainerError {
        ContainerError(.invalidBox, reason, path: file, boxPath: path, byteOffset: at ?? offset)
    }

    /// Checks that `count` more bytes are in the box.
    public func need(_ count: Int, _ what: String) throws(ContainerError) {
        guard count >= 0, count <= remaining else {
            throw ContainerError(.invalidBox, "\(what): needs \(count) bytes, \(remaining) left in the box", path: file, boxPath: path, byteOffset: offset)
        }
    }

    /// An 8-bit unsigned field; `what` names it in errors.
    public mutating func u8(_ what: String = "field") throws(ContainerError) -> UInt8 {
        try need(1, what)
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A 16-bit big-endian unsigned field.
    public mutating func u16(_ what: String = "field") throws(ContainerError) -> UInt16 {
        try need(2, what)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// A 16-bit big-endian signed field.
    public mutating func i16(_ what: String = "field") throws(ContainerError) -> Int16 { Int16(bitPattern: try u16(what)) }

    /// A 24-bit big-endian unsigned field (a full box's flags).
    public mutating func u24(_ what: String = "field") throws(ContainerError) -> UInt32 {
        try need(3, what)
        defer { offset += 3 }
        return UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
    }

    /// A 32-bit big-endian unsigned field.
    public mutating func u32(_ what: String = "field") throws(ContainerError) -> UInt32 {
        try need(4, what)
        defer { offset += 4 }
        return Self.u32(bytes, offset)
    }

    /// A 32-bit big-endian signed field.
    public mutating func i32(_ what: String = "field") throws(ContainerError) -> Int32 { Int32(bitPattern: try u32(what)) }

    /// A 64-bit big-endian unsigned field.
    public mutating func u64(_ what: String = "field") throws(ContainerError) -> UInt64 {
        try need(8, what)
        defer { offset += 8 }
        return UInt64(Self.u32(bytes, offset)) << 32 | UInt64(Self.u32(bytes, offset + 4))
    }

    /// A 64-bit big-endian signed field.
    public mutating func i64(_ what: String = "field") throws(ContainerError) -> Int64 { Int64(bitPattern: try u64(what)) }

    /// A field of `size` bytes (1, 2, 3, 4 or 8), big-endian.
    public mutating func unsigned(size: Int, _ what: String = "field") throws(ContainerError) -> UInt64 {
        switch size {
        case 1: UInt64(try u8(what))
        case 2: UInt64(try u16(what))
        case 3: UInt64(try u24(what))
        case 4: UInt64(try u32(what))
        case 8: try u64(what)
        default: throw error("\(what): a field of \(size) bytes")
        }
    }

    /// A four-character code.
    public mutating func fourCC(_ what: String = "four-character code") throws(ContainerError) -> FourCharCode {
        FourCharCode(rawValue: try u32(what))
    }

    /// Skips `count` bytes, which must be in the box.
    public mutating func skip(_ count: Int, _ what: String = "field") throws(ContainerError) {
        try need(count, what)
        offset += count
    }

    /// The next `count` bytes, copied.
    public mutating func bytes(_ count: Int, _ what: String = "field") throws(ContainerError) -> [UInt8] {
        try need(count, what)
        defer { offset += count }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
    }

    /// The rest of the box, copied.
    public mutating func rest() -> [UInt8] {
        defer { offset = end }
        return Array(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
    }

    /// A field of 64 bits in version 1 of a box and 32 in version 0 (times, durations, offsets).
    public mutating func versioned(_ version: UInt8, _ what: String) throws(ContainerError) -> UInt64 {
        version == 1 ? try u64(what) : UInt64(try u32(what))
    }

    /// A signed field of 64 bits in version 1 and 32 in version 0 (an edit's media time).
    public mutating func versionedSigned(_ version: UInt8, _ what: String) throws(ContainerError) -> Int64 {
        version == 1 ? try i64(what) : Int64(try i32(what))
    }

    /// An entry count, then that many child boxes (`stsd`, `dref`): the boxes found, the short
    /// tail after them, and the count as stored when it disagrees with the boxes found.
    public mutating func countedChildren(_ table: BoxTable, _ what: String) throws(ContainerError) -> (boxes: [AnyBox], trailer: [UInt8], declaredCount: UInt32?) {
        let count = try u32("entry_count")
        try checkEntries(count, size: 8, what)
        let (boxes, trailer) = try children(table)
        return (boxes, trailer, Int(count) == boxes.count ? nil : count)
    }

    /// Version and flags of a full box.
    public mutating func versionAndFlags() throws(ContainerError) -> (version: UInt8, flags: UInt32) {
        let version = try u8("version")
        return (version, try u24("flags"))
    }

    /// Checks that `count` entries of `size` bytes fit in the box before anything is allocated.
    public func checkEntries(_ count: UInt32, size: Int, _ what: String) throws(ContainerError) {
        guard UInt64(count) * UInt64(size) <= UInt64(remaining) else {
            throw error("\(what) declares \(count) entries of \(size) bytes, only \(remaining) bytes remain")
        }
    }

    @inline(__always) static func u32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }
}

extension BoxReader {
    /// The next box header in this reader's range, and moves past the box; nil at the end or
    /// when fewer than 8 bytes are left (QuickTime ends some atom lists with a 32-bit zero,
    /// and FFmpeg skips any short tail too: see ``shortTail()``).
    ///
    /// A box running past the range is an error, unless `allowTruncated` (the top level of a
    /// file cut short): then its payload is cut at the range's end and `declaredSize` says
    /// what it claimed. Sizes are compared as 64-bit unsigned values before any conversion,
    /// so no size, however large, traps.
    public mutating func nextHeader(allowTruncated: Bool = false) throws(ContainerError) -> (header: BoxHeader, declaredSize: UInt64)? {
        guard remaining >= 8 else { return nil }
        let start = offset
        var size = UInt64(try u32("box size"))
        let type = FourCharCode(rawValue: try u32("box type"))
        var headerSize: UInt64 = 8
        var large = false
        if size == 1 {
            guard remaining >= 8 else { throw error("\(type) box: 64-bit size cut off", at: start) }
            size = try u64("largesize")
            headerSize = 16
            large = true
        } else if size == 0 {
            size = UInt64(end - start)  // to the end of the enclosing range
        }
        guard size >= headerSize else {
            throw error("\(type) box size \(size) is smaller than its header", at: start)
        }
        let available = UInt64(end - start)
        if size > available {
            guard allowTruncated else {
                throw error("\(type) box size \(size) runs \(size - available) bytes past its parent", at: start)
            }
            offset = end
            return (BoxHeader(type: type, start: start, payload: (start + Int(headerSize))..<end, hasLargeSize: large), size)
        }
        let header = BoxHeader(type: type, start: start, payload: (start + Int(headerSize))..<(start + Int(size)), hasLargeSize: large)
        offset = header.end
        return (header, size)
    }

    /// The bytes left when fewer than a box header remain (a QuickTime list terminator), consumed.
    public mutating func shortTail() -> [UInt8] {
        guard remaining > 0 && remaining < 8 else { return [] }
        return rest()
    }

    /// A reader over a child box's payload, with the path extended.
    public func child(_ header: BoxHeader, index: Int? = nil) -> BoxReader {
        BoxReader(bytes, header.payload, boxType: header.type,
                  path: path.isEmpty ? "\(header.type)" : "\(path)/\(header.type)\(index.map { "[\($0)]" } ?? "")", file: file, depth: depth + 1)
    }

    /// Parses every box left in this reader with `table`, in order, and the short tail after
    /// them. Boxes nested deeper than ``maximumDepth`` are an error.
    public mutating func children(_ table: BoxTable) throws(ContainerError) -> (boxes: [AnyBox], trailer: [UInt8]) {
        guard depth < Self.maximumDepth || remaining < 8 else {
            throw error("boxes nested \(depth + 1) deep, more than the \(Self.maximumDepth) any file needs")
        }
        var boxes: [AnyBox] = []
        var counts: [FourCharCode: Int] = [:]
        while let (header, _) = try nextHeader() {
            let index = counts[header.type, default: 0]
            counts[header.type] = index + 1
            var reader = child(header, index: index > 0 ? index : nil)
            boxes.append(try table.parse(&reader))
        }
        return (boxes, shortTail())
    }
}
