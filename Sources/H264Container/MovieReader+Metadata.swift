import MediaCore

// Metadata and timecode sample entries: QuickTime File Format "Metadata atoms" and "User data
// atoms", ISO/IEC 14496-12 §8.10 (udta, meta), and the `tmcd` sample description.
extension MovieReader {
    /// Parses a metadata box; a damaged one becomes a warning, never a lost movie.
    func parseLeniently(_ r: FieldReader, _ what: String, _ body: (FieldReader) throws(ContainerError) -> Void) {
        do { try body(r) } catch { appendWarning("\(what): \(error.reason); the metadata from there on is ignored") }
    }

    /// `udta`: each child is an item, except `meta` (iTunes or QuickTime metadata). Keys that
    /// start with © hold QuickTime international text (size, language, characters).
    func parseUserData(_ udta: FieldReader) throws(ContainerError) {
        var udta = udta
        // A 32-bit zero may end a QuickTime user data list.
        for box in try udta.boxes(allowTruncatedLast: true, truncated: { _, _ in }) {
            var r = udta.child(box)
            switch box.type {
            case "meta": try parseMeta(r)
            case "free", "skip": continue
            default:
                let bytes = try r.array(r.remaining, "user data")
                if box.type.rawValue >> 24 == 0xA9, let text = Self.internationalText(bytes) {
                    appendMetadata(MetadataItem(key: .userData(box.type), value: .utf8(text)))
                } else {
                    appendMetadata(MetadataItem(key: .userData(box.type), value: .data(bytes)))
                }
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

    /// `meta`: a full box in ISO files and `udta`, a plain atom in a QuickTime `moov`; handler
    /// `mdta` (a `keys` table, items numbered by key) or `mdir` (iTunes four-character items).
    func parseMeta(_ meta: FieldReader) throws(ContainerError) {
        var meta = meta
        if meta.remaining >= 8, FieldReader.u32(meta.bytes, meta.offset + 4) != FourCharCode("hdlr").rawValue {
            _ = try meta.versionAndFlags()
        }
        var handler: FourCharCode?
        var keys: [String] = []
        var items: [BoxHeader] = []
        for box in try meta.boxes() {
            var r = meta.child(box)
            switch box.type {
            case "hdlr":
                _ = try r.versionAndFlags()
                try r.skip(4, "pre_defined")
                handler = FourCharCode(rawValue: try r.u32("handler_type"))
            case "keys":
                _ = try r.versionAndFlags()
                let count = try r.u32("entry_count")
                try r.checkEntries(count, size: 8, "keys")
                for _ in 0..<count {
                    let size = Int(try r.u32("key_size"))
                    guard size >= 8 else { throw r.error("key size \(size)") }
                    try r.skip(4, "key_namespace")
                    keys.append(String(decoding: try r.array(size - 8, "key_value"), as: UTF8.self))
                }
            case "ilst":
                items = try r.boxes()
                for item in items {
                    var i = r.child(item)
                    var freeform: (mean: String, name: String) = ("", "")
                    for child in try i.boxes() {
                        var c = i.child(child)
                        switch child.type {
                        case "mean", "name":
                            _ = try c.versionAndFlags()
                            let text = String(decoding: try c.array(c.remaining), as: UTF8.self)
                            if child.type == "mean" { freeform.mean = text } else { freeform.name = text }
                        case "data":
                            let type = try c.u32("data type") & 0x00FF_FFFF
                            try c.skip(4, "locale")
                            let value = MetadataItem.Value(type: type, bytes: try c.array(c.remaining))
                            let key: MetadataItem.Key
                            if handler == "mdta" {
                                let index = Int(item.type.rawValue)
                                guard index >= 1, index <= keys.count else { throw c.error("ilst item for key \(index) of \(keys.count)") }
                                key = .quickTime(keys[index - 1])
                            } else if item.type == "----" {
                                key = .quickTime(freeform.mean.isEmpty ? freeform.name : "\(freeform.mean):\(freeform.name)")
                            } else {
                                key = .iTunes(item.type)
                            }
                            appendMetadata(MetadataItem(key: key, value: value))
                        default: continue
                        }
                    }
                }
            default: continue
            }
        }
    }

    /// A `tmcd`/`tc64` sample entry: flags, timescale, frame duration, frame quanta, then an
    /// optional `name` box with the source reference. A format the timecode rules refuse is
    /// named with a warning.
    func parseTimecodeEntry(_ entry: FieldReader, _ sampleFormat: TimecodeFormatDescription.SampleFormat) throws(ContainerError) -> SampleDescription {
        var r = entry
        try r.skip(8, "reserved, data_reference_index")
        try r.skip(4, "reserved")
        let flags = try r.u32("flags")
        let timescale = try r.u32("timescale")
        let frameDuration = try r.u32("frame duration")
        let quanta = try r.u8("number of frames")
        if r.remaining >= 1 { try r.skip(1) }
        var source: TimecodeFormatDescription.SourceReference?
        if r.remaining >= 8, let children = try? r.boxes() {
            for child in children where child.type == "name" {
                var n = r.child(child)
                let size = Int(try n.u16("name size"))
                let language = try n.u16("language")
                let name = try n.array(min(size, n.remaining), "name")
                source = .init(name: String(decoding: name, as: UTF8.self), languageCode: language)
            }
        }
        guard timescale > 0, timescale <= UInt32(Int32.max) else {
            appendWarning("\(r.path): \(sampleFormat.fourCC) timescale \(timescale); the timecode is not read")
            return .other(sampleFormat.fourCC)
        }
        var frameQuanta = Int(quanta)
        let flagSet = TimecodeFlags(rawValue: flags)
        if !flagSet.contains(.counter), frameDuration > 0 {
            // FFmpeg counts the rate rounded (a GoPro says 29 frames per second at 29.97); so
            // do we, and say so.
            let rounded = Int((UInt64(timescale) + UInt64(frameDuration) / 2) / UInt64(frameDuration))
            if rounded != frameQuanta, (1...255).contains(rounded) {
                appendWarning("\(r.path): \(sampleFormat.fourCC) counts \(frameQuanta) frames per second at \(timescale)/\(frameDuration) fps; counting \(rounded), as FFmpeg does")
                frameQuanta = rounded
            }
        }
        do {
            return .timecode(try TimecodeFormatDescription(sampleFormat: sampleFormat, frameDuration: MediaTime(value: Int64(frameDuration), timescale: Int32(timescale)),
                                                           frameQuanta: frameQuanta, flags: flagSet, sourceReference: source))
        } catch {
            appendWarning("\(r.path): \(sampleFormat.fourCC) sample entry: \(error); the timecode is not read")
            return .other(sampleFormat.fourCC)
        }
    }
}
