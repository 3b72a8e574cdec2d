public import MediaCore

/// A box (an ISO/IEC 14496-12 §4.2 box, a QuickTime atom) that this package reads and writes:
/// one type per box, which parses itself from a ``BoxReader`` over its payload and writes its
/// payload to a ``BoxWriter`` (the swift-asn1 and Eyevinn/mp4ff model). Every field a box
/// holds is kept, reserved ones included, so `parse(serialize(box)) == box` and a box read
/// from a file writes back to the same bytes.
public protocol Box: Sendable, Hashable {
    /// The box type (a few box types share one structure: `avc1`/`avc3`, `stco` is not one of them).
    var type: FourCharCode { get }
    /// Parses the payload; `reader.boxType` is the type found in the header.
    init(parsing reader: inout BoxReader) throws(ContainerError)
    /// Writes the payload (everything after the size and type).
    func writePayload(to writer: inout BoxWriter)
}

extension Box {
    /// Writes the whole box: size, type and payload.
    public func write(to writer: inout BoxWriter) {
        writer.box(type) { writePayload(to: &$0) }
    }

    /// The box's bytes.
    public var serialized: [UInt8] {
        var writer = BoxWriter()
        write(to: &writer)
        return writer.bytes
    }

    /// Whether `other` is a box of the same type and value.
    public func isEqual(to other: any Box) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

/// A box of any type: a known one parsed into its own type, or an ``UnknownBox``.
public struct AnyBox: Sendable, Hashable, CustomStringConvertible {
    /// The box.
    public let box: any Box

    /// Wraps `box`.
    public init(_ box: any Box) { self.box = box }

    /// The box type.
    public var type: FourCharCode { box.type }

    /// The box as `B`, if it is one.
    public func `as`<B: Box>(_: B.Type) -> B? { box as? B }

    /// Whether two boxes are of the same type and value.
    public static func == (a: AnyBox, b: AnyBox) -> Bool { a.box.isEqual(to: b.box) }

    /// Hashes the box type and the box's own fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(box.type)
        box.hash(into: &hasher)
    }

    /// "xxxx box", naming the type.
    public var description: String { "\(box.type) box" }

    /// Writes the box.
    public func write(to writer: inout BoxWriter) { box.write(to: &writer) }

    /// Parses one whole box (header included) from `bytes`, with the standard table.
    public static func parse(_ bytes: [UInt8], table: BoxTable = .standard) throws(ContainerError) -> AnyBox {
        try bytes.span.withUnsafeBytes { (raw) throws(ContainerError) -> AnyBox in
            var top = BoxReader(raw, 0..<raw.count, boxType: FourCharCode(rawValue: 0), path: "", file: "bytes")
            guard let (header, _) = try top.nextHeader() else { throw ContainerError(.truncated, "fewer than 8 bytes: no box", path: "bytes") }
            var reader = top.child(header)
            return try table.parse(&reader)
        }
    }
}

/// A box this package does not interpret, kept as its payload bytes (written back unchanged).
public struct UnknownBox: Box {
    /// The box type, as found in the header.
    public var type: FourCharCode
    /// The payload: everything after the size and type.
    public var payload: [UInt8]
    /// Why a box of a known type was kept as bytes instead (it did not parse, in a part of the
    /// file where damage is tolerated); not part of the box's value.
    public var failure: ContainerError?

    /// A box of `type` holding `payload`.
    public init(type: FourCharCode, payload: [UInt8], failure: ContainerError? = nil) {
        self.type = type
        self.payload = payload
        self.failure = failure
    }

    /// Parses the box's payload from `reader`, keeping it as bytes.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        payload = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) { writer.append(payload) }

    /// Whether two boxes are equal (type and payload; ``failure`` is not compared).
    public static func == (a: UnknownBox, b: UnknownBox) -> Bool { a.type == b.type && a.payload == b.payload }
    /// Hashes the same fields `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        hasher.combine(payload)
    }
}

/// A box holding child boxes (among other fields, for a sample entry or a `meta`), with
/// lookups by type.
public protocol BoxList: Box {
    /// The child boxes, in file order.
    var children: [AnyBox] { get set }
}

extension BoxList {
    /// The first child of type `B`.
    public func first<B: Box>(_: B.Type) -> B? {
        for child in children { if let box = child.box as? B { return box } }
        return nil
    }

    /// Every child of type `B`, in order.
    public func all<B: Box>(_: B.Type) -> [B] { children.compactMap { $0.box as? B } }

    /// Adds a child at the end.
    public mutating func append(_ box: some Box) { children.append(AnyBox(box)) }
}

/// A box that is a list of boxes (`moov`, `trak`, `stbl`, ...), with the bytes after its last
/// child when they are too few to be a box (a QuickTime list's 32-bit zero terminator).
public protocol ContainerBox: BoxList {
    /// Bytes after the last child, fewer than a box header.
    var trailer: [UInt8] { get set }
    /// How children are parsed.
    static var childTable: BoxTable { get }
    /// A box holding `children`.
    init(children: [AnyBox], trailer: [UInt8])
}

