/// Base64 (RFC 4648 §4) for `sprop-parameter-sets` and RTSP authentication, without Foundation.
package enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The padded encoding of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let a = UInt32(bytes[index])
            let b = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let c = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let triple = a << 16 | b << 8 | c
            out.append(alphabet[Int(triple >> 18 & 63)])
            out.append(alphabet[Int(triple >> 12 & 63)])
            out.append(index + 1 < bytes.count ? alphabet[Int(triple >> 6 & 63)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(triple & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `text` (padding optional), or nil when it is not base64.
    package static func decode(some text: some StringProtocol) -> [UInt8]? {
        var value: UInt32 = 0, bits = 0
        var out: [UInt8] = []
        var ended = false
        for character in text.utf8 {
            let digit: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): digit = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): digit = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): digit = 63
            case UInt8(ascii: "="): ended = true; continue
            default: return nil
            }
            guard !ended else { return nil }
            value = value << 6 | digit
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: value >> UInt32(bits)))
            }
        }
        return out
    }

    package static func decode(_ text: some StringProtocol) -> [UInt8]? { decode(some: text) }
}
