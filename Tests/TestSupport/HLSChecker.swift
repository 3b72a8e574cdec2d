import Foundation

/// The tests' own reading of HLS playlists (RFC 8216, RFC 8216bis), written from the RFC and not
/// from the library's renderer: it parses a playlist and lists every rule it breaks.
public enum HLSChecker {
    /// A media segment (or I-frame) entry.
    public struct Entry: Sendable {
        public var uri: String
        public var duration: Double
        public var byteRange: (length: Int, offset: Int?)?
        public var programDateTime: String?
        public var discontinuity: Bool
    }

    /// A media playlist as read.
    public struct MediaPlaylist: Sendable {
        public var version: Int?
        public var targetDuration: Int?
        public var mediaSequence = 0
        public var playlistType: String?
        public var independentSegments = false
        public var iFramesOnly = false
        public var endList = false
        public var map: String?
        public var entries: [Entry] = []
        public var tags: [String: [String]] = [:]
        /// The rules broken, in words.
        public var problems: [String] = []
    }

    /// A variant of a multivariant playlist.
    public struct Variant: Sendable {
        public var uri: String
        public var attributes: [String: String]
        public var isIFrame: Bool
    }

    /// A multivariant playlist as read.
    public struct MultivariantPlaylist: Sendable {
        public var version: Int?
        public var independentSegments = false
        public var variants: [Variant] = []
        /// The `EXT-X-MEDIA` tags' attributes, in order.
        public var media: [[String: String]] = []
        public var problems: [String] = []
    }

    /// The attribute list of a tag (`A=1,B="x,y",C=0x10`).
    public static func attributes(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var index = text.startIndex
        while index < text.endIndex {
            guard let equals = text[index...].firstIndex(of: "=") else { break }
            let name = String(text[index..<equals])
            var valueStart = text.index(after: equals)
            var value: String
            if valueStart < text.endIndex, text[valueStart] == "\"" {
                valueStart = text.index(after: valueStart)
                let close = text[valueStart...].firstIndex(of: "\"") ?? text.endIndex
                value = String(text[valueStart..<close])
                index = close < text.endIndex ? text.index(after: close) : close
            } else {
                let comma = text[valueStart...].firstIndex(of: ",") ?? text.endIndex
                value = String(text[valueStart..<comma])
                index = comma
            }
            result[name] = value
            if index < text.endIndex, text[index] == "," { index = text.index(after: index) }
        }
        return result
    }

