/// One NAL unit located in an Annex-B byte stream (ITU-T H.264 Annex B).
///
/// Offsets are from the start of the stream. The payload is the NAL unit itself (header byte
/// first), with the start code before it and any trailing_zero_8bits after it excluded.
public struct AnnexBNALUnit: Hashable, Sendable {
    /// Offset of the start code's first byte.
    public var startCodeOffset: Int
    /// 3 (`00 00 01`) or 4 (`00 00 00 01`, a zero_byte before the 3-byte prefix).
    public var startCodeLength: Int
    /// The NAL unit's bytes within the stream.
    public var payload: Range<Int>

    /// A NAL unit at `payload`, after a start code of `startCodeLength` bytes at `startCodeOffset`.
    public init(startCodeOffset: Int, startCodeLength: Int, payload: Range<Int>) {
        self.startCodeOffset = startCodeOffset
        self.startCodeLength = startCodeLength
        self.payload = payload
    }
}

/// Annex-B byte-stream framing: finding NAL units between start codes, and writing them.
public enum AnnexB {
    /// Index of the first byte of the next `00 00 01` at or after `from`, or nil.
    public static func nextStartCodePrefix(in bytes: UnsafeRawBufferPointer, from: Int) -> Int? {
        nextStartCodePrefix(in: bytes, from: from, before: bytes.count)
    }

    /// Index of the first `00 00 01` that starts in `from ..< before`, or nil. The prefix may
    /// run past `before` (the bytes after it are read), so disjoint ranges searched apart find
    /// every prefix exactly once; this is how a large buffer is scanned on several threads.
    ///
    /// The hot loop of every scan, 32 bytes an iteration with vector instructions. Loading a
    /// block at `i` and again at `i + 1` and OR-ing them gives a byte that is zero exactly where
    /// a `00 00` pair starts, and `(w − 1) & ~w & 0x80` flags those bytes. Emulation prevention
    /// makes `00 00` rare inside NAL units (there it is always `00 00 03`), so nearly every
    /// block is skipped with a few instructions and the byte-wise check runs only around pairs.
    public static func nextStartCodePrefix(in bytes: UnsafeRawBufferPointer, from: Int, before: Int) -> Int? {
        guard let base = bytes.baseAddress, from >= 0 else { return nil }
        let count = bytes.count
        let limit = min(before, count &- 2)  // a prefix needs two bytes after its first
        var i = from
        let high = SIMD16<UInt8>(repeating: 0x80)
        @inline(__always) func pairFlags(_ offset: Int) -> SIMD16<UInt8> {
            let w = base.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
                | base.loadUnaligned(fromByteOffset: offset &+ 1, as: SIMD16<UInt8>.self)
            return (w &- 1) & ~w & high
        }
        @inline(__always) func check(_ start: Int, _ end: Int) -> Int? {
            var j = start
            while j < end {
                if base.load(fromByteOffset: j, as: UInt8.self) | base.load(fromByteOffset: j &+ 1, as: UInt8.self) == 0
                    && base.load(fromByteOffset: j &+ 2, as: UInt8.self) == 1 {
                    return j
                }
                j &+= 1
            }
            return nil
        }
        // Blocks whose every candidate has its two following bytes in the buffer: i + 33 < count.
        while i &+ 34 <= count && i &+ 32 <= limit {
            let lowFlags = pairFlags(i)
            let highFlags = pairFlags(i &+ 16)
            let any = unsafeBitCast(lowFlags | highFlags, to: SIMD2<UInt64>.self)
            if any[0] | any[1] != 0 {
                let low = unsafeBitCast(lowFlags, to: SIMD2<UInt64>.self)
                let highHalf = unsafeBitCast(highFlags, to: SIMD2<UInt64>.self)
                // Visit each flagged pair (bit 7 of byte k marks a pair at start + k).
                @inline(__always) func visit(_ word: UInt64, _ start: Int) -> Int? {
                    var bits = UInt64(littleEndian: word)
                    while bits != 0 {
                        let j = start &+ bits.trailingZeroBitCount >> 3
                        if base.load(fromByteOffset: j &+ 2, as: UInt8.self) == 1 { return j }
                        bits &= bits &- 1
                    }
                    return nil
                }
                if let j = visit(low[0], i) ?? visit(low[1], i &+ 8) ?? visit(highHalf[0], i &+ 16) ?? visit(highHalf[1], i &+ 24) {
                    return j
                }
            }
            i &+= 32
        }
        return check(i, limit)
    }

