/// nal_unit_type (ITU-T H.264 Table 7-1).
public struct NALUnitType: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The type number, 0...31.
    public let rawValue: UInt8
    /// The type with number `rawValue`; bits above the low five are dropped.
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue & 0x1F }

    /// Type 0, unspecified: not used by the decoding process.
    public static let unspecified = NALUnitType(rawValue: 0)
    /// Coded slice of a non-IDR picture.
    public static let nonIDRSlice = NALUnitType(rawValue: 1)
    /// Coded slice data partition A: the slice header and macroblock headers.
    public static let sliceDataPartitionA = NALUnitType(rawValue: 2)
    /// Coded slice data partition B: intra residual data.
    public static let sliceDataPartitionB = NALUnitType(rawValue: 3)
    /// Coded slice data partition C: inter residual data.
    public static let sliceDataPartitionC = NALUnitType(rawValue: 4)
    /// Coded slice of an IDR picture.
    public static let idrSlice = NALUnitType(rawValue: 5)
    /// Supplemental enhancement information (§7.3.2.3).
    public static let sei = NALUnitType(rawValue: 6)
    /// Sequence parameter set (§7.3.2.1).
    public static let sps = NALUnitType(rawValue: 7)
    /// Picture parameter set (§7.3.2.2).
    public static let pps = NALUnitType(rawValue: 8)
    /// Access unit delimiter (§7.3.2.4).
    public static let accessUnitDelimiter = NALUnitType(rawValue: 9)
    /// End of sequence (§7.3.2.5).
    public static let endOfSequence = NALUnitType(rawValue: 10)
    /// End of stream (§7.3.2.6).
    public static let endOfStream = NALUnitType(rawValue: 11)
    /// Filler data (§7.3.2.7).
    public static let fillerData = NALUnitType(rawValue: 12)
    /// Sequence parameter set extension (§7.3.2.1.2).
    public static let spsExtension = NALUnitType(rawValue: 13)
    /// Prefix NAL unit, carrying the SVC/MVC header extension of the slice after it.
    public static let prefix = NALUnitType(rawValue: 14)
    /// Subset sequence parameter set, for SVC, MVC and 3D-AVC (§7.3.2.1.3).
    public static let subsetSPS = NALUnitType(rawValue: 15)
    /// Depth parameter set, for 3D-AVC.
    public static let dps = NALUnitType(rawValue: 16)
    /// Coded slice of an auxiliary coded picture without partitioning (alpha planes).
    public static let auxiliarySlice = NALUnitType(rawValue: 19)
    /// Coded slice extension: SVC and MVC slices.
    public static let sliceExtension = NALUnitType(rawValue: 20)
    /// Coded slice extension for a depth view component (3D-AVC).
    public static let sliceExtensionDepth = NALUnitType(rawValue: 21)

    /// A coded slice of the primary picture (types 1–5): what access-unit detection and
    /// picture counting look at.
    @inlinable public var isVCL: Bool { rawValue >= 1 && rawValue <= 5 }
    /// Whether the type is a slice (1 or 5); partitions 2–4 carry a slice header too (in A).
    @inlinable public var carriesSliceHeader: Bool { rawValue == 1 || rawValue == 2 || rawValue == 5 }

    /// Orders types by number.
    public static func < (a: NALUnitType, b: NALUnitType) -> Bool { a.rawValue < b.rawValue }

    /// A short name, as used in `inspect` output ("SPS", "IDR", "non-IDR slice", ...).
    public var name: String {
        switch rawValue {
        case 0: "unspecified"
        case 1: "non-IDR slice"
        case 2: "partition A"
        case 3: "partition B"
        case 4: "partition C"
        case 5: "IDR slice"
        case 6: "SEI"
        case 7: "SPS"
        case 8: "PPS"
        case 9: "AUD"
        case 10: "end of sequence"
        case 11: "end of stream"
        case 12: "filler"
        case 13: "SPS extension"
        case 14: "prefix"
        case 15: "subset SPS"
        case 16: "DPS"
        case 19: "auxiliary slice"
        case 20: "slice extension"
        case 21: "3D slice extension"
        case 17, 18, 22, 23: "reserved \(rawValue)"
        default: "unspecified \(rawValue)"
        }
    }

    /// The type's short ``name``.
    public var description: String { name }
}

/// nal_unit_header (ITU-T H.264 §7.3.1): the first byte of every NAL unit.
public struct NALUnitHeader: Hashable, Sendable {
    /// forbidden_zero_bit; always 0 in a valid stream.
    public var forbiddenZeroBit: Bool
    /// nal_ref_idc: non-zero for parameter sets and slices of reference pictures.
    public var nalRefIdc: UInt8
    /// nal_unit_type.
    public var nalUnitType: NALUnitType

    /// The header packed in `byte`: forbidden_zero_bit, nal_ref_idc and nal_unit_type.
    @inlinable
    public init(byte: UInt8) {
        forbiddenZeroBit = byte & 0x80 != 0
        nalRefIdc = (byte >> 5) & 3
        nalUnitType = NALUnitType(rawValue: byte & 0x1F)
    }

    /// A header with forbidden_zero_bit 0; `nalRefIdc` must be below 4.
    public init(nalRefIdc: UInt8, nalUnitType: NALUnitType) {
        precondition(nalRefIdc < 4)
        forbiddenZeroBit = false
        self.nalRefIdc = nalRefIdc
        self.nalUnitType = nalUnitType
    }

    /// The header byte.
    public var byte: UInt8 { (forbiddenZeroBit ? 0x80 : 0) | nalRefIdc << 5 | nalUnitType.rawValue }

    /// Number of header bytes, including the 3-byte SVC/MVC/3D-AVC extension of types 14, 20 and 21.
    public var size: Int {
        switch nalUnitType.rawValue {
        case 14, 20, 21: 4
        default: 1
        }
    }
}