extension ContainerBox {
    /// The standard table.
    public static var childTable: BoxTable { .standard }

    /// Parses the box's payload from `reader`: its children and any short trailer.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        let (children, trailer) = try reader.children(Self.childTable)
        self.init(children: children, trailer: trailer)
    }

    /// Writes the box's payload (everything after the size and type): the children, then the trailer.
    public func writePayload(to writer: inout BoxWriter) {
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }
}

/// What tells one kind of list-only container box from another: its type, and how its
/// children parse.
public protocol ContainerKind: Sendable {
    /// The box type.
    static var type: FourCharCode { get }
    /// How the children parse (the standard table unless said otherwise).
    static var childTable: BoxTable { get }
}

extension ContainerKind {
    /// The standard table.
    public static var childTable: BoxTable { .standard }
}

/// A box that is nothing but a list of boxes (`moov`, `trak`, `stbl`, ...), one generic type
/// for all of them, told apart by `Kind`: ``MovieBox`` is `Container<ContainerKinds.Movie>`.
public struct Container<Kind: ContainerKind>: ContainerBox {
    /// The box type, from `Kind`.
    public var type: FourCharCode { Kind.type }
    /// The child boxes, in file order.
    public var children: [AnyBox]
    /// Bytes after the last child, fewer than a box header.
    public var trailer: [UInt8]
    /// How the children parse, from `Kind`.
    public static var childTable: BoxTable { Kind.childTable }

    /// A box holding `children`.
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// The kinds of list-only container boxes this package reads and writes.
public enum ContainerKinds {
    /// Tells BaseMediaInformationHeaderBox apart: its type, `gmhd`, and how its children parse.
    public enum BaseMediaInformationHeader: ContainerKind {
        /// `gmhd`.
        public static let type: FourCharCode = "gmhd"
        /// How the children of `gmhd` parse.
        public static var childTable: BoxTable { BoxTable(["gmin": BaseMediaInfoBox.self, "tmcd": TimecodeMediaInformationBox.self]) }
    }
    /// Tells DataInformationBox apart: its type, `dinf`.
    public enum DataInformation: ContainerKind {
        /// `dinf`.
        public static let type: FourCharCode = "dinf"
    }
    /// Tells EditBox apart: its type, `edts`.
    public enum Edit: ContainerKind {
        /// `edts`.
        public static let type: FourCharCode = "edts"
    }
    /// Tells ItemListBox apart: its type, `ilst`, and how its children parse.
    public enum ItemList: ContainerKind {
        /// `ilst`.
        public static let type: FourCharCode = "ilst"
        /// How the children of `ilst` parse.
        public static var childTable: BoxTable { BoxTable([:], fallback: ItemListEntryBox.self, lenient: true) }
    }
    /// Tells MediaBox apart: its type, `mdia`.
    public enum Media: ContainerKind {
        /// `mdia`.
        public static let type: FourCharCode = "mdia"
    }
    /// Tells MediaInformationBox apart: its type, `minf`.
    public enum MediaInformation: ContainerKind {
        /// `minf`.
        public static let type: FourCharCode = "minf"
    }
    /// Tells MovieBox apart: its type, `moov`.
    public enum Movie: ContainerKind {
        /// `moov`.
        public static let type: FourCharCode = "moov"
    }
    /// Tells MovieExtendsBox apart: its type, `mvex`.
    public enum MovieExtends: ContainerKind {
        /// `mvex`.
        public static let type: FourCharCode = "mvex"
    }
    /// Tells MovieFragmentBox apart: its type, `moof`.
    public enum MovieFragment: ContainerKind {
        /// `moof`.
        public static let type: FourCharCode = "moof"
    }
    /// Tells MovieFragmentRandomAccessBox apart: its type, `mfra`.
    public enum MovieFragmentRandomAccess: ContainerKind {
        /// `mfra`.
        public static let type: FourCharCode = "mfra"
    }
    /// Tells SampleTableBox apart: its type, `stbl`.
    public enum SampleTable: ContainerKind {
        /// `stbl`.
        public static let type: FourCharCode = "stbl"
    }
    /// Tells TimecodeMediaInformationBox apart: its type, `tmcd`, and how its children parse.
    public enum TimecodeMediaInformation: ContainerKind {
        /// `tmcd`.
        public static let type: FourCharCode = "tmcd"
        /// How the children of `tmcd` parse.
        public static var childTable: BoxTable { BoxTable(["tcmi": TimecodeMediaInfoBox.self]) }
    }
    /// Tells TrackBox apart: its type, `trak`.
    public enum Track: ContainerKind {
        /// `trak`.
        public static let type: FourCharCode = "trak"
    }
    /// Tells TrackFragmentBox apart: its type, `traf`.
    public enum TrackFragment: ContainerKind {
        /// `traf`.
        public static let type: FourCharCode = "traf"
    }
    /// Tells TrackReferenceBox apart: its type, `tref`, and how its children parse.
    public enum TrackReference: ContainerKind {
        /// `tref`.
        public static let type: FourCharCode = "tref"
        /// How the children of `tref` parse.
        public static var childTable: BoxTable { BoxTable([:], fallback: TrackReferenceTypeBox.self) }
    }
    /// Tells UserDataBox apart: its type, `udta`, and how its children parse.
    public enum UserData: ContainerKind {
        /// `udta`.
        public static let type: FourCharCode = "udta"
        /// How the children of `udta` parse.
        public static var childTable: BoxTable { BoxTable(["meta": MetaBox.self], lenient: true) }
    }
}

/// Which type parses a box of a given four-character code, in one place of the tree (the
/// same code means different boxes in different parents: `tmcd` is a sample entry in `stsd`,
/// a header in `gmhd` and a reference type in `tref`). Codes the table does not know become
/// ``UnknownBox``es; a lenient table (metadata) also keeps a box that fails to parse as an
/// ``UnknownBox`` with the ``UnknownBox/failure``, so damaged metadata never loses a movie.
public struct BoxTable: Sendable {
    let types: [FourCharCode: any Box.Type]
    let fallback: (any Box.Type)?
    let lenient: Bool

