public import H264Bitstream
import SystemIO
public import SystemPackage

/// Reads the NAL units of an Annex-B byte stream, in order, from a file, a file descriptor
/// (standard input, a pipe) or bytes in memory.
///
/// A regular file is mapped: NAL units refer to the mapping without a copy, and for files of
/// 8 MB or more a helper thread searches ahead of the reader: a few 1 MB windows ahead,
/// prefaulting the pages in one call per window and letting the pages well behind go (they stay
/// in the page cache), or, without ``Options/releasesPagesBehind``, the second half of the
/// file while this thread does the first. Other inputs are read in 4 MB chunks and each NAL unit
/// gets a buffer of its own. Either way the units, their offsets and start-code lengths are
/// those `AnnexB.forEachNALUnit(in:_:)` finds in the whole stream, and memory is bounded by
/// the largest NAL unit, which is capped by ``Options/maximumNALUnitSize``.
///
/// Read with ``next()`` (`while let unit = try reader.next()`), or as an `AsyncSequence`
/// (`for try await unit in reader`). A read failing is ``SampleFlowError/file(_:)`` (the system
/// error, naming the file); a NAL unit over the cap is ``SampleFlowError/bitstream(_:input:)``
/// with its byte offset.
///
/// (The start-code scanning is H264Bitstream's; the mapping, the reads and the read-ahead
/// thread are SystemIO's. This type joins them.)
public final class AnnexBReader {
    /// Limits and buffer sizes.
    public struct Options: Sendable, Hashable {
        /// The largest NAL unit accepted: 64 MiB by default, several times a 4K intra frame.
        public var maximumNALUnitSize: Int
        /// Bytes read at a time from a descriptor.
        public var chunkSize: Int
        /// For a large mapped file: let the pages well behind the reader go from the process, so
        /// that memory stays flat while the caller keeps units (a remuxer chaining them into
        /// samples; a unit still referenced faults its pages back in when read). Without it the
        /// file is searched in two halves at once, which is fastest when each unit is let go
        /// after parsing (inspect), and the whole mapping stays resident.
        public var releasesPagesBehind: Bool

        /// Options with the given NAL unit cap and read size (64 MiB and 4 MiB by default), pages
        /// released behind the reader unless asked otherwise.
        public init(maximumNALUnitSize: Int = AnnexBStreamSplitter.defaultMaximumNALUnitSize, chunkSize: Int = 4 << 20, releasesPagesBehind: Bool = true) {
            self.maximumNALUnitSize = maximumNALUnitSize
            self.chunkSize = chunkSize
            self.releasesPagesBehind = releasesPagesBehind
        }
    }

    /// The input's name in errors ("stdin" for standard input).
    public let name: String
    /// The limits and buffer sizes the reader was made with.
    public let options: Options
    private var source: Source

    private enum Source {
        case mapped(MappedCursor)
        case chunked(ChunkedCursor)
        case finished
    }

    /// Opens `path` ("-" for standard input): a regular file is mapped, anything else is read
    /// in chunks.
    public convenience init(path: String, options: Options = Options()) throws(SampleFlowError) {
        let name = path == "-" ? "stdin" : path
        let status: FileStatus?
        do { status = path == "-" ? nil : try FileStatus.of(path: path) } catch { throw .file(error) }
        if let status, status.kind == .regular, status.size == 0 { throw .noSamples(input: name, reason: "the file is empty") }
        let source: Source
        do throws(SystemError) {
            if let status, status.kind == .regular {
                source = .mapped(MappedCursor(file: try MappedFile(path: path), releasesPagesBehind: options.releasesPagesBehind))
            } else {
                source = .chunked(ChunkedCursor(input: try ChunkedInput(path: path), chunkSize: options.chunkSize))
            }
        } catch {
            throw .file(error)
        }
        self.init(name: name, options: options, source: source)
    }

    /// Reads an open descriptor in chunks (the caller keeps it open and closes it), after the
    /// bytes of `prefix` (read from it already, to tell what it holds).
    public convenience init(fileDescriptor: FileDescriptor, name: String, prefix: [UInt8] = [], options: Options = Options()) {
        let input = ChunkedInput(descriptor: fileDescriptor, name: name)
        self.init(name: name, options: options, source: .chunked(ChunkedCursor(input: input, chunkSize: options.chunkSize, prefix: prefix)))
    }

