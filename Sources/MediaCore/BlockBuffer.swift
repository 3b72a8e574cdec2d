/// A contiguous run of bytes that either owns its storage or references memory someone else
/// owns (a mapped file, a decoder's buffer), the `CMBlockBuffer` analogue.
///
/// Slicing never copies: a slice shares the storage and keeps it alive, and the storage's
/// deallocator runs once, when the last buffer referencing it goes away. The bytes are
/// immutable once wrapped, so a block buffer is `Sendable` and can be handed between threads.
public struct BlockBuffer: Sendable {
    final class Storage: @unchecked Sendable {
        enum Kind {
            case owned([UInt8])
            case referenced(UnsafeRawBufferPointer, deallocator: (@Sendable (UnsafeRawBufferPointer) -> Void)?)
        }
        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        deinit {
            if case .referenced(let bytes, let deallocator?) = kind { deallocator(bytes) }
        }
    }

    let storage: Storage
    /// Where this buffer's bytes sit in its storage.
    let range: Range<Int>

    /// A buffer that owns `bytes`.
    public init(_ bytes: [UInt8]) {
        storage = Storage(.owned(bytes))
        range = 0..<bytes.count
    }

    /// An empty buffer.
    public init() { self.init([]) }

    /// A buffer over memory it does not copy. `deallocator` runs once, when the last buffer
    /// sharing this memory is gone (pass nil for memory that outlives every buffer, such as a
    /// static table). The memory must not change while any buffer references it.
    public init(referencing bytes: UnsafeRawBufferPointer, deallocator: (@Sendable (UnsafeRawBufferPointer) -> Void)?) {
        storage = Storage(.referenced(bytes, deallocator: deallocator))
        range = 0..<bytes.count
    }

    init(storage: Storage, range: Range<Int>) {
        self.storage = storage
        self.range = range
    }

    public var count: Int { range.count }
    public var isEmpty: Bool { range.isEmpty }

    /// Whether the two buffers share storage (one is a slice of the other, or both of a third).
    public func sharesStorage(with other: BlockBuffer) -> Bool { storage === other.storage }

    /// The bytes in `bounds` (relative to this buffer), sharing storage: no copy.
    public subscript(bounds: Range<Int>) -> BlockBuffer {
        precondition(bounds.lowerBound >= 0 && bounds.upperBound <= count, "slice \(bounds) outside a \(count)-byte block buffer")
        return BlockBuffer(storage: storage, range: (range.lowerBound + bounds.lowerBound)..<(range.lowerBound + bounds.upperBound))
    }

    /// Calls `body` with the bytes. The pointer is valid only inside `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch storage.kind {
        case .owned(let array):
            // `withUnsafeBytes` on Array rethrows untyped; keep the typed error by hand.
            var result: Result<R, E>!
            array.withUnsafeBytes { raw in
                do throws(E) { result = .success(try body(UnsafeRawBufferPointer(rebasing: raw[range]))) } catch { result = .failure(error) }
            }
            return try result.get()
        case .referenced(let bytes, _):
            return try body(UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
    }

    /// A copy of the bytes as an array.
    public var bytes: [UInt8] {
        if case .owned(let array) = storage.kind, range == array.indices { return array }
        return withUnsafeBytes { Array($0) }
    }
}

extension BlockBuffer: Equatable {
    /// Equal when the bytes are equal, wherever they are stored.
    public static func == (a: BlockBuffer, b: BlockBuffer) -> Bool {
        guard a.count == b.count else { return false }
        if a.storage === b.storage && a.range == b.range { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }
}

extension BlockBuffer: CustomStringConvertible {
    public var description: String {
        if case .owned = storage.kind { return "BlockBuffer(\(count) bytes, owned)" }
        return "BlockBuffer(\(count) bytes, referenced)"
    }
}
