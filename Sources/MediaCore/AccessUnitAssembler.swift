public import H264Bitstream

/// Gathers the NAL units of an Annex-B stream into access units (§7.4.1.2.3): one per picture
/// (a frame, or both fields of a pair), NAL units length-prefixed, parameter sets moved into a
/// format description made from every SPS and PPS received so far.
///
/// The part of building samples that does not depend on where timing comes from:
/// ``SampleBufferBuilder`` times the access units by picture order count and a frame rate, a
/// transport stream reader by the PES timestamps of the bytes each unit starts with.
///
/// Feed NAL units in stream order with ``append(nalUnit:at:)-(Span<UInt8>,_)``; the access unit
/// a new picture closes comes back from that call, and ``finish()`` returns the last one.
/// Memory is bounded: NAL units waiting for a picture (SEI, parameter sets, slices before their
/// parameter sets) may hold ``maximumPendingBytes`` at most.
public struct AccessUnitAssembler: Sendable {
    /// How NAL units are framed into access units.
    public struct Options: Sendable, Hashable {
        /// Bytes of each NAL unit's length prefix: 1, 2 or 4.
        public var nalUnitLengthSize: Int
        /// Keep SPS and PPS in the samples as well as in the format description (what `avc3` expects).
        public var keepsParameterSetsInBand: Bool
        /// Leave access unit delimiters (NAL type 9) out of the samples.
        public var dropsAccessUnitDelimiters: Bool
        /// Leave filler data (NAL type 12) out of the samples.
        public var dropsFillerData: Bool
        /// The sample entry type the format descriptions carry.
        public var codec: FourCharCode
        /// Leave out slices no picture can start from (before their SPS/PPS: a stream joined
        /// in the middle) instead of keeping them with the first picture, as a remuxer of a
        /// whole file does. Counted in ``AccessUnitAssembler/droppedNALUnitCount``.
        public var dropsSlicesWithoutParameterSets: Bool

        /// Options with the given framing; by default 4-byte lengths, parameter sets out of band, nothing dropped.
        public init(nalUnitLengthSize: Int = 4, keepsParameterSetsInBand: Bool = false, dropsAccessUnitDelimiters: Bool = false,
                    dropsFillerData: Bool = false, codec: FourCharCode = "avc1", dropsSlicesWithoutParameterSets: Bool = false) {
            self.nalUnitLengthSize = nalUnitLengthSize
            self.keepsParameterSetsInBand = keepsParameterSetsInBand
            self.dropsAccessUnitDelimiters = dropsAccessUnitDelimiters
            self.dropsFillerData = dropsFillerData
            self.codec = codec
            self.dropsSlicesWithoutParameterSets = dropsSlicesWithoutParameterSets
        }
    }

    /// One picture's NAL units, gathered.
    public struct AccessUnit: Sendable {
        /// The NAL units, each behind its length prefix.
        public var data: BlockBuffer
        /// The parameter sets the picture was coded with (and every other one received).
        public var formatDescription: VideoFormatDescription
        /// What the parser read of the picture: its type, order count, references.
        public var picture: PictureInfo
        /// The picture's place in decoding order, from 0.
        public var decodeIndex: Int
        /// The stream offset of the access unit's first NAL unit's start code (an access unit
        /// delimiter, an SEI, a parameter set or the first slice).
        public var firstByteOffset: Int
    }

    /// The most bytes of NAL units held while no picture takes them (SEI, AUDs and parameter
    /// sets before a picture, slices before their parameter sets): 64 MiB.
    public static let maximumPendingBytes = 64 << 20

    /// How NAL units are framed.
    public let options: Options
    /// The parser underneath: parameter sets, diagnostics, counts, and the most recent
    /// `retainingPictures` pictures.
    public private(set) var parser: H264StreamParser
    /// NAL units that could not be placed in any access unit: a stream without a single decodable picture.
    public private(set) var droppedNALUnitCount = 0
    /// NAL units removed on request (AUD, filler) or moved into the format description.
    public private(set) var removedNALUnitCount = 0
    /// Access units closed so far.
    public private(set) var accessUnitCount = 0

    private struct Building {
        var data: SampleAssembly
        var decodeIndex: Int
        var format: VideoFormatDescription
        var firstByteOffset: Int
    }
    private var current: Building?
    /// Non-VCL NAL units after the last slice: they start the next access unit unless a slice
    /// of the same picture follows (§7.4.1.2.3).
    private var pending: [Pending] = [] {
        didSet { if pending.isEmpty { pendingBytes = 0 } }
    }
    /// Bytes held in ``pending``, with a per-unit overhead.
    private var pendingBytes = 0
    /// The stream offset of the first NAL unit since the last slice (the start of the next
    /// access unit), an access unit delimiter left out included.
    private var waitingSince: Int?
    private struct Pending {
        var bytes: [UInt8]
        /// A parameter set that moves into the format description if a new picture follows.
        var outOfBand = false
    }
    private var format: VideoFormatDescription?
    private var formatParameterSets: Set<[UInt8]> = []
    private var formatIsStale = true