    /// Reads a whole stream held in memory (no copy: the units refer to `bytes`' storage).
    public convenience init(bytes: [UInt8], name: String = "bytes", options: Options = Options()) {
        self.init(name: name, options: options, source: .mapped(MappedCursor(bytes: bytes)))
    }

    private init(name: String, options: Options, source: Source) {
        self.name = name
        self.options = options
        self.source = source
        if case .mapped(let cursor) = source { totalBytes = cursor.count } else { totalBytes = nil }
    }

    /// The input's size when known in advance (a file), for progress; it stays known once
    /// the reader has reached the end.
    public let totalBytes: Int?

    /// Bytes consumed so far (for a mapped file, up to the end of the last unit returned).
    public private(set) var bytesRead = 0

    /// Bytes before the first start code that are not zero padding (junk a stream should not
    /// have); final once ``next()`` has returned nil.
    public private(set) var leadingGarbageCount = 0

    /// The next NAL unit, or nil at the end of the stream.
    public func next() throws(SampleFlowError) -> NALUnitBuffer? {
        switch source {
        case .mapped(let cursor):
            guard let unit = cursor.next() else {
                leadingGarbageCount = cursor.leadingGarbageCount
                bytesRead = cursor.count
                source = .finished
                return nil
            }
            bytesRead = unit.location.payload.upperBound
            guard unit.count <= options.maximumNALUnitSize else { throw oversized(at: unit.location.startCodeOffset) }
            return unit
        case .chunked(let cursor):
            do {
                guard let unit = try cursor.next(limit: options.maximumNALUnitSize) else {
                    leadingGarbageCount = cursor.leadingGarbageCount
                    bytesRead = cursor.bytesRead
                    source = .finished
                    return nil
                }
                bytesRead = cursor.bytesRead
                return unit
            } catch {
                switch error {
                case .oversized(let offset): throw oversized(at: offset)
                case .system(let failure): throw .file(failure)
                }
            }
        case .finished:
            return nil
        }
    }

    private func oversized(at offset: Int) -> SampleFlowError {
        .bitstream(BitstreamError(.invalidLength, "NAL unit larger than \(options.maximumNALUnitSize) bytes; is this an H.264 stream?", byteOffset: offset), input: name)
    }

    /// Whether reading can block (a pipe or a terminal): the async form then reads off the
    /// cooperative thread pool.
    package var readsBlock: Bool { if case .chunked = source { true } else { false } }
}

extension AnnexBReader: AsyncSequence {
    /// The units read: each NAL unit with its location.
    public typealias Element = NALUnitBuffer
    /// The error a read throws: I/O failures and oversized NAL units.
    public typealias Failure = SampleFlowError

    /// Iterates the reader's units; reads that may block run on a dispatch queue, not on the
    /// caller's (cooperative) thread.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: AnnexBReader

        /// The next NAL unit, or nil at the end of the stream.
        public mutating func next() async throws(SampleFlowError) -> NALUnitBuffer? {
            try await next(isolation: nil)
        }

        /// The next NAL unit, or nil at the end; blocking reads run on a global dispatch queue.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SampleFlowError) -> NALUnitBuffer? {
            guard reader.readsBlock else { return try reader.next() }
            nonisolated(unsafe) let reader = self.reader  // one iterator at a time uses it
            return try await offloaded { () throws(SampleFlowError) -> NALUnitBuffer? in try reader.next() }
        }
    }

    /// An iterator over the reader's NAL units; use one at a time, the reader is shared.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: self) }
}


// MARK: - Mapped input

/// Walks a mapped file (or bytes in memory) unit by unit.
private final class MappedCursor {
    private let owner: AnyObject
    private let bytes: UnsafeRawBufferPointer
    private let scanner: (any PrefixScanner)?
    /// Start-code prefixes found and not yet turned into units (for the window scanner).
    private var prefixes: [Int] = []
    private var prefixIndex = 0
    /// The prefix of the unit to return next.
    private var current: Int?
    private var started = false
    let leadingGarbageCount: Int
    var count: Int { bytes.count }