    /// An `EXT-X-PROGRAM-DATE-TIME` value (ISO 8601 with fractional seconds) as seconds since
    /// 1970, by Foundation's own reader; nil when it is not one.
    public static func seconds(since1970 text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text))?.timeIntervalSince1970
    }

    /// Reads a media playlist and checks it.
    public static func media(_ text: String) -> MediaPlaylist {
        var playlist = MediaPlaylist()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }.filter { !$0.isEmpty }
        guard lines.first == "#EXTM3U" else {
            playlist.problems.append("the first line is not #EXTM3U")
            return playlist
        }
        var pending: (duration: Double, byteRange: (Int, Int?)?, date: String?, discontinuity: Bool)?
        var date: String?
        var discontinuity = false
        var needsVersion = 1
        for line in lines.dropFirst() {
            if line.hasPrefix("#EXT") {
                let colon = line.firstIndex(of: ":")
                let name = String(colon.map { line[..<$0] } ?? line)
                let value = colon.map { line[line.index(after: $0)...] } ?? ""
                playlist.tags[name, default: []].append(String(value))
                switch name {
                case "#EXT-X-VERSION": playlist.version = Int(value)
                case "#EXT-X-TARGETDURATION": playlist.targetDuration = Int(value)
                case "#EXT-X-MEDIA-SEQUENCE": playlist.mediaSequence = Int(value) ?? -1
                case "#EXT-X-PLAYLIST-TYPE": playlist.playlistType = String(value)
                case "#EXT-X-INDEPENDENT-SEGMENTS": playlist.independentSegments = true
                case "#EXT-X-I-FRAMES-ONLY":
                    playlist.iFramesOnly = true
                    needsVersion = max(needsVersion, 4)
                case "#EXT-X-ENDLIST": playlist.endList = true
                case "#EXT-X-MAP":
                    playlist.map = attributes(value)["URI"]
                    if playlist.map == nil { playlist.problems.append("EXT-X-MAP without URI") }
                case "#EXT-X-PROGRAM-DATE-TIME": date = String(value)
                case "#EXT-X-DISCONTINUITY": discontinuity = true
                case "#EXTINF":
                    let number = value.split(separator: ",", maxSplits: 1).first.map(String.init) ?? ""
                    guard let duration = Double(number) else { playlist.problems.append("EXTINF:\(value) has no duration"); continue }
                    if number.contains(".") { needsVersion = max(needsVersion, 3) }
                    pending = (duration, nil, date, discontinuity)
                    date = nil
                    discontinuity = false
                case "#EXT-X-BYTERANGE":
                    needsVersion = max(needsVersion, 4)
                    let parts = value.split(separator: "@")
                    guard let length = parts.first.flatMap({ Int($0) }) else { playlist.problems.append("EXT-X-BYTERANGE:\(value)"); continue }
                    if pending == nil { playlist.problems.append("EXT-X-BYTERANGE before its EXTINF") }
                    pending?.byteRange = (length, parts.count > 1 ? Int(parts[1]) : nil)
                default:
                    break
                }
            } else if line.hasPrefix("#") {
                continue  // a comment
            } else {
                guard let entry = pending else {
                    playlist.problems.append("URI \(line) without an EXTINF before it")
                    continue
                }
                playlist.entries.append(Entry(uri: String(line), duration: entry.duration, byteRange: entry.byteRange, programDateTime: entry.date,
                                              discontinuity: entry.discontinuity))
                pending = nil
            }
        }
        if playlist.map != nil { needsVersion = max(needsVersion, playlist.iFramesOnly ? 5 : 6) }
        if pending != nil { playlist.problems.append("an EXTINF with no URI after it") }
        guard let target = playlist.targetDuration else {
            playlist.problems.append("no EXT-X-TARGETDURATION")
            return playlist
        }
        for entry in playlist.entries where Int(entry.duration.rounded()) > target {
            playlist.problems.append("\(entry.uri): EXTINF \(entry.duration) rounds past the target duration \(target)")
        }
        if let version = playlist.version {
            if version < needsVersion { playlist.problems.append("EXT-X-VERSION \(version) where the tags need \(needsVersion)") }
        } else if needsVersion > 1 {
            playlist.problems.append("no EXT-X-VERSION where the tags need \(needsVersion)")
        }
        for (tag, values) in playlist.tags where ["#EXT-X-VERSION", "#EXT-X-TARGETDURATION", "#EXT-X-MEDIA-SEQUENCE", "#EXT-X-PLAYLIST-TYPE", "#EXT-X-ENDLIST"].contains(tag) && values.count > 1 {
            playlist.problems.append("\(tag) appears \(values.count) times")
        }
        if playlist.iFramesOnly && playlist.entries.contains(where: { $0.byteRange == nil }) { playlist.problems.append("an I-frame entry without a byte range") }
        if playlist.playlistType == "VOD" && !playlist.endList { playlist.problems.append("a VOD playlist without EXT-X-ENDLIST") }
        return playlist
    }

    /// Reads a multivariant playlist and checks it, with Apple's authoring rules (BANDWIDTH,
    /// AVERAGE-BANDWIDTH, CODECS, RESOLUTION, FRAME-RATE on every variant).
    public static func multivariant(_ text: String) -> MultivariantPlaylist {
        var playlist = MultivariantPlaylist()
        let lines = text.split(separator: "\n").filter { !$0.isEmpty }
        guard lines.first == "#EXTM3U" else {
            playlist.problems.append("the first line is not #EXTM3U")
            return playlist
        }
        var pending: [String: String]?
        for line in lines.dropFirst() {
            if line.hasPrefix("#EXT-X-VERSION:") { playlist.version = Int(line.dropFirst("#EXT-X-VERSION:".count)) }
            else if line == "#EXT-X-INDEPENDENT-SEGMENTS" { playlist.independentSegments = true }
            else if line.hasPrefix("#EXT-X-STREAM-INF:") { pending = attributes(line.dropFirst("#EXT-X-STREAM-INF:".count)) }
            else if line.hasPrefix("#EXT-X-MEDIA:") { playlist.media.append(attributes(line.dropFirst("#EXT-X-MEDIA:".count))) }
            else if line.hasPrefix("#EXT-X-I-FRAME-STREAM-INF:") {
                let found = attributes(line.dropFirst("#EXT-X-I-FRAME-STREAM-INF:".count))
                guard let uri = found["URI"] else { playlist.problems.append("EXT-X-I-FRAME-STREAM-INF without URI"); continue }
                playlist.variants.append(Variant(uri: uri, attributes: found, isIFrame: true))
            } else if line.hasPrefix("#EXTINF") || line.hasPrefix("#EXT-X-TARGETDURATION") {
                playlist.problems.append("a media playlist tag in a multivariant playlist: \(line)")
            } else if !line.hasPrefix("#") {
                guard let found = pending else { playlist.problems.append("URI \(line) without EXT-X-STREAM-INF"); continue }
                playlist.variants.append(Variant(uri: String(line), attributes: found, isIFrame: false))
                pending = nil
            }
        }
        for variant in playlist.variants {
            // (A variant of sound alone has no picture: no RESOLUTION or FRAME-RATE.)
            let soundAlone = !(variant.attributes["CODECS"] ?? "avc1").contains("avc1")
            let required = variant.isIFrame ? ["BANDWIDTH", "CODECS", "RESOLUTION"]
                : soundAlone ? ["BANDWIDTH", "AVERAGE-BANDWIDTH", "CODECS"] : ["BANDWIDTH", "AVERAGE-BANDWIDTH", "CODECS", "RESOLUTION", "FRAME-RATE"]
            for name in required where variant.attributes[name] == nil { playlist.problems.append("\(variant.uri): no \(name)") }
            // RFC 6381: avc1.PPCCLL for H.264; mp4a.40.N for MPEG-4 audio (AAC LC 2, HE 5, HEv2 29).
            if let codecs = variant.attributes["CODECS"] {
                let list = codecs.split(separator: ",")
                let video = list.filter { $0.hasPrefix("avc1.") }
                let wellFormed = list.allSatisfy { ($0.hasPrefix("avc1.") && $0.count == 11) || ($0.hasPrefix("mp4a.40.") && Int($0.dropFirst(8)) != nil) }
                if !wellFormed || video.count > 1 || (variant.isIFrame && list.count != video.count) {
                    playlist.problems.append("\(variant.uri): CODECS \(codecs) is not avc1.PPCCLL (an I-frame variant's alone), beside at most mp4a.40.N")
                }
            }
        }
        if playlist.variants.contains(where: \.isIFrame), (playlist.version ?? 1) < 4 { playlist.problems.append("I-frame playlists need version 4") }
        // EXT-X-MEDIA (RFC 8216bis §4.4.6.1): TYPE, GROUP-ID and NAME required; NAME unique in
        // its group; at most one DEFAULT=YES a group; AUTOSELECT=YES where DEFAULT=YES; URI
        // required... for AUDIO optional, but then the variants carry the sound (not done here:
        // required); CHANNELS for AUDIO per Apple's authoring rules; a variant's AUDIO names an
        // existing group of TYPE=AUDIO (§4.4.6.2) and its CODECS then name the sound's codec.
        var groups: [String: [[String: String]]] = [:]
        for media in playlist.media {
            for name in ["TYPE", "GROUP-ID", "NAME"] where media[name] == nil { playlist.problems.append("EXT-X-MEDIA without \(name): \(media)") }
            guard let type = media["TYPE"], let group = media["GROUP-ID"] else { continue }
            if !["AUDIO", "VIDEO", "SUBTITLES", "CLOSED-CAPTIONS"].contains(type) { playlist.problems.append("EXT-X-MEDIA TYPE=\(type)") }
            if type == "AUDIO" {
                if media["URI"] == nil { playlist.problems.append("EXT-X-MEDIA \(media["NAME"] ?? "") without URI") }
                if media["CHANNELS"].flatMap({ Int($0) }) == nil { playlist.problems.append("EXT-X-MEDIA \(media["NAME"] ?? "") without CHANNELS (Apple's rules)") }
            }
            if media["DEFAULT"] == "YES" && media["AUTOSELECT"] != "YES" { playlist.problems.append("EXT-X-MEDIA \(media["NAME"] ?? ""): DEFAULT=YES without AUTOSELECT=YES") }
            for attribute in ["DEFAULT", "AUTOSELECT"] where media[attribute].map({ $0 != "YES" && $0 != "NO" }) ?? false {
                playlist.problems.append("EXT-X-MEDIA \(attribute)=\(media[attribute]!)")
            }
            groups[type + "/" + group, default: []].append(media)
        }
        for (key, members) in groups {
            if Set(members.compactMap { $0["NAME"] }).count != members.count { playlist.problems.append("group \(key): NAMEs not unique") }
            if members.filter({ $0["DEFAULT"] == "YES" }).count > 1 { playlist.problems.append("group \(key): more than one DEFAULT=YES") }
        }
        for variant in playlist.variants where !variant.isIFrame {
            guard let group = variant.attributes["AUDIO"] else { continue }
            if groups["AUDIO/" + group] == nil { playlist.problems.append("\(variant.uri): AUDIO=\(group) names no EXT-X-MEDIA group") }
            if !(variant.attributes["CODECS"] ?? "").contains("mp4a.") { playlist.problems.append("\(variant.uri): AUDIO=\(group) but CODECS names no sound") }
        }
        for variant in playlist.variants where variant.isIFrame && variant.attributes["AUDIO"] != nil {
            playlist.problems.append("\(variant.uri): an I-frame variant with AUDIO")
        }
        return playlist
    }
}