    /// An assembler that has seen nothing, framing with `options`; its parser keeps the last
    /// `retainingPictures` pictures.
    public init(options: Options = Options(), retainingPictures: Int) {
        self.options = options
        parser = H264StreamParser(retainingPictures: retainingPictures)
    }

    /// The offset at which the access unit being gathered started, if one is.
    public var currentFirstByteOffset: Int? { current?.firstByteOffset }

    /// Records a problem found above the parser (a timing problem) among its diagnostics.
    public mutating func report(_ severity: StreamDiagnostic.Severity, _ error: BitstreamError) {
        parser.reportExternal(severity, error)
    }

    /// Adds the next NAL unit of the stream (header byte first); `location` is its place in the
    /// stream. Returns the access unit it closed, if it starts a new picture.
    public mutating func append(nalUnit bytes: Span<UInt8>, at location: AnnexBNALUnit) throws(BitstreamError) -> AccessUnit? {
        try append(bytes, reference: nil, at: location)
    }

    /// Adds the next NAL unit from a block buffer (a slice of a mapped file, say). Slices of
    /// pictures are not copied: the access unit's data chains references to them between its
    /// length prefixes, so the memory must stay unchanged while the units are in use.
    public mutating func append(nalUnit buffer: BlockBuffer, at location: AnnexBNALUnit) throws(BitstreamError) -> AccessUnit? {
        try buffer.withUnsafeBytes { (raw) throws(BitstreamError) in
            try append(raw.bindMemory(to: UInt8.self).span, reference: buffer, at: location)
        }
    }

    /// Adds the next NAL unit as an `AnnexBReader` returns it; large units are referenced, not
    /// copied (see ``append(nalUnit:at:)-(BlockBuffer,_)``).
    public mutating func append(_ nalUnit: NALUnitBuffer) throws(BitstreamError) -> AccessUnit? {
        if nalUnit.count >= SampleAssembly.smallestReference {
            return try append(nalUnit: BlockBuffer(nalUnit), at: nalUnit.location)
        }
        return try nalUnit.withSpan { (span) throws(BitstreamError) in try append(span, reference: nil, at: nalUnit.location) }
    }

    /// Ends the stream: the access unit being gathered, with what followed its last slice.
    public mutating func finish() throws(BitstreamError) -> AccessUnit? {
        if current != nil {
            for nal in pending where !nal.outOfBand { try appendToCurrent(nal.bytes.span) }
        } else {
            droppedNALUnitCount += pending.count
        }
        pending.removeAll()
        parser.finish()
        return closeCurrent()
    }

    /// Drops what is being gathered (the bytes after a gap in the stream): the current access
    /// unit and the units waiting for the next picture. The parameter sets received stay.
    public mutating func discardPending() {
        if current != nil { droppedNALUnitCount += 1 }
        current = nil
        droppedNALUnitCount += pending.count
        pending.removeAll()
        waitingSince = nil
    }

    private mutating func hold(_ unit: Pending, at location: AnnexBNALUnit) throws(BitstreamError) {
        pendingBytes += unit.bytes.count + 64
        guard pendingBytes <= Self.maximumPendingBytes else {
            throw BitstreamError(.limitExceeded, "\(pending.count + 1) NAL units (\(pendingBytes) bytes) with no picture to go in, over the limit of \(Self.maximumPendingBytes) bytes",
                                 byteOffset: location.startCodeOffset, nalIndex: parser.nalUnitCount - 1)
        }
        pending.append(unit)
        if waitingSince == nil { waitingSince = location.startCodeOffset }
    }

    private mutating func append(_ bytes: Span<UInt8>, reference: BlockBuffer?, at location: AnnexBNALUnit) throws(BitstreamError) -> AccessUnit? {
        guard !bytes.isEmpty else { return nil }
        let picturesBefore = parser.pictureCount
        let errorsBefore = parser.errorCount
        let parsed = parser.consume(bytes, at: location)
        let type = parsed.header.nalUnitType
        let failed = parser.errorCount > errorsBefore
        var closed: AccessUnit?
        switch type.rawValue {
        case 1...5:
            let startsPicture = parser.pictureCount > picturesBefore
            if startsPicture {
                closed = closeCurrent()
                try begin(decodeIndex: picturesBefore, firstByteOffset: waitingSince ?? location.startCodeOffset)
                if reference == nil { current!.data.tail.reserveCapacity(bytes.count + 64) }
                // Parameter sets before the picture are in its format description now.
                if !options.keepsParameterSetsInBand {
                    let before = pending.count
                    pending.removeAll { $0.outOfBand }
                    removedNALUnitCount += before - pending.count
                }
            } else if current == nil {
                // A slice no picture could start from (no parameter sets yet, a broken header):
                // it goes with the first picture, as a remuxer keeps it, or it goes.
                if options.dropsSlicesWithoutParameterSets {
                    droppedNALUnitCount += 1 + pending.count
                    pending.removeAll { !$0.outOfBand }
                    waitingSince = nil
                    return nil
                }
                try hold(Pending(bytes: bytes.array), at: location)
                return nil
            }
            // Parameter sets between the slices of one sample (a PPS before the second field)
            // cannot move out: the format description holds one per id. They stay in band.
            for nal in pending { try appendToCurrent(nal.bytes.span) }
            pending.removeAll()
            waitingSince = nil
            try appendToCurrent(bytes, reference: reference)
        case NALUnitType.sps.rawValue, NALUnitType.pps.rawValue:
            if !failed && !formatParameterSets.contains(bytes.array) { formatIsStale = true }
            try hold(Pending(bytes: bytes.array, outOfBand: !failed && !options.keepsParameterSetsInBand), at: location)
        case NALUnitType.accessUnitDelimiter.rawValue:
            if options.dropsAccessUnitDelimiters {
                removedNALUnitCount += 1
                // An AUD starts the next access unit even when it is left out.
                if waitingSince == nil { waitingSince = location.startCodeOffset }
            } else {
                try hold(Pending(bytes: bytes.array), at: location)
            }
        case NALUnitType.fillerData.rawValue where options.dropsFillerData:
            removedNALUnitCount += 1
        case 6, 13...18:
            try hold(Pending(bytes: bytes.array), at: location)
        default:
            // End of sequence/stream, filler, auxiliary and unspecified units follow the picture they end.
            if pending.isEmpty && current != nil { try appendToCurrent(bytes) } else { try hold(Pending(bytes: bytes.array), at: location) }
        }
        return closed
    }