    /// A table mapping codes to types; `fallback` parses every other code (nil: unknown boxes).
    public init(_ types: [FourCharCode: any Box.Type], fallback: (any Box.Type)? = nil, lenient: Bool = false) {
        self.types = types
        self.fallback = fallback
        self.lenient = lenient
    }

    /// This table with more codes.
    public func adding(_ more: [FourCharCode: any Box.Type]) -> BoxTable {
        BoxTable(types.merging(more) { _, new in new }, fallback: fallback, lenient: lenient)
    }

    /// Parses the box `reader` is over.
    public func parse(_ reader: inout BoxReader) throws(ContainerError) -> AnyBox {
        guard let type = types[reader.boxType] ?? fallback else { return AnyBox(try UnknownBox(parsing: &reader)) }
        let start = reader
        do {
            return AnyBox(try type.init(parsing: &reader))
        } catch {
            guard lenient else { throw error }
            var raw = start
            return AnyBox(UnknownBox(type: raw.boxType, payload: raw.rest(), failure: error))
        }
    }

    /// The boxes of a movie's index outside the places with tables of their own.
    public static let standard = BoxTable([
        "ftyp": FileTypeBox.self, "styp": SegmentTypeBox.self, "free": FreeSpaceBox.self, "skip": FreeSpaceBox.self, "wide": FreeSpaceBox.self,
        "moov": MovieBox.self, "mvhd": MovieHeaderBox.self, "trak": TrackBox.self, "tkhd": TrackHeaderBox.self,
        "edts": EditBox.self, "elst": EditListBox.self, "tref": TrackReferenceBox.self,
        "mdia": MediaBox.self, "mdhd": MediaHeaderBox.self, "hdlr": HandlerBox.self, "minf": MediaInformationBox.self,
        "vmhd": VideoMediaHeaderBox.self, "smhd": SoundMediaHeaderBox.self, "nmhd": NullMediaHeaderBox.self, "gmhd": BaseMediaInformationHeaderBox.self,
        "dinf": DataInformationBox.self, "dref": DataReferenceBox.self,
        "stbl": SampleTableBox.self, "stsd": SampleDescriptionBox.self, "stts": TimeToSampleBox.self,
        "ctts": CompositionOffsetBox.self, "cslg": CompositionToDecodeBox.self, "stss": SyncSampleBox.self,
        "sdtp": SampleDependencyTypeBox.self, "stsz": SampleSizeBox.self, "stz2": CompactSampleSizeBox.self,
        "stsc": SampleToChunkBox.self, "stco": ChunkOffsetBox.self, "co64": ChunkLargeOffsetBox.self,
        "sgpd": SampleGroupDescriptionBox.self, "sbgp": SampleToGroupBox.self,
        "mvex": MovieExtendsBox.self, "mehd": MovieExtendsHeaderBox.self, "trex": TrackExtendsBox.self,
        "moof": MovieFragmentBox.self, "mfhd": MovieFragmentHeaderBox.self, "traf": TrackFragmentBox.self,
        "tfhd": TrackFragmentHeaderBox.self, "tfdt": TrackFragmentBaseMediaDecodeTimeBox.self, "trun": TrackRunBox.self,
        "mfra": MovieFragmentRandomAccessBox.self, "tfra": TrackFragmentRandomAccessBox.self,
        "mfro": MovieFragmentRandomAccessOffsetBox.self,
        "udta": UserDataBox.self, "meta": MetaBox.self,
    ])
}