    /// Files this large are scanned ahead on a helper thread.
    static let scanAheadThreshold = 8 << 20

    init(file: MappedFile, releasesPagesBehind: Bool) {
        owner = file
        bytes = file.bytes
        leadingGarbageCount = AnnexB.leadingGarbageCount(in: file.bytes)
        let helpers = onlineProcessorCount > 1
        if file.count >= Self.scanAheadThreshold && helpers {
            scanner = releasesPagesBehind ? WindowScanner(file: file) : HalvesScanner(file: file)
        } else {
            scanner = nil
        }
    }

    deinit { scanner?.cancel() }

    init(bytes: [UInt8]) {
        let storage = ByteStorage(bytes)
        owner = storage
        self.bytes = UnsafeRawBufferPointer(storage.bytes)
        leadingGarbageCount = AnnexB.leadingGarbageCount(in: self.bytes)
        scanner = nil
    }

    /// The next prefix at or after `from`, from the scanner's windows or a direct search.
    private func nextPrefix(after previous: Int?) -> Int? {
        guard let scanner else {
            return AnnexB.nextStartCodePrefix(in: bytes, from: previous.map { $0 + 3 } ?? 0)
        }
        while prefixIndex == prefixes.count {
            guard let window = scanner.nextWindow() else { return nil }
            prefixes = window
            prefixIndex = 0
        }
        defer { prefixIndex += 1 }
        return prefixes[prefixIndex]
    }

    func next() -> NALUnitBuffer? {
        if !started {
            started = true
            current = nextPrefix(after: nil)
        }
        while let prefix = current {
            let following = nextPrefix(after: prefix)
            current = following
            if let nal = AnnexB.nalUnit(in: bytes, prefix: prefix, nextPrefix: following) {
                return NALUnitBuffer(location: nal, bytes: UnsafeRawBufferPointer(rebasing: bytes[nal.payload]), owner: owner)
            }
        }
        return nil
    }
}

/// Bytes with a stable address for as long as this object lives.
final class ByteStorage: @unchecked Sendable {  // written once, in init
    let bytes: UnsafeMutableRawBufferPointer

    init(_ source: [UInt8]) {
        bytes = .allocate(byteCount: max(source.count, 1), alignment: 16)
        source.withUnsafeBytes { bytes.copyMemory(from: $0) }
        if source.isEmpty { bytes.storeBytes(of: 0, as: UInt8.self) }
    }

    init(copying source: UnsafeRawBufferPointer) {
        bytes = .allocate(byteCount: max(source.count, 1), alignment: 16)
        if let base = source.baseAddress { bytes.baseAddress!.copyMemory(from: base, byteCount: source.count) }
    }

    deinit { bytes.deallocate() }
}

/// Finds the start codes of a large mapped file ahead of the reader, a batch at a time.
private protocol PrefixScanner: AnyObject {
    /// The prefixes of the next part of the file, in order; nil after the last.
    func nextWindow() -> [Int]?
    /// Stops the helper and waits for it.
    func cancel()
}

/// Searches a large mapped file in two halves at once: this thread prefaults and searches the
/// first (about 47%), a helper the second, each with one `MADV_POPULATE_READ` call for its
/// pages. A prefix belongs to the half it starts in, so together they give every prefix once.
/// Measured (500 MB, 2 cores): about 10% faster than reading through the kernel, and the
/// search of the second half overlaps the parsing of the first.
private final class HalvesScanner: PrefixScanner {
    private let file: MappedFile
    private let split: Int
    private let second: BackgroundWork<[Int]>
    private var step = 0

    init(file: MappedFile) {
        self.file = file
        let split = min(file.count, (file.count * 47 / 100 + 4095) & ~4095)
        self.split = split
        second = BackgroundWork(name: "annexb-halves") { Self.prefixes(in: file, split..<file.count) }
    }

    fileprivate static func prefixes(in file: MappedFile, _ range: Range<Int>) -> [Int] {
        file.advise(.populate, range: range)
        var found: [Int] = []
        var i = range.lowerBound
        while let p = AnnexB.nextStartCodePrefix(in: file.bytes, from: i, before: range.upperBound) {
            found.append(p)
            i = p + 1
        }
        return found
    }

