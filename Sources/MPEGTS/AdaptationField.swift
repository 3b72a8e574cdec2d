/// A transport packet's adaptation field (ISO/IEC 13818-1 §2.4.3.4, Table 2-6): the program
/// clock, random access and discontinuity flags, and stuffing.
///
/// Parsed from the bytes after `adaptation_field_length`; the fields after the flags this type
/// does not keep (private data, the extension) are skipped by their own lengths, each checked
/// against the field's end.
public struct AdaptationField: Sendable, Hashable {
    /// `discontinuity_indicator`: the system time base (on the PCR PID) or the continuity
    /// counter (on any PID) restarts with this packet.
    public var discontinuityIndicator: Bool
    /// `random_access_indicator`: the next PES packet of this PID starts a point to decode from.
    public var randomAccessIndicator: Bool
    /// `elementary_stream_priority_indicator`.
    public var elementaryStreamPriorityIndicator: Bool
    /// `program_clock_reference`, when `PCR_flag` is set.
    public var programClockReference: ProgramClockReference?
    /// `original_program_clock_reference`, when `OPCR_flag` is set.
    public var originalProgramClockReference: ProgramClockReference?
    /// `splice_countdown`, when `splicing_point_flag` is set.
    public var spliceCountdown: Int8?
    /// Bytes of `transport_private_data`, when present.
    public var transportPrivateDataLength: Int

    /// A field with the given flags and clock.
    public init(discontinuityIndicator: Bool = false, randomAccessIndicator: Bool = false, elementaryStreamPriorityIndicator: Bool = false,
                programClockReference: ProgramClockReference? = nil, originalProgramClockReference: ProgramClockReference? = nil,
                spliceCountdown: Int8? = nil) {
        self.discontinuityIndicator = discontinuityIndicator
        self.randomAccessIndicator = randomAccessIndicator
        self.elementaryStreamPriorityIndicator = elementaryStreamPriorityIndicator
        self.programClockReference = programClockReference
        self.originalProgramClockReference = originalProgramClockReference
        self.spliceCountdown = spliceCountdown
        transportPrivateDataLength = 0
    }

    /// Reads the field from `bytes[range]`, the bytes after `adaptation_field_length` (an empty
    /// range is a field of one stuffing byte's length 0). Throws when a flagged field runs past
    /// the end.
    public init(parsing bytes: UnsafeRawBufferPointer, _ range: Range<Int>) throws(TransportStreamError) {
        self.init()
        guard !range.isEmpty else { return }
        let flags = bytes[range.lowerBound]
        discontinuityIndicator = flags & 0x80 != 0
        randomAccessIndicator = flags & 0x40 != 0
        elementaryStreamPriorityIndicator = flags & 0x20 != 0
        var offset = range.lowerBound + 1
        func need(_ count: Int, _ field: String) throws(TransportStreamError) {
            guard offset + count <= range.upperBound else {
                throw TransportStreamError(.invalidPacket, "the adaptation field's \(field) runs past its length (\(range.count + 1) bytes)")
            }
        }
        if flags & 0x10 != 0 {
            try need(6, "PCR")
            programClockReference = ProgramClockReference(parsing: bytes, at: offset)
            offset += 6
        }
        if flags & 0x08 != 0 {
            try need(6, "OPCR")
            originalProgramClockReference = ProgramClockReference(parsing: bytes, at: offset)
            offset += 6
        }
        if flags & 0x04 != 0 {
            try need(1, "splice countdown")
            spliceCountdown = Int8(bitPattern: bytes[offset])
            offset += 1
        }
        if flags & 0x02 != 0 {
            try need(1, "private data length")
            let length = Int(bytes[offset])
            offset += 1
            try need(length, "private data")
            transportPrivateDataLength = length
            offset += length
        }
        if flags & 0x01 != 0 {
            try need(1, "extension length")
            let length = Int(bytes[offset])
            offset += 1
            try need(length, "extension")
        }
    }

    /// Bytes the field needs after `adaptation_field_length`: the flags and the clocks.
    public var encodedSize: Int {
        1 + (programClockReference != nil ? 6 : 0) + (originalProgramClockReference != nil ? 6 : 0) + (spliceCountdown != nil ? 1 : 0)
    }

    /// Appends the whole field, `adaptation_field_length` first, filled with `0xFF` stuffing to
    /// `length` bytes after the length byte (at least ``encodedSize``; 0 writes the length byte
    /// alone, one byte of stuffing in all).
    public func write(length: Int, to output: inout [UInt8]) {
        precondition(length == 0 || length >= encodedSize, "an adaptation field of \(length) bytes cannot hold \(encodedSize)")
        output.append(UInt8(length))
        guard length > 0 else { return }
        var flags: UInt8 = 0
        if discontinuityIndicator { flags |= 0x80 }
        if randomAccessIndicator { flags |= 0x40 }
        if elementaryStreamPriorityIndicator { flags |= 0x20 }
        if programClockReference != nil { flags |= 0x10 }
        if originalProgramClockReference != nil { flags |= 0x08 }
        if spliceCountdown != nil { flags |= 0x04 }
        output.append(flags)
        if let programClockReference { output += programClockReference.encoded }
        if let originalProgramClockReference { output += originalProgramClockReference.encoded }
        if let spliceCountdown { output.append(UInt8(bitPattern: spliceCountdown)) }
        output.append(contentsOf: repeatElement(0xFF, count: length - encodedSize))
    }
}
