import MediaCore

// Metadata as read: QuickTime File Format "Metadata atoms" and "User data atoms",
// ISO/IEC 14496-12 §8.10 (udta, meta), iTunes item lists.
extension Parser {
    /// The items of `moov/udta` (and its `meta`) and `moov/meta`, in file order. Damaged
    /// metadata boxes are named in a warning; what parsed is kept.
    mutating func collectMetadata() {
        for child in movieBox.children {
            if let udta = child.as(UserDataBox.self) { userData(udta) }
            if let meta = child.as(MetaBox.self) { readMeta(meta, path: "moov/meta") }
            if let unknown = child.as(UnknownBox.self), let failure = unknown.failure { damaged("moov/\(unknown.type)", failure) }
        }
    }

    mutating func damaged(_ where: String, _ failure: ContainerError) {
        warnings.append("\(`where`): \(failure.reason); the metadata from there on is ignored")
    }

    /// `udta`: each child is an item, except `meta` (iTunes or QuickTime metadata). Keys that
    /// start with © hold QuickTime international text (size, language, characters).
    mutating func userData(_ udta: UserDataBox) {
        for child in udta.children {
            if let meta = child.as(MetaBox.self) {
                readMeta(meta, path: "moov/udta/meta")
                continue
            }
            guard let item = child.as(UnknownBox.self) else { continue }
            if let failure = item.failure {
                damaged("moov/udta/\(item.type)", failure)
                continue
            }
            if item.type == "free" || item.type == "skip" { continue }
            if item.type.rawValue >> 24 == 0xA9, let text = Self.internationalText(item.payload) {
                metadata.append(MetadataItem(key: .userData(item.type), value: .utf8(text)))
            } else {
                metadata.append(MetadataItem(key: .userData(item.type), value: .data(item.payload)))
            }
        }
    }

    /// The first string of a QuickTime international text list: 16-bit size, 16-bit language,
    /// the characters (UTF-8, or Mac Roman when the language is a Macintosh code; the ASCII
    /// range agrees).
    static func internationalText(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 4 else { return nil }
        let size = Int(bytes[0]) << 8 | Int(bytes[1])
        guard size <= bytes.count - 4 else { return nil }
        var text = Array(bytes[4..<(4 + size)])
        while text.last == 0 { text.removeLast() }
        return String(decoding: text, as: UTF8.self)
    }

    /// `meta` with handler `mdta` (a `keys` table, items numbered by key) or `mdir` (iTunes
    /// four-character items, and freeform `----` items named by `mean` and `name`).
    mutating func readMeta(_ meta: MetaBox, path metaPath: String) {
        let handler = meta.first(HandlerBox.self)?.handlerType
        let keys = meta.first(KeysBox.self)?.keys ?? []
        for child in meta.children {
            if let unknown = child.as(UnknownBox.self), let failure = unknown.failure {
                damaged("\(metaPath)/\(unknown.type)", failure)
                return
            }
        }
        guard let list = meta.first(ItemListBox.self) else { return }
        for child in list.children {
            if let unknown = child.as(UnknownBox.self), let failure = unknown.failure {
                damaged("\(metaPath)/ilst/\(unknown.type)", failure)
                return
            }
            guard let item = child.as(ItemListEntryBox.self) else { continue }
            var mean = "", name = ""
            for part in item.children {
                if let text = part.as(ItemListTextBox.self) {
                    if text.type == "mean" { mean = String(decoding: text.text, as: UTF8.self) } else { name = String(decoding: text.text, as: UTF8.self) }
                }
                guard let data = part.as(DataBox.self) else { continue }
                let value = MetadataItem.Value(type: data.wellKnownType, bytes: data.value)
                let key: MetadataItem.Key
                if handler == "mdta" {
                    let index = Int(item.type.rawValue)
                    guard index >= 1, index <= keys.count else {
                        warnings.append("\(metaPath)/ilst: item for key \(index) of \(keys.count); the metadata from there on is ignored")
                        return
                    }
                    key = .quickTime(String(decoding: keys[index - 1].value, as: UTF8.self))
                } else if item.type == "----" {
                    key = .quickTime(mean.isEmpty ? name : "\(mean):\(name)")
                } else {
                    key = .iTunes(item.type)
                }
                metadata.append(MetadataItem(key: key, value: value))
            }
        }
    }
}
