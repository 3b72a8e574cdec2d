import Bitstream

/// Cuts an ADTS byte stream (a `.aac` file, the payload of an MPEG-2 transport stream's AAC
/// PES packets) into AAC frames, whatever the chunks it comes in: a frame may straddle chunks
/// (PES packets), several may share one. A pure state machine: bytes in, frames out, nothing
/// else held but one frame's bytes.
///
/// Damage is found and said, never passed on: bytes before a sync word are skipped (a header
/// found away from where the last frame ended must be followed by another, or match the last
/// one's rate and channels, before it is believed); a frame of several raw data blocks is
/// left out (one AAC frame per sample is what a container carries, and FFmpeg refuses them
/// too); a frame the input ends inside is left out. Each is counted in ``statistics`` and the
/// first ``maximumProblemsKept`` kept in ``problems`` with their offset in the stream.
public struct ADTSFrameSplitter: Sendable {
    /// One AAC frame.
    public struct Frame: Sendable {
        /// Its ADTS header.
        public var header: ADTSHeader
        /// The raw data block (the header and any CRC left out).
        public var payload: [UInt8]
        /// Where its header started in the stream (the bytes given so far, from 0).
        public var offset: Int
    }

    /// One AAC frame seen where its bytes lie, for the length of one call: a reader that keeps
    /// frames as slices of the buffers it was given (no copy per frame) uses this form.
    public struct FrameView {
        /// Its ADTS header.
        public var header: ADTSHeader
        /// The raw data block (the header and any CRC left out), valid during the call only.
        public var payload: UnsafeRawBufferPointer
        /// Where the raw data block lies in the bytes given to the `append` that cut it, when
        /// it lies wholly there; nil for a frame gathered from several appends.
        public var rangeInAppendedBytes: Range<Int>?
        /// Where its header started in the stream (the bytes given so far, from 0).
        public var offset: Int
    }

    /// Something wrong in the stream, with where.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// What was wrong.
        public enum Kind: Sendable, Hashable {
            /// Bytes that were no frame, skipped to the next sync word.
            case skipped(bytes: Int)
            /// A frame of several raw data blocks, left out.
            case severalRawDataBlocks(count: Int)
            /// A header that does not parse (a reserved rate, a length shorter than the
            /// header), skipped.
            case invalidHeader(String)
            /// The stream ended inside a frame (`missing` bytes short), left out.
            case truncated(missing: Int)
            /// A frame whose rate, object type or channels differ from the stream's first.
            case changedStream(ADTSHeader)
        }
        /// What was wrong.
        public var kind: Kind
        /// Where in the stream.
        public var offset: Int

