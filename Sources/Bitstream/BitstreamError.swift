/// An error in bitstream data (H.264 NAL units, MPEG-4 Audio configurations and frames), with
/// the place it was found.
///
/// The location fields say *where* the input is bad, so a command-line tool can print
/// "file.264: byte 1234 (NAL #7, SPS): num_ref_frames_in_pic_order_cnt_cycle 300 exceeds 255".
/// Offsets that the throwing layer cannot know (the byte offset of the NAL unit inside a file)
/// are filled in by the layer that does, through ``located(byteOffset:nalIndex:)``.
public struct BitstreamError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        @usableFromInline enum Base: Hashable, Sendable {
            case endOfData, invalidExpGolomb, valueOutOfRange, invalidNALUnitHeader, truncated
            case missingParameterSet, unsupported, invalidLength, invalidStructure, missingTiming, io, noPicture, limitExceeded
        }
        @usableFromInline let base: Base
        @usableFromInline init(_ base: Base) { self.base = base }

        /// The syntax needed more bits than the RBSP holds.
        public static let endOfData = Code(.endOfData)
        /// An Exp-Golomb code with more than 31 leading zero bits (§9.1 allows at most 32 bits of value).
        public static let invalidExpGolomb = Code(.invalidExpGolomb)
        /// A syntax element outside the range the standard allows.
        public static let valueOutOfRange = Code(.valueOutOfRange)
        /// forbidden_zero_bit set, or a NAL unit with no header byte.
        public static let invalidNALUnitHeader = Code(.invalidNALUnitHeader)
        /// The data ends inside a structure (a length prefix, a NAL unit).
        public static let truncated = Code(.truncated)
        /// A slice or PPS refers to a parameter set that has not been seen.
        public static let missingParameterSet = Code(.missingParameterSet)
        /// Valid syntax that this library does not interpret.
        public static let unsupported = Code(.unsupported)
        /// A length field that does not fit the data it frames.
        public static let invalidLength = Code(.invalidLength)
        /// Data whose structure is wrong in a way no other code names.
        public static let invalidStructure = Code(.invalidStructure)
        /// Timing was needed (a frame rate), the stream has none and none was given.
        public static let missingTiming = Code(.missingTiming)
        /// Reading the input failed (the reason names the system error).
        public static let io = Code(.io)
        /// The input holds no picture that can be decoded (no start code, or no slice with its
        /// SPS and PPS).
        public static let noPicture = Code(.noPicture)
        /// A value the syntax allows but over a limit set for untrusted input (a picture
        /// size, a NAL unit size); the reason names the field, its value and the limit.
        public static let limitExceeded = Code(.limitExceeded)

        /// The code's name in lowercase words, as messages print it.
        public var description: String {
            switch base {
            case .endOfData: "end of data"
            case .invalidExpGolomb: "invalid Exp-Golomb code"
            case .valueOutOfRange: "value out of range"
            case .invalidNALUnitHeader: "invalid NAL unit header"
            case .truncated: "truncated"
            case .missingParameterSet: "missing parameter set"
            case .unsupported: "unsupported"
            case .invalidLength: "invalid length"
            case .invalidStructure: "invalid structure"
            case .missingTiming: "missing timing"
            case .io: "I/O error"
            case .noPicture: "no picture"
            case .limitExceeded: "over a limit"
            }
        }
    }

    /// What kind of problem was found.
    public var code: Code
    /// What was being read and what was wrong with it.
    public var reason: String
    /// Offset of the offending data from the start of the input (file or buffer), if known.
    public var byteOffset: Int?
    /// Bit offset inside the RBSP being parsed, if the error came from a bit reader.
    public var bitOffset: Int?
    /// Zero-based index of the NAL unit in the stream, if known.
    public var nalIndex: Int?

    /// An error of kind `code` with what was wrong, and where when known.
    public init(_ code: Code, _ reason: String, byteOffset: Int? = nil, bitOffset: Int? = nil, nalIndex: Int? = nil) {
        self.code = code
        self.reason = reason
        self.byteOffset = byteOffset
        self.bitOffset = bitOffset
        self.nalIndex = nalIndex
    }

    /// The same error placed in a stream: `byteOffset` is added to any offset already present
    /// (which is then relative to the NAL unit), `nalIndex` replaces a missing one.
    public func located(byteOffset base: Int, nalIndex: Int? = nil) -> BitstreamError {
        var copy = self
        copy.byteOffset = base + (byteOffset ?? 0)
        if copy.nalIndex == nil { copy.nalIndex = nalIndex }
        return copy
    }

    /// The location (byte, NAL unit, bit) when known, then the code and the reason.
    public var description: String {
        var place: [String] = []
        if let byteOffset { place.append("byte \(byteOffset)") }
        if let nalIndex { place.append("NAL #\(nalIndex)") }
        if let bitOffset { place.append("bit \(bitOffset) of RBSP") }
        let prefix = place.isEmpty ? "" : place.joined(separator: ", ") + ": "
        // An I/O error's reason says it all ("cannot open: No such file or directory").
        return code == .io || code == .noPicture ? "\(prefix)\(reason)" : "\(prefix)\(code): \(reason)"
    }
}

extension BitstreamError {
    /// The same error with a context word before its reason ("SPS: ...").
    public func prefixed(_ context: String) -> BitstreamError {
        var copy = self
        copy.reason = "\(context): \(reason)"
        return copy
    }
}
