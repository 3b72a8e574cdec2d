public import MediaCore

// Metadata: ISO/IEC 14496-12 §8.10 (udta, meta), the QuickTime File Format's "Metadata atoms"
// (meta with an mdta handler, keys, ilst, data) and iTunes-style item lists. Damage here is
// tolerated: a box that does not parse is kept as bytes (with its error) and the movie reads on.

/// `udta`: user data. Each child is an item keyed by its type, except `meta`.
public struct UserDataBox: ContainerBox {
    public var type: FourCharCode { "udta" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public static var childTable: BoxTable { BoxTable(["meta": MetaBox.self], lenient: true) }
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// `meta`: a metadata handler (`hdlr`: `mdta` or `mdir`) and its items. A full box in ISO
/// files and in `udta`; a plain atom in a QuickTime `moov` (told apart by what follows).
public struct MetaBox: Box {
    public static let childTable = BoxTable(["hdlr": HandlerBox.self, "keys": KeysBox.self, "ilst": ItemListBox.self], lenient: true)

    public var type: FourCharCode { "meta" }
    /// Whether a version and flags start the payload (ISO), or not (QuickTime).
    public var isFullBox: Bool
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var children: [AnyBox]
    public var trailer: [UInt8] = []

    public init(isFullBox: Bool, children: [AnyBox]) {
        self.isFullBox = isFullBox
        self.children = children
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        isFullBox = !(reader.remaining >= 8 && BoxReader.u32(reader.bytes, reader.offset + 4) == FourCharCode("hdlr").rawValue)
        if isFullBox { (version, flags) = try reader.versionAndFlags() }
        (children, trailer) = try reader.children(Self.childTable)
    }

    public func writePayload(to writer: inout BoxWriter) {
        if isFullBox { writer.versionAndFlags(version, flags) }
        for child in children { child.write(to: &writer) }
        writer.append(trailer)
    }

    /// The first child of type `B`.
    public func first<B: Box>(_: B.Type) -> B? {
        for child in children { if let box = child.box as? B { return box } }
        return nil
    }
}

/// `keys`: the QuickTime metadata key table; items in `ilst` refer to keys by index from 1.
public struct KeysBox: Box {
    public struct Key: Sendable, Hashable {
        /// `mdta` for reverse-DNS keys.
        public var namespace: FourCharCode
        public var value: [UInt8]
        public init(namespace: FourCharCode = "mdta", value: [UInt8]) {
            self.namespace = namespace
            self.value = value
        }
    }

    public var type: FourCharCode { "keys" }
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var keys: [Key]

    public init(keys: [Key]) { self.keys = keys }

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
public struct ItemListBox: ContainerBox {
    public var type: FourCharCode { "ilst" }
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public static var childTable: BoxTable { BoxTable([:], fallback: ItemListEntryBox.self, lenient: true) }
    public init(children: [AnyBox] = [], trailer: [UInt8] = []) {
        self.children = children
        self.trailer = trailer
    }
}

/// One `ilst` item: its `data` boxes (and for freeform `----` items, `mean` and `name`).
public struct ItemListEntryBox: ContainerBox {
    public var type: FourCharCode
    public var children: [AnyBox]
    public var trailer: [UInt8]
    public static var childTable: BoxTable { BoxTable(["data": DataBox.self, "mean": ItemListTextBox.self, "name": ItemListTextBox.self], lenient: true) }

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

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        (children, trailer) = try reader.children(Self.childTable)
    }
}

/// `data`: a typed metadata value (the type set and well-known type, the locale, the bytes).
public struct DataBox: Box {
    public var type: FourCharCode { "data" }
    /// The type indicator: the type set in the top byte, the well-known type in the rest.
    public var typeIndicator: UInt32
    public var locale: UInt32 = 0
    public var value: [UInt8]

    public init(typeIndicator: UInt32, value: [UInt8]) {
        self.typeIndicator = typeIndicator
        self.value = value
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        typeIndicator = try reader.u32("data type")
        locale = try reader.u32("locale")
        value = reader.rest()
    }

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
    public var type: FourCharCode
    public var version: UInt8 = 0
    public var flags: UInt32 = 0
    public var text: [UInt8]

    public init(type: FourCharCode, text: String) {
        self.type = type
        self.text = Array(text.utf8)
    }

    public init(parsing reader: inout BoxReader) throws(ContainerError) {
        type = reader.boxType
        (version, flags) = try reader.versionAndFlags()
        text = reader.rest()
    }

    public func writePayload(to writer: inout BoxWriter) {
        writer.versionAndFlags(version, flags)
        writer.append(text)
    }
}
