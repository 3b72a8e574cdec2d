public import MediaCore

// Top-level boxes other than the movie: ISO/IEC 14496-12 §4.3 (ftyp) and §8.1.2 (free, skip).

/// `ftyp`: the brands a file conforms to (QuickTime: `qt  `).
public struct FileTypeBox: Box {
    /// The box type, `ftyp`.
    public var type: FourCharCode { "ftyp" }
    /// major_brand: the best use of the file (`isom`, `mp42`, `qt  `).
    public var majorBrand: FourCharCode
    /// minor_version: the major brand's version.
    public var minorVersion: UInt32
    /// compatible_brands: every specification the file conforms to.
    public var compatibleBrands: [FourCharCode]
    /// Bytes after the last whole brand.
    public var trailer: [UInt8] = []

    /// A box of the given brands, with no trailer.
    public init(majorBrand: FourCharCode, minorVersion: UInt32, compatibleBrands: [FourCharCode]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        majorBrand = try reader.fourCC("major_brand")
        minorVersion = try reader.u32("minor_version")
        compatibleBrands = []
        while reader.remaining >= 4 { compatibleBrands.append(try reader.fourCC("compatible_brand")) }
        trailer = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.fourCC(majorBrand)
        writer.u32(minorVersion)
        for brand in compatibleBrands { writer.fourCC(brand) }
        writer.append(trailer)
    }
}

/// `styp`: the brands of a media segment (ISO/IEC 14496-12 §8.16.2), as `ftyp` gives a file's:
/// `msdh` and `msix` for a DASH/HLS media segment with an index, `cmfs` for a CMAF segment.
public struct SegmentTypeBox: Box {
    /// The box type, `styp`.
    public var type: FourCharCode { "styp" }
    /// major_brand.
    public var majorBrand: FourCharCode
    /// minor_version.
    public var minorVersion: UInt32
    /// compatible_brands.
    public var compatibleBrands: [FourCharCode]

    /// A box of the given brands.
    public init(majorBrand: FourCharCode, minorVersion: UInt32 = 0, compatibleBrands: [FourCharCode]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        majorBrand = try reader.fourCC("major_brand")
        minorVersion = try reader.u32("minor_version")
        compatibleBrands = []
        while reader.remaining >= 4 { compatibleBrands.append(try reader.fourCC("compatible_brand")) }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.fourCC(majorBrand)
        writer.u32(minorVersion)
        for brand in compatibleBrands { writer.fourCC(brand) }
    }
}

/// `free`, `skip` or `wide`: space that means nothing (padding, room to grow an index).
public struct FreeSpaceBox: Box {
    /// The box type: `free`, `skip` or `wide`.
    public var type: FourCharCode
    /// The payload, usually zeros.
    public var payload: [UInt8]

    /// A `free` box of `size` bytes in all (at least 8).
    public init(size: Int, type: FourCharCode = "free") {
        self.type = type
        payload = [UInt8](repeating: 0, count: max(0, size - 8))
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        payload = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) { writer.append(payload) }
}