    // MARK: Building an access unit

    private mutating func appendToCurrent(_ nal: Span<UInt8>, reference: BlockBuffer? = nil) throws(BitstreamError) {
        do {
            if let reference, reference.count >= SampleAssembly.smallestReference {
                try AVCC.appendLengthPrefix(reference.count, lengthSize: options.nalUnitLengthSize, to: &current!.data.tail)
                current!.data.closeTail()
                current!.data.segments.append(reference)
            } else {
                try AVCC.append(nalUnit: nal, lengthSize: options.nalUnitLengthSize, to: &current!.data.tail)
            }
        } catch {
            throw error.prefixed("picture \(current!.decodeIndex)")
        }
    }

    private mutating func begin(decodeIndex: Int, firstByteOffset: Int) throws(BitstreamError) {
        if formatIsStale || format == nil { try makeFormat(for: parser.picture(decodeIndex)!) }
        current = Building(data: SampleAssembly(), decodeIndex: decodeIndex, format: format!, firstByteOffset: firstByteOffset)
    }

    /// A format description from every parameter set received so far, the picture's SPS first.
    private mutating func makeFormat(for picture: PictureInfo) throws(BitstreamError) {
        let registry = parser.registry
        let spss = registry.sequenceParameterSets.sorted { ($0.key == picture.seqParameterSetId ? 0 : 1, $0.key) < ($1.key == picture.seqParameterSetId ? 0 : 1, $1.key) }
        let ppss = registry.pictureParameterSets.sorted { $0.key < $1.key }
        var description: VideoFormatDescription
        do {
            description = try VideoFormatDescription(sequenceParameterSets: spss.map(\.value.nalUnit), pictureParameterSets: ppss.map(\.value.nalUnit),
                                                     nalUnitLengthSize: options.nalUnitLengthSize, codec: options.codec)
        } catch {
            // A PPS left over from an SPS since replaced may no longer parse: keep the sets in use.
            let used = ppss.filter { $0.value.value.seqParameterSetId == picture.seqParameterSetId }
            do {
                description = try VideoFormatDescription(sequenceParameterSets: [spss[0].value.nalUnit], pictureParameterSets: used.map(\.value.nalUnit),
                                                         nalUnitLengthSize: options.nalUnitLengthSize, codec: options.codec)
            } catch { throw error.prefixed("format description for picture \(picture.decodeIndex)") }
        }
        if let format, format == description { description = format }
        format = description
        formatParameterSets = Set(description.sequenceParameterSets + description.pictureParameterSets)
        formatIsStale = false
    }

    private mutating func closeCurrent() -> AccessUnit? {
        guard let building = current else { return nil }
        current = nil
        accessUnitCount += 1
        return AccessUnit(data: building.data.finished(), formatDescription: building.format, picture: parser.picture(building.decodeIndex)!,
                          decodeIndex: building.decodeIndex, firstByteOffset: building.firstByteOffset)
    }
}

/// A sample's bytes as they are gathered: copied NAL units and prefixes in `tail`, and
/// referenced NAL units between them.
private struct SampleAssembly {
    /// NAL units smaller than this are copied: a reference costs a segment.
    static let smallestReference = 4096
    var tail: [UInt8] = []
    var segments: [BlockBuffer] = []

    mutating func closeTail() {
        segments.append(BlockBuffer(tail))
        tail = []
    }

    func finished() -> BlockBuffer {
        segments.isEmpty ? BlockBuffer(tail) : BlockBuffer(chaining: segments + [BlockBuffer(tail)])
    }
}

extension Span<UInt8> {
    /// A copy of the bytes.
    var array: [UInt8] { withUnsafeBufferPointer { Array($0) } }
}
