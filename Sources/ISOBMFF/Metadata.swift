public import MediaCore
import SystemIO

/// One item of movie metadata: where it lives (its key space and key) and its value.
///
/// The key spaces are those of AVFoundation's metadata:
/// - ``Key/quickTime(_:)``: QuickTime metadata (`meta` with handler `mdta`, a `keys` table of
///   reverse-DNS strings such as "com.example.camera.model", an `ilst` of typed values). MOV
///   only: MP4 players and FFmpeg's MP4 reader do not read it.
/// - ``Key/userData(_:)``: user data, a `udta` child box per item with a four-character key
///   and the value's raw bytes: the one custom space MP4 keeps (seed 004). In a MOV, keys
///   starting with `©` hold QuickTime text (title, comment, ...).
/// - ``Key/iTunes(_:)``: iTunes-style items (`udta/meta` with handler `mdir`, an `ilst` of
///   `©nam`, `©cmt`, `©day`, ...), what FFmpeg writes for `-metadata title=...` in MP4.
/// - ``Key/common(_:)``: a title, comment, date, artist or encoder, written where the chosen
///   container keeps it (MP4: iTunes items; MOV: QuickTime text in `udta`).
public struct MetadataItem: Hashable, Sendable, CustomStringConvertible {
    /// The items every container can keep, each stored where the container keeps it.
    public enum CommonKey: String, Hashable, Sendable, CaseIterable {
        /// Title, comment, creation date (`date` on the command line), artist and encoder.
        case title, comment, creationDate = "date", artist, encoder

        /// The four-character code of the iTunes item and of the QuickTime user-data text.
        public var code: FourCharCode {
            switch self {
            case .title: "©nam"
            case .comment: "©cmt"
            case .creationDate: "©day"
            case .artist: "©ART"
            case .encoder: "©too"
            }
        }

        /// The code in `fileType`: a MOV names its encoder `©swr`, as FFmpeg and QuickTime do.
        public func code(in fileType: MovieFileType) -> FourCharCode { self == .encoder && fileType == .mov ? "©swr" : code }

        /// The key with iTunes or QuickTime text code `code` (`©swr` is the encoder too), or nil.
        public init?(code: FourCharCode) {
            if code == "©swr" { self = .encoder; return }
            guard let key = Self.allCases.first(where: { $0.code == code }) else { return nil }
            self = key
        }
    }

    /// Where an item is stored and under what name.
    public enum Key: Hashable, Sendable, CustomStringConvertible {
        /// QuickTime metadata (`mdta`): a reverse-DNS key such as "com.apple.quicktime.title"; MOV only.
        case quickTime(String)
        /// A user-data item (`udta` child box) with this four-character key.
        case userData(FourCharCode)
        /// An iTunes item (`ilst` child box) with this four-character code.
        case iTunes(FourCharCode)
        /// A common item, stored where the container keeps it.
        case common(CommonKey)

        /// The key as text: the reverse-DNS string, or the four characters.
        public var name: String {
            switch self {
            case .quickTime(let key): key
            case .userData(let code), .iTunes(let code): code.description
            case .common(let key): key.rawValue
            }
        }

        /// The key space: "mdta", "udta", "ilst" or "common".
        public var space: String {
            switch self {
            case .quickTime: "mdta"
            case .userData: "udta"
            case .iTunes: "ilst"
            case .common: "common"
            }
        }

        /// "space:name", e.g. "udta:xmpl".
        public var description: String { "\(space):\(name)" }

        /// Reads a key from a command line: a reverse-DNS key (it has a '.') is QuickTime
        /// metadata; "title", "comment", "date", "artist" and "encoder" are the common keys;
        /// four characters are a user-data key; "udta:XXXX", "ilst:XXXX" and "mdta:KEY" name
        /// the space.
        public init(parsing text: String) throws(ContainerError) {
            func code(_ text: Substring) throws(ContainerError) -> FourCharCode {
                guard let code = FourCharCode(String(text)), code.isPrintable else {
                    throw ContainerError(.invalidInput, "metadata key \"\(text)\": a user-data or iTunes key is four characters (such as \"xmpl\" or \"©nam\")", path: "")
                }
                return code
            }
            if text.hasPrefix("udta:") { self = .userData(try code(text.dropFirst(5))); return }
            if text.hasPrefix("ilst:") { self = .iTunes(try code(text.dropFirst(5))); return }
            if text.hasPrefix("mdta:") { self = .quickTime(String(text.dropFirst(5))); return }
            if let common = CommonKey(rawValue: text) { self = .common(common); return }
            if text.contains(".") { self = .quickTime(text); return }
            self = .userData(try code(Substring(text)))
        }
    }

