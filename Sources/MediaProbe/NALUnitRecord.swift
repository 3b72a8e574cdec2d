public import H264Bitstream

/// One NAL unit as a report lists it (`h264kit inspect --nals`): where it is, its header, and
/// for a slice its type, frame_num and picture order count.
public struct NALUnitRecord: Codable, Hashable, Sendable {
    /// The byte offset of its start code in the stream.
    public var offset: Int
    /// Its size in bytes, start code excluded.
    public var size: Int
    /// nal_unit_type (ITU-T H.264 Table 7-1).
    public var type: Int
    /// The type's name.
    public var typeName: String
    /// nal_ref_idc.
    public var nalRefIdc: Int
    /// A slice's slice_type, by name.
    public var sliceType: String?
    /// A slice's frame_num.
    public var frameNum: Int?
    /// A slice's picture order count.
    public var poc: Int?
    /// The access unit it belongs to, from 0.
    public var accessUnit: Int

    /// The record of a NAL unit the stream parser has read.
    public init(_ parsed: ParsedNALUnit) {
        offset = parsed.location.startCodeOffset
        size = parsed.size
        type = Int(parsed.header.nalUnitType.rawValue)
        typeName = parsed.header.nalUnitType.name
        nalRefIdc = Int(parsed.header.nalRefIdc)
        sliceType = parsed.slice.map { "\($0.sliceType)" }
        frameNum = parsed.slice?.frameNum
        poc = parsed.picOrderCnt
        accessUnit = parsed.accessUnitIndex
    }

    /// The column names of ``line``, tab-separated.
    public static let header = "offset\tsize\ttype\tref_idc\tslice\tframe_num\tpoc"

    /// The record as one tab-separated line.
    public var line: String {
        "\(offset)\t\(size)\t\(typeName)\t\(nalRefIdc)\t\(sliceType ?? "-")\t\(frameNum.map(String.init) ?? "-")\t\(poc.map(String.init) ?? "-")"
    }
}
