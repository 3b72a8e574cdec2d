public import H264Bitstream

/// Bytes that either own their storage or reference memory someone else owns (a mapped file,
/// a decoder's buffer), the `CMBlockBuffer` analogue.
///
/// Slicing never copies: a slice shares the storage and keeps it alive, and the storage's
/// deallocator runs once, when the last buffer referencing it goes away. A buffer can also
/// chain several such ranges (``init(chaining:)``), as a `CMBlockBuffer` does, so that a sample
/// can be length prefixes plus NAL units still in a mapped input file: ``forEachSegment(_:)``
/// hands the pieces to a gathering write without a copy. The bytes are immutable once
/// wrapped, so a block buffer is `Sendable` and can be handed between threads.
public struct BlockBuffer: Sendable {
    // The storage and its segments are visible to inlined code: `withUnsafeBytes(_:)` and
    // `forEachSegment(_:)` are generic over their body's error, and unspecialized across a
    // module they instantiate generic metadata at every call (a writer calls them per sample).
    @usableFromInline
    final class Storage: @unchecked Sendable {
        @usableFromInline
        enum Kind {
            case owned([UInt8])
            case referenced(UnsafeRawBufferPointer, deallocator: (@Sendable (UnsafeRawBufferPointer) -> Void)?)
            /// Memory kept alive by an object (a mapping, a reader's buffer).
            case retained(UnsafeRawBufferPointer, owner: AnyObject)
        }
        @usableFromInline let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        deinit {
            if case .referenced(let bytes, let deallocator?) = kind { deallocator(bytes) }
        }
    }

    /// One contiguous range of one storage.
    @usableFromInline
    struct Segment: Sendable {
        @usableFromInline let storage: Storage
        @usableFromInline let range: Range<Int>

        @usableFromInline
        init(storage: Storage, range: Range<Int>) {
            self.storage = storage
            self.range = range
        }