        /// "byte 1234: 56 bytes skipped to the next sync word", and so on.
        public var description: String {
            switch kind {
            case .skipped(let count): "byte \(offset): \(count) byte(s) that are no ADTS frame, skipped"
            case .severalRawDataBlocks(let count): "byte \(offset): an ADTS frame of \(count) raw data blocks, left out (one AAC frame per ADTS frame is carried)"
            case .invalidHeader(let reason): "byte \(offset): \(reason); skipped"
            case .truncated(let missing): "byte \(offset): the stream ends \(missing) byte(s) before the end of this frame; left out"
            case .changedStream(let header): "byte \(offset): the stream changes to \(header.audioObjectType) at \(header.samplingFrequency) Hz, channel configuration \(header.channelConfiguration)"
            }
        }
    }

    /// Counts of what was cut and what was wrong.
    public struct Statistics: Sendable, Hashable {
        /// Frames handed out.
        public var frames = 0
        /// Bytes skipped looking for a sync word.
        public var skippedBytes = 0
        /// Frames left out: several raw data blocks, a cut end, an invalid header.
        public var framesLeftOut = 0
    }

    /// Problems kept in ``problems`` at most (all are counted).
    public static let maximumProblemsKept = 100

    /// The counts so far.
    public private(set) var statistics = Statistics()
    /// The first problems, each with where it was.
    public private(set) var problems: [Problem] = []
    /// The first frame's header: the stream's rate, object type and channels.
    public private(set) var firstHeader: ADTSHeader?

    /// Bytes not yet cut (at most a frame and a header).
    private var pending: [UInt8] = []
    /// The stream offset of `pending[0]`.
    private var pendingOffset = 0
    /// Whether the next byte is where the last frame ended (no resynchronization needed).
    private var inStep = false
    private var lastHeader: ADTSHeader?

    /// A splitter at the start of a stream.
    public init() {}

    /// Bytes given so far.
    public var bytesTaken: Int { pendingOffset + pending.count }

    /// Takes the next bytes of the stream; returns the frames they complete, in order.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) -> [Frame] {
        var frames: [Frame] = []
        append(bytes) { frames.append($0) }
        return frames
    }

    /// Takes the next bytes of the stream and gives `body` each frame they complete, in order
    /// (no array of them: the form a reader of many frames uses). `body` must not use the
    /// splitter.
    public mutating func append(_ bytes: UnsafeRawBufferPointer, each body: (Frame) -> Void) {
        append(bytes) { (view: FrameView) in body(Frame(header: view.header, payload: Array(view.payload.bindMemory(to: UInt8.self)), offset: view.offset)) }
    }

    /// Takes the next bytes of the stream and shows `body` each frame they complete, in order,
    /// where it lies: a frame wholly inside `bytes` is cut from them in place (with its range
    /// there), and only a frame begun in an earlier append is gathered. Whatever the chunks,
    /// the frames, their offsets and the problems said are those of ``append(_:each:)``.
    /// `body` must not use the splitter.
    public mutating func append(_ bytes: UnsafeRawBufferPointer, viewing body: (FrameView) -> Void) {
        let buffer = bytes.bindMemory(to: UInt8.self)
        var start = 0
        if !pending.isEmpty {
            // A frame begun before: complete it with just the bytes it lacks (its header says
            // how many), so the frames after it are cut where they lie.
            func gather(_ count: Int) {
                pending.append(contentsOf: buffer[start..<(start + count)])
                start += count
            }
            if pending.count < ADTSHeader.minimumSize { gather(min(buffer.count - start, ADTSHeader.minimumSize - pending.count)) }
            let lacking = pending.count >= ADTSHeader.minimumSize && pending[0] == 0xFF && pending[1] & 0xF6 == 0xF0
                ? (try? pending.withTypedBytes { (raw) throws(BitstreamError) in try ADTSHeader(bytes: raw) }).map { $0.frameLength - pending.count } : nil
            gather(min(buffer.count - start, max(0, lacking ?? buffer.count)))
            cutPending(atEnd: false, each: body)
            if !pending.isEmpty {
                gather(buffer.count - start)
                cutPending(atEnd: false, each: body)
                return
            }
        }
        let rest = UnsafeBufferPointer(rebasing: buffer[start...])
        let used = cut(rest, from: pendingOffset, atEnd: false) { header, range, offset in
            let inBytes = (range.lowerBound + start)..<(range.upperBound + start)
            body(FrameView(header: header, payload: UnsafeRawBufferPointer(rebasing: bytes[inBytes]), rangeInAppendedBytes: inBytes, offset: offset))
        }
        pendingOffset += used
        pending.append(contentsOf: rest[used...])
    }

    /// Takes the next bytes of the stream.
    public mutating func append(_ bytes: [UInt8]) -> [Frame] {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Ends the stream: a frame it ends inside is left out (and said).
    public mutating func finish() -> [Frame] {
        var frames: [Frame] = []
        cutPending(atEnd: true) { view in frames.append(Frame(header: view.header, payload: Array(view.payload.bindMemory(to: UInt8.self)), offset: view.offset)) }
        if !pending.isEmpty {
            if let header = try? pending.withTypedBytes({ (raw) throws(BitstreamError) in try ADTSHeader(bytes: raw) }), header.frameLength > pending.count {
                note(.truncated(missing: header.frameLength - pending.count), at: pendingOffset)
                statistics.framesLeftOut += 1
            } else {
                note(.skipped(bytes: pending.count), at: pendingOffset)
                statistics.skippedBytes += pending.count
            }
            pendingOffset += pending.count
            pending.removeAll()
        }
        return frames
    }

    /// Forgets the bytes of a frame not yet whole (the packet that carried the rest was lost):
    /// they are not glued to what comes next, and the next frame is looked for as after damage.
    /// What was forgotten is counted and said.
    public mutating func resynchronize() {
        if !pending.isEmpty {
            note(.truncated(missing: 0), at: pendingOffset)
            statistics.framesLeftOut += 1
            pendingOffset += pending.count
            pending.removeAll(keepingCapacity: true)
        }
        inStep = false
    }

    private mutating func note(_ kind: Problem.Kind, at offset: Int) {
        if problems.count < Self.maximumProblemsKept { problems.append(Problem(kind: kind, offset: offset)) }
    }

    /// Cuts every whole frame from `pending`, showing each gathered there.
    private mutating func cutPending(atEnd: Bool, each body: (FrameView) -> Void) {
        var bytes = pending
        pending = []
        let used = bytes.withUnsafeBufferPointer { buffer in
            cut(buffer, from: pendingOffset, atEnd: atEnd) { header, range, offset in
                body(FrameView(header: header, payload: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[range]), rangeInAppendedBytes: nil, offset: offset))
            }
        }
        bytes.removeFirst(used)
        pendingOffset += used
        pending = consume bytes
    }

    /// Cuts every whole frame from `pending` (the stream from `streamOffset` on): gives `body`
    /// each frame's header, its raw data block's range in `pending` and its offset in the
    /// stream; returns how many bytes it used (the rest waits for more, unless `atEnd`).
    private mutating func cut(_ pending: UnsafeBufferPointer<UInt8>, from streamOffset: Int, atEnd: Bool,
                              each body: (ADTSHeader, Range<Int>, Int) -> Void) -> Int {
        var start = 0
        while pending.count - start >= ADTSHeader.minimumSize {
            // Find a sync word.
            if !(pending[start] == 0xFF && pending[start + 1] & 0xF6 == 0xF0) {
                var next = start + 1
                while next + 1 < pending.count && !(pending[next] == 0xFF && pending[next + 1] & 0xF6 == 0xF0) { next += 1 }
                if next + 1 >= pending.count && !atEnd { next = pending.count - 1 }  // the last byte may begin a sync word
                if next + 1 >= pending.count && atEnd { next = pending.count }
                skip(next - start, at: streamOffset + start)
                start = next
                inStep = false
                continue
            }
            let header: ADTSHeader
            do throws(BitstreamError) {
                header = try ADTSHeader(bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(pending)[start...]))
            } catch where error.code == .truncated && !atEnd {
                break
            } catch {
                note(.invalidHeader(error.reason), at: streamOffset + start)
                skip(1, at: streamOffset + start, said: false)
                start += 1
                inStep = false
                continue
            }
            let end = start + header.frameLength
            if !inStep {
                // Away from where the last frame ended: believe the header only when the next
                // frame's sync word follows it, or it matches the stream so far.
                let matches = lastHeader.map { header.isSameStream(as: $0) } ?? false
                if end + 1 < pending.count {
                    if !(pending[end] == 0xFF && pending[end + 1] & 0xF6 == 0xF0) && !matches {
                        skip(1, at: streamOffset + start)
                        start += 1
                        continue
                    }
                } else if !atEnd && !matches {
                    break  // wait for the next frame's sync word
                }
            }
            guard end <= pending.count else { break }
            inStep = true
            if let first = firstHeader, !header.isSameStream(as: first), !(lastHeader.map { header.isSameStream(as: $0) } ?? false) {
                note(.changedStream(header), at: streamOffset + start)
            }
            lastHeader = header
            if firstHeader == nil { firstHeader = header }
            if header.rawDataBlockCount > 1 {
                note(.severalRawDataBlocks(count: header.rawDataBlockCount), at: streamOffset + start)
                statistics.framesLeftOut += 1
            } else {
                body(header, (start + header.size)..<end, streamOffset + start)
                statistics.frames += 1
            }
            start = end
        }
        return start
    }

    /// Counts `count` bytes skipped at `offset`, merged into the last skip when it ends there.
    private mutating func skip(_ count: Int, at offset: Int, said: Bool = true) {
        guard count > 0 else { return }
        statistics.skippedBytes += count
        guard said else { return }
        if let last = problems.last, case .skipped(let before) = last.kind, last.offset + before == offset {
            problems[problems.count - 1].kind = .skipped(bytes: before + count)
        } else {
            note(.skipped(bytes: count), at: offset)
        }
    }
}

extension ProgramConfigElement {
    /// The program config element that begins an AAC raw data block, if it begins with one
    /// (`id_syn_ele` 5, ID_PCE): how an ADTS stream with channel configuration 0 gives its layout.
    public static func leading(_ rawDataBlock: [UInt8]) -> ProgramConfigElement? {
        guard let first = rawDataBlock.first, first >> 5 == 5 else { return nil }
        var reader = BitReader(rawDataBlock.span)
        _ = try? reader.skip(3)
        return try? ProgramConfigElement(parsing: &reader, alignmentOrigin: 0)
    }
}