    /// A value with its type, as the `data` box's well-known types say (QuickTime File Format,
    /// "Well-known types").
    public enum Value: Hashable, Sendable, CustomStringConvertible {
        /// UTF-8 text (well-known type 1).
        case utf8(String)
        /// A big-endian signed integer (well-known type 21).
        case signed(Int64)
        /// A big-endian unsigned integer (well-known type 22).
        case unsigned(UInt64)
        /// A big-endian 32-bit float (well-known type 23).
        case float32(Float)
        /// A big-endian 64-bit float (well-known type 24).
        case float64(Double)
        /// Bytes without a type (well-known type 0, reserved for binary data).
        case data([UInt8])
        /// Another well-known type (JPEG 13, PNG 14, ...), kept as bytes.
        case typed(UInt32, [UInt8])

        /// The value as text: numbers in decimal, bytes as text when printable, else hex.
        public var description: String {
            switch self {
            case .utf8(let text): text
            case .signed(let value): String(value)
            case .unsigned(let value): String(value)
            case .float32(let value): String(value)
            case .float64(let value): String(value)
            case .data(let bytes): Self.describe(bytes)
            case .typed(let type, let bytes): "type \(type): \(Self.describe(bytes))"
            }
        }

        /// Bytes as text when they are printable UTF-8, else as hex.
        static func describe(_ bytes: [UInt8]) -> String {
            if let text = String(validating: bytes, as: UTF8.self), !text.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" && $0 != "\t" }) {
                return text
            }
            let hex = bytes.prefix(64).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            return "0x\(hex)\(bytes.count > 64 ? "… (\(bytes.count) bytes)" : "")"
        }

        /// The well-known type number and payload of a `data` box.
        var encoded: (type: UInt32, bytes: [UInt8]) {
            switch self {
            case .utf8(let text): return (1, Array(text.utf8))
            case .signed(let value):
                if let small = Int32(exactly: value) { return (21, withUnsafeBytes(of: small.bigEndian) { Array($0) }) }
                return (21, withUnsafeBytes(of: value.bigEndian) { Array($0) })
            case .unsigned(let value):
                if let small = UInt32(exactly: value) { return (22, withUnsafeBytes(of: small.bigEndian) { Array($0) }) }
                return (22, withUnsafeBytes(of: value.bigEndian) { Array($0) })
            case .float32(let value): return (23, withUnsafeBytes(of: value.bitPattern.bigEndian) { Array($0) })
            case .float64(let value): return (24, withUnsafeBytes(of: value.bitPattern.bigEndian) { Array($0) })
            case .data(let bytes): return (0, bytes)
            case .typed(let type, let bytes): return (type, bytes)
            }
        }

