/// A track's language as an RFC 5646 (BCP 47) tag, for playlists and manifests (HLS
/// `LANGUAGE`, DASH `lang`), from the ISO 639-2 code a container carries (an MP4 `mdhd`, a
/// transport stream's ISO 639 language descriptor): the two-letter ISO 639-1 code where one
/// exists (BCP 47 asks for the shortest), with the language's English name; `und` and codes
/// that are not two or three ASCII letters give none (a file's bytes never reach a playlist's
/// quoted string unchecked).
public struct LanguageTag: Sendable, Hashable {
    /// The tag (`en`, or a three-letter code with no two-letter one).
    public var tag: String
    /// The language's English name where known (`English`), else nil.
    public var name: String?

    /// The tag for an ISO 639-2 (or 639-1) code; nil for none, `und`, `mul`, `zxx`, `mis` or
    /// anything not two or three letters.
    public init?(_ code: String?) {
        guard let code, (2...3).contains(code.utf8.count), code.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else { return nil }
        let lower = code.lowercased()
        guard !["und", "mul", "zxx", "mis"].contains(lower) else { return nil }
        if let known = Self.table.first(where: { $0.codes.contains(lower) }) {
            tag = known.tag
            name = known.name
        } else {
            tag = lower
            name = nil
        }
    }

    /// ISO 639-2 bibliographic and terminology codes (and the 639-1 code) of common languages.
    private static let table: [(codes: Set<String>, tag: String, name: String)] = [
        (["eng", "en"], "en", "English"), (["fre", "fra", "fr"], "fr", "French"), (["ger", "deu", "de"], "de", "German"),
        (["spa", "es"], "es", "Spanish"), (["ita", "it"], "it", "Italian"), (["por", "pt"], "pt", "Portuguese"),
        (["dut", "nld", "nl"], "nl", "Dutch"), (["rus", "ru"], "ru", "Russian"), (["jpn", "ja"], "ja", "Japanese"),
        (["chi", "zho", "zh"], "zh", "Chinese"), (["kor", "ko"], "ko", "Korean"), (["ara", "ar"], "ar", "Arabic"),
        (["hin", "hi"], "hi", "Hindi"), (["swe", "sv"], "sv", "Swedish"), (["nor", "no"], "no", "Norwegian"),
        (["dan", "da"], "da", "Danish"), (["fin", "fi"], "fi", "Finnish"), (["pol", "pl"], "pl", "Polish"),
        (["tur", "tr"], "tr", "Turkish"), (["gre", "ell", "el"], "el", "Greek"), (["heb", "he"], "he", "Hebrew"),
        (["cze", "ces", "cs"], "cs", "Czech"), (["hun", "hu"], "hu", "Hungarian"), (["ukr", "uk"], "uk", "Ukrainian"),
    ]
}