    /// Calls `body` for every NAL unit of a complete Annex-B stream, in order. Zero-copy:
    /// the ranges index `bytes`. Bytes before the first start code are skipped (see
    /// ``leadingGarbageCount(in:)``); empty NAL units (two start codes in a row) are skipped.
    public static func forEachNALUnit(
        in bytes: UnsafeRawBufferPointer,
        _ body: (AnnexBNALUnit) throws -> Void
    ) rethrows {
        guard var prefix = nextStartCodePrefix(in: bytes, from: 0) else { return }
        while true {
            let next = nextStartCodePrefix(in: bytes, from: prefix &+ 3)
            if let nal = nalUnit(in: bytes, prefix: prefix, nextPrefix: next) { try body(nal) }
            guard let next else { return }
            prefix = next
        }
    }

    /// Like ``forEachNALUnit(in:_:)`` with the start-code prefixes already found (for example
    /// by several threads, each searching part of the buffer with
    /// ``nextStartCodePrefix(in:from:before:)``). `prefixes` must be every prefix, ascending.
    public static func forEachNALUnit(
        in bytes: UnsafeRawBufferPointer,
        prefixes: [Int],
        _ body: (AnnexBNALUnit) throws -> Void
    ) rethrows {
        // Two prefixes are at least 3 bytes apart (`00 00 01` cannot overlap itself), so each
        // one ends the unit before it.
        for (index, prefix) in prefixes.enumerated() {
            let next = index + 1 < prefixes.count ? prefixes[index + 1] : nil
            if let nal = nalUnit(in: bytes, prefix: prefix, nextPrefix: next) { try body(nal) }
        }
    }

    /// The NAL unit after the prefix at `prefix`, ending before `nextPrefix` (or the end)
    /// without its trailing zero bytes; nil when that leaves it empty.
    @inline(__always)
    public static func nalUnit(in bytes: UnsafeRawBufferPointer, prefix: Int, nextPrefix: Int?) -> AnnexBNALUnit? {
        let payloadStart = prefix &+ 3
        let startCodeOffset = prefix > 0 && bytes[prefix &- 1] == 0 ? prefix &- 1 : prefix
        var end = nextPrefix ?? bytes.count
        while end > payloadStart && bytes[end &- 1] == 0 { end &-= 1 }
        guard end > payloadStart else { return nil }
        return AnnexBNALUnit(startCodeOffset: startCodeOffset, startCodeLength: prefix &- startCodeOffset &+ 3, payload: payloadStart..<end)
    }

    /// All NAL units of a complete Annex-B stream held in `bytes`.
    public static func nalUnits(in bytes: [UInt8]) -> [AnnexBNALUnit] {
        var result: [AnnexBNALUnit] = []
        bytes.withUnsafeBytes { raw in forEachNALUnit(in: raw) { result.append($0) } }
        return result
    }

    /// Number of bytes before the first start code (junk a byte stream should not have; a
    /// leading zero_byte of a 4-byte start code is not junk).
    public static func leadingGarbageCount(in bytes: UnsafeRawBufferPointer) -> Int {
        guard let prefix = nextStartCodePrefix(in: bytes, from: 0) else { return bytes.count }
        var start = prefix
        while start > 0 && bytes[start - 1] == 0 { start -= 1 }
        return start
    }

    /// Appends one NAL unit with a start code (4 bytes by default, as encoders write before
    /// parameter sets and the first NAL unit of an access unit; 3 is allowed elsewhere).
    public static func append(nalUnit: Span<UInt8>, startCodeLength: Int = 4, to output: inout [UInt8]) {
        precondition(startCodeLength == 3 || startCodeLength == 4)
        if startCodeLength == 4 { output.append(0) }
        output.append(0); output.append(0); output.append(1)
        nalUnit.withUnsafeBufferPointer { output.append(contentsOf: $0) }
    }
}

/// An incremental Annex-B splitter for data that arrives in chunks (stdin, pipes, sockets).
///
/// Feed bytes with ``append(_:_:)`` and call ``finish(_:)`` at the end. The NAL units, their
/// offsets and start-code lengths are exactly those ``AnnexB/forEachNALUnit(in:_:)`` finds in
/// the whole stream, however the input is chunked. Each NAL unit is handed over as a borrowed
/// buffer valid only during the call. Memory is bounded by the largest NAL unit, which is
/// capped by ``maximumNALUnitSize``.
public struct AnnexBStreamSplitter: Sendable {
    /// The largest NAL unit accepted by default: 64 MiB, several times a 4K intra frame.
    public static let defaultMaximumNALUnitSize = 64 << 20