        /// The value of a `data` box payload of well-known `type`.
        init(type: UInt32, bytes: [UInt8]) {
            func integer() -> UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }
            switch (type, bytes.count) {
            case (1, _): self = .utf8(String(decoding: bytes, as: UTF8.self))
            case (21, 1), (21, 2), (21, 3), (21, 4), (21, 8):
                let shift = UInt64(64 - 8 * bytes.count)
                self = .signed(Int64(bitPattern: integer() << shift) >> Int64(shift))
            case (22, 1), (22, 2), (22, 3), (22, 4), (22, 8): self = .unsigned(integer())
            case (23, 4): self = .float32(Float(bitPattern: UInt32(integer())))
            case (24, 8): self = .float64(Double(bitPattern: integer()))
            case (0, _): self = .data(bytes)
            default: self = .typed(type, bytes)
            }
        }

        /// The bytes a user-data item stores: the raw data, or the text's UTF-8.
        var rawBytes: [UInt8]? {
            switch self {
            case .data(let bytes): bytes
            case .utf8(let text): Array(text.utf8)
            default: nil
            }
        }

        /// Reads a value from a command line: "int:N", "uint:N", "float:X", "double:X" and
        /// "hex:..." are typed; "utf8:TEXT" or any other text is UTF-8. (The CLI reads
        /// "@PATH" as a file's bytes itself.)
        public init(parsing text: String) throws(ContainerError) {
            func fail(_ what: String) -> ContainerError { ContainerError(.invalidInput, "metadata value \"\(text)\" is not \(what)", path: "") }
            guard let colon = text.firstIndex(of: ":") else { self = .utf8(text); return }
            let body = String(text[text.index(after: colon)...])
            switch text[..<colon] {
            case "utf8": self = .utf8(body)
            case "int": guard let value = Int64(body) else { throw fail("an integer") }; self = .signed(value)
            case "uint": guard let value = UInt64(body) else { throw fail("an unsigned integer") }; self = .unsigned(value)
            case "float": guard let value = Float(body) else { throw fail("a number") }; self = .float32(value)
            case "double": guard let value = Double(body) else { throw fail("a number") }; self = .float64(value)
            case "hex":
                let digits = Array(body.utf8)
                guard digits.count % 2 == 0 else { throw fail("an even number of hex digits") }
                var bytes: [UInt8] = []
                for i in stride(from: 0, to: digits.count, by: 2) {
                    guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { throw fail("hex") }
                    bytes.append(byte)
                }
                self = .data(bytes)
            default: self = .utf8(text)
            }
        }
    }

    /// Where the item is stored and under what name.
    public var key: Key
    /// The item's value and its type.
    public var value: Value

    /// Reads an item written as `KEY=VALUE` (a command line's `--meta`): the key as
    /// ``Key/init(parsing:)`` reads it, the value as ``Value/init(parsing:)`` does, or
    /// `@PATH` for the bytes of a file.
    public init(parsing text: String) throws(ContainerError) {
        guard let equals = text.firstIndex(of: "=") else { throw ContainerError(.invalidInput, "metadata item \"\(text)\": expected KEY=VALUE") }
        key = try Key(parsing: String(text[..<equals]))
        let valueText = String(text[text.index(after: equals)...])
        if valueText.hasPrefix("@") {
            do { value = .data(try readWholeFile(String(valueText.dropFirst()))) } catch { throw ContainerError(systemError: error) }
        } else {
            value = try Value(parsing: valueText)
        }
    }

    /// An item of `key` with `value`.
    public init(key: Key, value: Value) {
        self.key = key
        self.value = value
    }

    /// The common key this item answers to (a `©nam` in `ilst` or `udta` is the title).
    public var commonKey: CommonKey? {
        switch key {
        case .common(let key): key
        case .iTunes(let code), .userData(let code): CommonKey(code: code)
        case .quickTime(let name): name.hasPrefix("com.apple.quicktime.") ? CommonKey(rawValue: String(name.dropFirst(20))) : nil
        }
    }

    /// "key = value", for listings.
    public var description: String { "\(key) = \(value)" }
}

// MARK: Writing

extension MetadataItem {
    /// Checks that every item can be stored in `fileType`, and says why not and what to use
    /// instead when one cannot: never dropped in silence (seed 004's complaint).
    public static func validate(_ items: [MetadataItem], for fileType: MovieFileType, path: String) throws(ContainerError) {
        for item in items {
            switch item.key {
            case .quickTime(let name) where fileType == .mp4:
                throw ContainerError(.invalidInput, "metadata key \"\(name)\": MP4 has no place for reverse-DNS (QuickTime mdta) keys, and players would drop it; write a .mov, or use a four-character user-data key such as \"\(Self.suggestedCode(for: name))\" (raw data)", path: path)
            case .quickTime(let name):
                guard !name.isEmpty, name.utf8.count < 1 << 16 else { throw ContainerError(.invalidInput, "metadata key \"\(name)\" is empty or too long", path: path) }
            case .userData(let code):
                guard code.isPrintable else { throw ContainerError(.invalidInput, "user-data key \(code) is not four printable characters", path: path) }
                guard code != "meta", code != "free", code != "skip" else { throw ContainerError(.invalidInput, "user-data key \(code) is a structural box of udta", path: path) }
                guard item.value.rawBytes != nil else {
                    throw ContainerError(.invalidInput, "user-data item \(code): udta items hold raw data or text, not a typed \(item.value); use a MOV with a reverse-DNS key for typed values", path: path)
                }
                if fileType == .mov, code.rawValue >> 24 == 0xA9, case .data = item.value {
                    throw ContainerError(.invalidInput, "user-data item \(code): in a MOV, keys starting with © hold text; give a UTF-8 value", path: path)
                }
            case .iTunes(let code):
                guard code.isPrintable else { throw ContainerError(.invalidInput, "iTunes key \(code) is not four printable characters", path: path) }
            case .common:
                guard case .utf8 = item.value else { throw ContainerError(.invalidInput, "\(item.key.name) is text; give a UTF-8 value", path: path) }
            }
        }
        var seen = Set<Key>()
        for item in items where !seen.insert(item.key).inserted {
            throw ContainerError(.invalidInput, "metadata key \(item.key) is given twice", path: path)
        }
    }