        @inlinable
        func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
            switch storage.kind {
            case .owned(let array):
                // `withUnsafeBytes` on Array rethrows untyped; keep the typed error by hand.
                var result: Result<R, E>!
                array.withUnsafeBytes { raw in
                    do throws(E) { result = .success(try body(UnsafeRawBufferPointer(rebasing: raw[range]))) } catch { result = .failure(error) }
                }
                return try result.get()
            case .referenced(let bytes, _), .retained(let bytes, _):
                return try body(UnsafeRawBufferPointer(rebasing: bytes[range]))
            }
        }
    }

    @usableFromInline
    enum Representation: Sendable {
        case contiguous(Segment)
        /// Two or more non-empty segments.
        case chain([Segment])
    }

    @usableFromInline let representation: Representation
    /// The number of bytes.
    public let count: Int

    /// A buffer that owns `bytes`.
    public init(_ bytes: [UInt8]) {
        self.init(representation: .contiguous(Segment(storage: Storage(.owned(bytes)), range: 0..<bytes.count)), count: bytes.count)
    }

    /// An empty buffer.
    public init() { self.init([]) }

    /// A buffer over memory it does not copy. `deallocator` runs once, when the last buffer
    /// sharing this memory is gone (pass nil for memory that outlives every buffer, such as a
    /// static table). The memory must not change while any buffer references it.
    public init(referencing bytes: UnsafeRawBufferPointer, deallocator: (@Sendable (UnsafeRawBufferPointer) -> Void)?) {
        self.init(representation: .contiguous(Segment(storage: Storage(.referenced(bytes, deallocator: deallocator)), range: 0..<bytes.count)), count: bytes.count)
    }

    /// A NAL unit read from an Annex-B stream, without a copy: the buffer keeps the unit's
    /// storage (the mapped file, or the reader's buffer) alive.
    public init(_ nalUnit: NALUnitBuffer) {
        let storage = Storage(.retained(nalUnit.bytes, owner: nalUnit.owner))
        self.init(representation: .contiguous(Segment(storage: storage, range: 0..<nalUnit.count)), count: nalUnit.count)
    }

    /// The bytes of `buffers` one after another, without copying them (the buffers' storage is
    /// shared, as a slice shares it).
    public init(chaining buffers: some Sequence<BlockBuffer>) {
        var segments: [Segment] = []
        var total = 0
        for buffer in buffers {
            switch buffer.representation {
            case .contiguous(let segment) where !segment.range.isEmpty: segments.append(segment)
            case .contiguous: break
            case .chain(let more): segments.append(contentsOf: more)
            }
            total += buffer.count
        }
        self.init(segments: segments, count: total)
    }

    private init(segments: [Segment], count: Int) {
        switch segments.count {
        case 0: self.init()
        case 1: self.init(representation: .contiguous(segments[0]), count: count)
        default: self.init(representation: .chain(segments), count: count)
        }
    }

    private init(representation: Representation, count: Int) {
        self.representation = representation
        self.count = count
    }

    /// Whether the buffer holds no bytes.
    public var isEmpty: Bool { count == 0 }

    /// Whether the bytes are one range of memory (``withUnsafeBytes(_:)`` does not copy).
    public var isContiguous: Bool {
        if case .contiguous = representation { return true }
        return false
    }

    /// How many contiguous pieces the bytes are in.
    public var segmentCount: Int {
        switch representation {
        case .contiguous: 1
        case .chain(let segments): segments.count
        }
    }

    /// Whether the two buffers share storage (one is a slice of the other, both of a third, or
    /// a chain holds the other's bytes).
    public func sharesStorage(with other: BlockBuffer) -> Bool {
        let mine = storages
        return other.storages.contains { theirs in mine.contains { $0 === theirs } }
    }

    private var storages: [Storage] {
        switch representation {
        case .contiguous(let segment): [segment.storage]
        case .chain(let segments): segments.map(\.storage)
        }
    }

    /// The bytes in `bounds` (relative to this buffer), sharing storage: no copy.
    public subscript(bounds: Range<Int>) -> BlockBuffer {
        precondition(bounds.lowerBound >= 0 && bounds.upperBound <= count, "slice \(bounds) outside a \(count)-byte block buffer")
        switch representation {
        case .contiguous(let segment):
            let base = segment.range.lowerBound
            // (No array of one segment: a reader slices every frame of a packet this way.)
            return BlockBuffer(representation: .contiguous(Segment(storage: segment.storage, range: (base + bounds.lowerBound)..<(base + bounds.upperBound))), count: bounds.count)
        case .chain(let segments):
            var picked: [Segment] = []
            var position = 0
            for segment in segments {
                let here = position..<(position + segment.range.count)
                position = here.upperBound
                let overlap = here.clamped(to: bounds)
                guard !overlap.isEmpty else { if here.lowerBound >= bounds.upperBound { break } else { continue } }
                let base = segment.range.lowerBound - here.lowerBound
                picked.append(Segment(storage: segment.storage, range: (base + overlap.lowerBound)..<(base + overlap.upperBound)))
            }
            return BlockBuffer(segments: picked, count: bounds.count)
        }
    }

    /// Calls `body` with the bytes. The pointer is valid only inside `body`. A chained buffer
    /// is copied into one temporary range first; ``forEachSegment(_:)`` avoids that.
    @inlinable
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch representation {
        case .contiguous(let segment):
            return try segment.withUnsafeBytes(body)
        case .chain:
            let copy = bytes
            var result: Result<R, E>!
            copy.withUnsafeBytes { raw in
                do throws(E) { result = .success(try body(raw)) } catch { result = .failure(error) }
            }
            return try result.get()
        }
    }

    /// Calls `body` with each contiguous piece of the bytes, in order (one call for a
    /// contiguous buffer).
    @inlinable
    public func forEachSegment<E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        switch representation {
        case .contiguous(let segment):
            try segment.withUnsafeBytes(body)
        case .chain(let segments):
            for segment in segments { try segment.withUnsafeBytes(body) }
        }
    }

    /// The same bytes in one range of memory: this buffer when it is contiguous, else a copy
    /// (`CMBlockBufferCreateContiguous`).
    public func contiguous() -> BlockBuffer {
        isContiguous ? self : BlockBuffer(bytes)
    }

    /// A copy of the bytes as an array.
    public var bytes: [UInt8] {
        if case .contiguous(let segment) = representation, case .owned(let array) = segment.storage.kind, segment.range == array.indices {
            return array
        }
        var result: [UInt8] = []
        result.reserveCapacity(count)
        forEachSegment { result.append(contentsOf: $0) }
        return result
    }
}

extension BlockBuffer: Equatable {
    /// Equal when the bytes are equal, wherever and however they are stored.
    public static func == (a: BlockBuffer, b: BlockBuffer) -> Bool {
        guard a.count == b.count else { return false }
        if case .contiguous(let x) = a.representation, case .contiguous(let y) = b.representation, x.storage === y.storage, x.range == y.range {
            return true
        }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }
}

extension BlockBuffer: CustomStringConvertible {
    /// The size and whether the bytes are owned, referenced or a chain of segments.
    public var description: String {
        switch representation {
        case .contiguous(let segment):
            if case .owned = segment.storage.kind { return "BlockBuffer(\(count) bytes, owned)" }
            return "BlockBuffer(\(count) bytes, referenced)"
        case .chain(let segments):
            return "BlockBuffer(\(count) bytes in \(segments.count) segments)"
        }
    }
}