    /// The largest NAL unit accepted; a larger one is an error.
    public let maximumNALUnitSize: Int
    /// Bytes from the current NAL unit's first payload byte on.
    private var pending: [UInt8] = []
    /// Stream offset of `pending[0]` (or of the next byte, before the first start code).
    private var pendingOffset = 0
    /// Whether a start code has been seen; before that, bytes only update the counters below.
    private var inNALUnit = false
    /// Where the next start-code search in `pending` may begin.
    private var searchFrom = 0
    private var currentStartCodeOffset = 0
    private var currentStartCodeLength = 3
    /// Before the first start code: the length of the run of zero bytes just seen.
    private var zeroRun = 0
    /// Bytes before the first start code that are not leading_zero_8bits.
    public private(set) var leadingGarbageCount = 0

    /// A splitter with nothing fed yet, accepting NAL units up to `maximumNALUnitSize` bytes.
    public init(maximumNALUnitSize: Int = AnnexBStreamSplitter.defaultMaximumNALUnitSize) {
        self.maximumNALUnitSize = maximumNALUnitSize
    }

    /// Feeds the next chunk; `body` receives every NAL unit that is now complete.
    public mutating func append<E: Error>(
        _ chunk: UnsafeRawBufferPointer,
        _ body: (AnnexBNALUnit, UnsafeRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        var index = 0
        if !inNALUnit {
            // Byte by byte until the first start code: zeros may be leading_zero_8bits.
            while index < chunk.count {
                let byte = chunk[index]
                index += 1
                if byte == 0 {
                    zeroRun += 1
                } else if byte == 1 && zeroRun >= 2 {
                    inNALUnit = true
                    currentStartCodeLength = zeroRun >= 3 ? 4 : 3
                    let streamOffsetOfOne = pendingOffset + index - 1
                    currentStartCodeOffset = streamOffsetOfOne - (currentStartCodeLength - 1)
                    pendingOffset = streamOffsetOfOne + 1
                    break
                } else {
                    leadingGarbageCount += zeroRun + 1
                    zeroRun = 0
                }
            }
            if !inNALUnit { pendingOffset += chunk.count; return }
        }
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[index...]))
        try drain(final: false, body)
    }

    /// Ends the stream: the last NAL unit runs to the end of the data.
    public mutating func finish<E: Error>(_ body: (AnnexBNALUnit, UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        if !inNALUnit { leadingGarbageCount += zeroRun; zeroRun = 0; return }
        try drain(final: true, body)
    }

    /// Whether the NAL unit being collected has grown past ``maximumNALUnitSize``; a caller
    /// reading an untrusted stream checks this after each ``append(_:_:)`` and stops.
    public var isOverLimit: Bool { pending.count > maximumNALUnitSize }

    /// Bytes of the NAL unit being collected so far.
    public var pendingCount: Int { pending.count }

    /// Stream offset of the NAL unit being collected.
    public var currentNALUnitOffset: Int { currentStartCodeOffset }

    private mutating func drain<E: Error>(
        final: Bool,
        _ body: (AnnexBNALUnit, UnsafeRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        var consumed = 0
        var failure: E?
        pending.withUnsafeBytes { raw in
            while failure == nil {
                let found = AnnexB.nextStartCodePrefix(in: raw, from: max(consumed, searchFrom))
                guard let next = found ?? (final ? raw.count : nil) else {
                    searchFrom = max(consumed, raw.count - 2)
                    return
                }
                var end = next
                while end > consumed && raw[end - 1] == 0 { end -= 1 }
                if end > consumed {
                    let nal = AnnexBNALUnit(
                        startCodeOffset: currentStartCodeOffset,
                        startCodeLength: currentStartCodeLength,
                        payload: (pendingOffset + consumed)..<(pendingOffset + end))
                    do throws(E) {
                        try body(nal, UnsafeRawBufferPointer(rebasing: raw[consumed..<end]))
                    } catch {
                        failure = error
                    }
                }
                guard found != nil else { consumed = raw.count; return }
                let fourByte = next > consumed && raw[next - 1] == 0
                currentStartCodeLength = fourByte ? 4 : 3
                currentStartCodeOffset = pendingOffset + next - (fourByte ? 1 : 0)
                consumed = next + 3
                searchFrom = consumed
            }
        }
        if consumed > 0 {
            pending.removeFirst(consumed)
            pendingOffset += consumed
            searchFrom = max(0, searchFrom - consumed)
        }
        // After a failure the unit that failed is consumed and the rest kept: a caller that
        // carries on gets the following units on its next call.
        if let failure { throw failure }
        if final { inNALUnit = false }
    }
}