    /// A four-character key made from the last part of a reverse-DNS key, for the error message.
    static func suggestedCode(for name: String) -> String {
        let letters = Array((name.split(separator: ".").last.map(String.init) ?? name).lowercased().filter { $0.isASCII && $0.isLetter })
        return String((letters + Array("xxxx")).prefix(4))
    }

    /// The metadata boxes of a `moov`: for a MOV, `meta` (mdta) for QuickTime keys and `udta`
    /// for user data and QuickTime text; for an MP4, `udta` with user data and an iTunes
    /// `meta` (mdir).
    static func boxes(_ items: [MetadataItem], fileType: MovieFileType) -> [AnyBox] {
        guard !items.isEmpty else { return [] }
        var quickTime: [(String, Value)] = []
        var userData: [(FourCharCode, [UInt8])] = []
        var texts: [(FourCharCode, String)] = []
        var iTunes: [(FourCharCode, Value)] = []
        for item in items {
            switch item.key {
            case .quickTime(let name): quickTime.append((name, item.value))
            case .userData(let code) where fileType == .mov && code.rawValue >> 24 == 0xA9:
                if case .utf8(let text) = item.value { texts.append((code, text)) }
            case .userData(let code): userData.append((code, item.value.rawBytes ?? []))
            case .iTunes(let code): iTunes.append((code, item.value))
            case .common(let key):
                guard case .utf8(let text) = item.value else { continue }
                if fileType == .mov { texts.append((key.code(in: .mov), text)) } else { iTunes.append((key.code, .utf8(text))) }
            }
        }
        var result: [AnyBox] = []
        if !quickTime.isEmpty {
            // QuickTime File Format, "Metadata atoms": `meta` is a plain atom in a MOV.
            let items = quickTime.enumerated().map { index, item in
                AnyBox(ItemListEntryBox(type: FourCharCode(rawValue: UInt32(index + 1)), value: dataBox(item.1)))
            }
            result.append(AnyBox(MetaBox(isFullBox: false, children: [
                AnyBox(HandlerBox(handlerType: "mdta", name: "", countedName: false)),
                AnyBox(KeysBox(keys: quickTime.map { KeysBox.Key(value: Array($0.0.utf8)) })),
                AnyBox(ItemListBox(children: items)),
            ])))
        }
        guard !userData.isEmpty || !texts.isEmpty || !iTunes.isEmpty else { return result }
        var udta = UserDataBox()
        for (code, text) in texts {
            // QuickTime international text: size, language (0: English), the characters.
            let bytes = Array(text.utf8.prefix(Int(UInt16.max)))
            udta.append(UnknownBox(type: code, payload: [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF), 0, 0] + bytes))
        }
        for (code, bytes) in userData { udta.append(UnknownBox(type: code, payload: bytes)) }
        if !iTunes.isEmpty {
            udta.append(MetaBox(isFullBox: true, children: [
                AnyBox(HandlerBox(componentType: FourCharCode(rawValue: 0), handlerType: "mdir", reserved: Array("appl".utf8) + Array(repeating: 0, count: 8), nameBytes: [0])),
                AnyBox(ItemListBox(children: iTunes.map { AnyBox(ItemListEntryBox(type: $0.0, value: dataBox($0.1))) })),
            ]))
        }
        result.append(AnyBox(udta))
        return result
    }

    private static func dataBox(_ value: Value) -> DataBox {
        let (type, bytes) = value.encoded
        return DataBox(typeIndicator: type, value: bytes)
    }
}
