public import MediaCore

// Metadata: ISO/IEC 14496-12 §8.10 (udta, meta), the QuickTime File Format's "Metadata atoms"
// (meta with an mdta handler, keys, ilst, data) and iTunes-style item lists. Damage here is
// tolerated: a box that does not parse is kept as bytes (with its error) and the movie reads on.

/// `udta`: user data. Each child is an item keyed by its type, except `meta`.
public typealias UserDataBox = Container<ContainerKinds.UserData>

/// `meta`: a metadata handler (`hdlr`: `mdta` or `mdir`) and its items. A full box in ISO
/// files and in `udta`; a plain atom in a QuickTime `moov` (told apart by what follows).
public struct MetaBox: BoxList {
    /// How the children parse: `hdlr`, `keys` and `ilst`; damage is tolerated.
    public static let childTable = BoxTable(["hdlr": HandlerBox.self, "keys": KeysBox.self, "ilst": ItemListBox.self], lenient: true)

    /// The box type, `meta`.
    public var type: FourCharCode { "meta" }
    /// Whether a version and flags start the payload (ISO), or not (QuickTime).
    public var isFullBox: Bool
    /// The full box version, when ``isFullBox``.
    public var version: UInt8 = 0
    /// The full box flags, when ``isFullBox``.
    public var flags: UInt32 = 0
    /// The child boxes (`hdlr`, `keys`, `ilst`, ...), in file order.
    public var children: [AnyBox]
    /// Bytes after the last child, fewer than a box header.
    public var trailer: [UInt8] = []

    /// A `meta` box holding `children`, with or without the full box header.
    public init(isFullBox: Bool, children: [AnyBox]) {
        self.isFullBox = isFullBox
        self.children = children
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        isFullBox = !(reader.remaining >= 8 && BoxReader.u32(reader.bytes, reader.offset + 4) == FourCharCode("hdlr").rawValue)
        if isFullBox { (version, flags) = try reader.versionAndFlags() }
        (children, trailer) = try reader.children(Self.childTable)
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        if isFullBox { writer.versionAndFlags(version, flags) }
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }

}

/// `keys`: the QuickTime metadata key table; items in `ilst` refer to keys by index from 1.
public struct KeysBox: Box {
    /// One key: its namespace and its name's bytes.
    public struct Key: Sendable, Hashable {
        /// `mdta` for reverse-DNS keys.
        public var namespace: FourCharCode
        /// key_value: the key's name, e.g. the UTF-8 of "com.apple.quicktime.title".
        public var value: [UInt8]
        /// A key of `namespace` (`mdta` by default) named `value`.
        public init(namespace: FourCharCode = "mdta", value: [UInt8]) {
            self.namespace = namespace
            self.value = value
        }
    }

    /// The box type, `keys`.
    public var type: FourCharCode { "keys" }
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The keys; an `ilst` item refers to key n by the type n (1-based).
    public var keys: [Key]

    /// A box holding `keys`.
    public init(keys: [Key]) { self.keys = keys }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        (version, flags) = try reader.versionAndFlags()
        let count = try reader.u32("entry_count")
        try reader.checkEntries(count, size: 8, "keys")
        keys = []
        for _ in 0..<count {
            let size = Int(try reader.u32("key_size"))
            guard size >= 8 else { throw reader.error("key size \(size)") }
            let namespace = try reader.fourCC("key_namespace")
            keys.append(Key(namespace: namespace, value: try reader.bytes(size - 8, "key_value")))
        }
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.u32(UInt32(keys.count))
        for key in keys {
            writer.u32(UInt32(8 + key.value.count))
            writer.fourCC(key.namespace)
            writer.append(key.value)
        }
    }
}

/// `ilst`: the metadata items; each child's type is its key (a four-character code, or the
/// index of a `keys` entry).
public typealias ItemListBox = Container<ContainerKinds.ItemList>

/// One `ilst` item: its `data` boxes (and for freeform `----` items, `mean` and `name`).
public struct ItemListEntryBox: ContainerBox {
    /// The item's key: a four-character code (`©nam`), a `keys` index, or `----` for freeform.
    public var type: FourCharCode
    /// The item's boxes: `data`, and `mean` and `name` in a freeform item.
    public var children: [AnyBox]
    /// Bytes after the last child, fewer than a box header.
    public var trailer: [UInt8]
    /// How an item's children parse: `data`, `mean` and `name`; damage is tolerated.
    public static var childTable: BoxTable { BoxTable(["data": DataBox.self, "mean": ItemListTextBox.self, "name": ItemListTextBox.self], lenient: true) }

    /// A freeform (`----`) item holding `children`.
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        type = "----"
        self.children = children
        self.trailer = trailer
    }

    /// An item keyed `type` holding one value.
    public init(type: FourCharCode, value: DataBox) {
        self.type = type
        children = [AnyBox(value)]
        trailer = []
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        (children, trailer) = try reader.children(Self.childTable)
    }
}

/// `data`: a typed metadata value (the type set and well-known type, the locale, the bytes).
public struct DataBox: Box {
    /// The box type, `data`.
    public var type: FourCharCode { "data" }
    /// The type indicator: the type set in the top byte, the well-known type in the rest.
    public var typeIndicator: UInt32
    /// The locale: 0 for the default (every country and language).
    public var locale: UInt32 = 0
    /// The value's bytes, as the type indicator says to read them.
    public var value: [UInt8]

    /// A value of `typeIndicator` holding `value`, with the default locale.
    public init(typeIndicator: UInt32, value: [UInt8]) {
        self.typeIndicator = typeIndicator
        self.value = value
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        typeIndicator = try reader.u32("data type")
        locale = try reader.u32("locale")
        value = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.u32(typeIndicator)
        writer.u32(locale)
        writer.append(value)
    }

    /// The well-known type (1 UTF-8, 21 signed, 22 unsigned, 23 float32, 24 float64, 0 data, ...).
    public var wellKnownType: UInt32 { typeIndicator & 0x00FF_FFFF }
}

/// `mean` or `name` in a freeform (`----`) item: the key's domain and name.
public struct ItemListTextBox: Box {
    /// The box type, `mean` or `name`.
    public var type: FourCharCode
    /// The full box version.
    public var version: UInt8 = 0
    /// The full box flags.
    public var flags: UInt32 = 0
    /// The text as stored (UTF-8).
    public var text: [UInt8]

    /// A `mean` or `name` box holding `text`.
    public init(type: FourCharCode, text: String) {
        self.type = type
        self.text = Array(text.utf8)
    }

    /// Parses the box's payload from `reader`.
    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        (version, flags) = try reader.versionAndFlags()
        text = reader.rest()
    }

    /// Writes the box's payload (everything after the size and type).
    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.append(text)
    }
}
