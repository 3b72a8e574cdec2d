/// One scaling_list() (ITU-T H.264 §7.3.2.1.1.1) as transmitted.
public struct ScalingList: Hashable, Sendable {
    /// useDefaultScalingMatrixFlag: the first delta_scale made nextScale 0, so the default
    /// matrix of Table 7-3/7-4 applies.
    public var useDefaultScalingMatrix: Bool
    /// The list in zig-zag (coded) order: 16 or 64 entries.
    public var values: [UInt8]

    /// Parses a list of `size` entries (16 for 4x4, 64 for 8x8).
    public init(parsing reader: inout BitReader, size: Int) throws(BitstreamError) {
        var lastScale = 8
        var nextScale = 8
        var values: [UInt8] = []
        values.reserveCapacity(size)
        var useDefault = false
        for j in 0..<size {
            if nextScale != 0 {
                let deltaScale = try reader.se("delta_scale", in: -128...127)
                nextScale = (lastScale + deltaScale + 256) % 256
                useDefault = j == 0 && nextScale == 0
            }
            let value = nextScale == 0 ? lastScale : nextScale
            values.append(UInt8(value))
            lastScale = value
        }
        self.useDefaultScalingMatrix = useDefault
        self.values = values
    }

    /// Writes the list back as delta_scale values (§7.3.2.1.1.1 in reverse).
    public func write(to writer: inout BitWriter) {
        if useDefaultScalingMatrix { writer.se(-8); return }  // 8 + (-8) = 0 → default
        var lastScale = 8
        // Trailing entries equal to the last explicit one can be coded by nextScale = 0.
        var count = values.count
        while count > 1 && values[count - 1] == values[count - 2] { count -= 1 }
        for j in 0..<values.count {
            if j == count {
                writer.se(Int32(((0 - lastScale + 128 + 256) % 256) - 128))
                return
            }
            let delta = (Int(values[j]) - lastScale + 128 + 256) % 256 - 128
            writer.se(Int32(delta))
            lastScale = Int(values[j])
        }
    }
}

/// The scaling matrices of an SPS or PPS: for each of the 6 (4x4) and 2 or 6 (8x8) lists, nil
/// when the list's present flag was 0 (fall-back rule A or B applies, §7.4.2.1.1 Table 7-2).
public struct ScalingMatrix: Hashable, Sendable {
    /// The lists in transmission order (4x4 intra Y, Cb, Cr, inter Y, Cb, Cr, then 8x8); nil where not present.
    public var lists: [ScalingList?]

    /// Parses `count` scaling_list_present_flag values and the lists present (16 entries for the first 6, else 64).
    public init(parsing reader: inout BitReader, count: Int) throws(BitstreamError) {
        var lists: [ScalingList?] = []
        for i in 0..<count {
            if try reader.flag("scaling_list_present_flag") {
                lists.append(try ScalingList(parsing: &reader, size: i < 6 ? 16 : 64))
            } else {
                lists.append(nil)
            }
        }
        self.lists = lists
    }
}