    func nextWindow() -> [Int]? {
        defer { step += 1 }
        switch step {
        case 0: return Self.prefixes(in: file, 0..<split)
        case 1: return second.wait()
        default: return nil
        }
    }

    /// The helper's half is waited for when this goes (its search is short and cannot be
    /// interrupted); nothing else is held.
    func cancel() { step = 2 }
}

/// Finds the start codes of a large mapped file a window at a time on a helper thread, at most
/// `depth` windows ahead of the reader: it prefaults each window's pages in one call and
/// searches it, and drops the pages `lag` windows behind the reader from the process. The
/// search and the page-table work thus overlap the reader's parsing. The reader may stop at
/// any window (a `break`, `--frames`): the helper is stopped and joined before the mapping can
/// go.
private final class WindowScanner: PrefixScanner {
    private let windows: ReadAhead<[Int]>

    init(file: MappedFile, window: Int = 1 << 20, depth: Int = 4, lag: Int = 4) {
        let count = (file.count + window - 1) / window
        let released = Locked(0)
        windows = ReadAhead(count: count, depth: depth, name: "annexb-windows") { k in
            // The reader has taken window k − depth, and is done with the pages well before it.
            let behind = max(0, k - depth - lag) * window
            let from = released.withLock { done -> Int? in
                guard behind > done else { return nil }
                defer { done = behind }
                return done
            }
            if let from { file.advise(.dontNeed, range: from..<behind) }
            return HalvesScanner.prefixes(in: file, (k * window)..<min(file.count, (k + 1) * window))
        }
    }

    /// The prefixes of the next window, or nil after the last.
    func nextWindow() -> [Int]? { windows.next() }

    /// Stops the helper and waits for it (it holds the file, so the mapping stays valid
    /// meanwhile).
    func cancel() { windows.cancel() }
}

// MARK: - Chunked input

/// Splits a descriptor's bytes into units, a chunk at a time.
private final class ChunkedCursor {
    enum Failure: Error { case system(SystemError), oversized(Int) }

    private let input: ChunkedInput
    private let chunk: UnsafeMutableRawBufferPointer
    private var splitter: AnnexBStreamSplitter
    private var ready: [NALUnitBuffer] = []
    private var readyIndex = 0
    private var ended = false
    private(set) var bytesRead = 0
    var leadingGarbageCount: Int { splitter.leadingGarbageCount }

    /// Bytes read before the cursor was made, taken first.
    private var prefix: [UInt8]

    init(input: ChunkedInput, chunkSize: Int, prefix: [UInt8] = []) {
        self.input = input
        self.prefix = prefix
        chunk = .allocate(byteCount: chunkSize, alignment: 16)
        splitter = AnnexBStreamSplitter(maximumNALUnitSize: .max)
    }

    deinit { chunk.deallocate() }

    func next(limit: Int) throws(Failure) -> NALUnitBuffer? {
        while readyIndex == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            guard !ended else { return nil }
            if !prefix.isEmpty {
                let bytes = prefix
                prefix = []
                bytesRead += bytes.count
                bytes.withUnsafeBytes { raw in splitter.append(raw) { location, bytes in take(location, bytes) } }
                continue
            }
            let n: Int
            do { n = try input.read(into: chunk) } catch { throw .system(error) }
            if n == 0 {
                ended = true
                splitter.finish { location, bytes in take(location, bytes) }
            } else {
                bytesRead += n
                splitter.append(UnsafeRawBufferPointer(rebasing: chunk[..<n])) { location, bytes in take(location, bytes) }
                if splitter.pendingCount > limit { throw .oversized(splitter.currentNALUnitOffset) }
            }
        }
        defer { readyIndex += 1 }
        let unit = ready[readyIndex]
        guard unit.count <= limit else { throw .oversized(unit.location.startCodeOffset) }
        return unit
    }

    private func take(_ location: AnnexBNALUnit, _ bytes: UnsafeRawBufferPointer) {
        let storage = ByteStorage(copying: bytes)
        ready.append(NALUnitBuffer(location: location, bytes: UnsafeRawBufferPointer(rebasing: storage.bytes[..<bytes.count]), owner: storage))
    }
}
