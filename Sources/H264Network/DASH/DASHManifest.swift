/// A DASH media presentation description (ISO/IEC 23009-1, the live profile) for CMAF segments:
/// one period, one video adaptation set, a representation per rendition, each with a
/// `SegmentTemplate` and a `SegmentTimeline` of its segments' times; sound in adaptation sets
/// of its own, one per track (``AudioRepresentation``). Static for a package,
/// dynamic for a live origin (with its availability start, minimum update period and time-shift
/// window).
public struct DASHManifest: Sendable, Hashable {
    /// A rendition.
    public struct Representation: Sendable, Hashable {
        /// Its `id`.
        public var id: String
        /// `codecs` (RFC 6381).
        public var codecs: String
        /// Width and height in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int
        /// `frameRate` as a fraction ("30000/1001").
        public var frameRate: String?
        /// `bandwidth`, bits per second.
        public var bandwidth: Int
        /// The `SegmentTemplate` timescale (the CMAF track's).
        public var timescale: Int
        /// The initialization segment's URI.
        public var initialization: String
        /// The media segments' URI template, with `$Number$` (`seg-$Number%05d$.m4s`).
        public var media: String
        /// The first segment's number.
        public var startNumber: Int
        /// The segments: each one's earliest presentation time and duration, timescale ticks.
        public var segments: [(time: Int64, duration: Int64)]

        /// A representation.
        public init(id: String, codecs: String, width: Int, height: Int, frameRate: String?, bandwidth: Int, timescale: Int, initialization: String,
                    media: String, startNumber: Int, segments: [(time: Int64, duration: Int64)]) {
            self.id = id
            self.codecs = codecs
            self.width = width
            self.height = height
            self.frameRate = frameRate
            self.bandwidth = bandwidth
            self.timescale = timescale
            self.initialization = initialization
            self.media = media
            self.startNumber = startNumber
            self.segments = segments
        }

        /// Equal in every attribute and segment.
        public static func == (a: Representation, b: Representation) -> Bool { a.xml == b.xml }
        /// Hashes the rendering.
        public func hash(into hasher: inout Hasher) { hasher.combine(xml) }

        /// The representation's XML.
        var xml: String {
            var lines = ["      <Representation id=\"\(escapeXML(id))\" codecs=\"\(escapeXML(codecs))\" width=\"\(width)\" height=\"\(height)\""
                         + (frameRate.map { " frameRate=\"\($0)\"" } ?? "") + " bandwidth=\"\(bandwidth)\">"]
            lines += DASHManifest.segmentTemplate(timescale: timescale, initialization: initialization, media: media, startNumber: startNumber, segments: segments)
            lines.append("      </Representation>")
            return lines.joined(separator: "\n")
        }
    }

    /// Static (a package) or dynamic (live).
    public enum Kind: Sendable, Hashable {
        /// A whole presentation of this many seconds.
        case `static`(duration: Double)
        /// A live one: when its time 0 was (seconds since 1970), how often to reload, how far
        /// back a client may go.
        case dynamic(availabilityStartTime: Double, minimumUpdatePeriod: Double, timeShiftBufferDepth: Double, publishTime: Double)
    }

    /// Static or dynamic.
    public var kind: Kind
    /// `minBufferTime`, seconds: the segment duration.
    public var minimumBufferTime: Double
    /// The renditions.
    public var representations: [Representation]
    /// The sound, an adaptation set each, the main one first.
    public var audioRepresentations: [AudioRepresentation]

    /// A manifest of `representations`, and of `audioRepresentations` beside them.
    public init(kind: Kind, minimumBufferTime: Double, representations: [Representation], audioRepresentations: [AudioRepresentation] = []) {
        self.kind = kind
        self.minimumBufferTime = minimumBufferTime
        self.representations = representations
        self.audioRepresentations = audioRepresentations
    }

    /// The manifest as XML.
    public var rendered: String {
        var attributes = ["xmlns=\"urn:mpeg:dash:schema:mpd:2011\"", "profiles=\"urn:mpeg:dash:profile:isoff-live:2011\"",
                          "minBufferTime=\"\(Self.duration(minimumBufferTime))\""]
        switch kind {
        case .static(let duration):
            attributes += ["type=\"static\"", "mediaPresentationDuration=\"\(Self.duration(duration))\""]
        case .dynamic(let start, let update, let depth, let published):
            attributes += ["type=\"dynamic\"", "availabilityStartTime=\"\(ISO8601Timestamp(secondsSince1970: start))\"",
                           "publishTime=\"\(ISO8601Timestamp(secondsSince1970: published))\"", "minimumUpdatePeriod=\"\(Self.duration(update))\"",
                           "timeShiftBufferDepth=\"\(Self.duration(depth))\""]
        }
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>", "<MPD " + attributes.joined(separator: " ") + ">",
                     "  <Period id=\"0\" start=\"PT0S\">"]
        // (Sound alone: no video adaptation set; an empty one is not allowed.)
        if !representations.isEmpty || audioRepresentations.isEmpty {
            lines.append("    <AdaptationSet contentType=\"video\" mimeType=\"video/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\">")
            for representation in representations { lines.append(representation.xml) }
            lines.append("    </AdaptationSet>")
        }
        for (index, sound) in audioRepresentations.enumerated() { lines.append(sound.adaptationSetXML(isMain: index == 0)) }
        lines += ["  </Period>", "</MPD>"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// A `SegmentTemplate` with its `SegmentTimeline`, indented for a representation.
    static func segmentTemplate(timescale: Int, initialization: String, media: String, startNumber: Int, segments: [(time: Int64, duration: Int64)]) -> [String] {
        var lines = ["        <SegmentTemplate timescale=\"\(timescale)\" initialization=\"\(escapeXML(initialization))\" media=\"\(escapeXML(media))\" startNumber=\"\(startNumber)\">",
                     "          <SegmentTimeline>"]
        // Runs of equal durations, each continuing the one before, in one S element.
        var index = 0
        while index < segments.count {
            let (time, duration) = segments[index]
            var repeats = 0
            while index + repeats + 1 < segments.count, segments[index + repeats + 1].duration == duration,
                  segments[index + repeats + 1].time == time + Int64(repeats + 1) * duration {
                repeats += 1
            }
            lines.append("            <S t=\"\(time)\" d=\"\(duration)\"" + (repeats > 0 ? " r=\"\(repeats)\"" : "") + "/>")
            index += repeats + 1
        }
        return lines + ["          </SegmentTimeline>", "        </SegmentTemplate>"]
    }

    /// An xs:duration in seconds (`PT20.02S`).
    static func duration(_ seconds: Double) -> String {
        "PT" + HLSMediaPlaylist.decimal(seconds) + "S"
    }
}

/// The text with XML's five special characters escaped.
func escapeXML(_ text: String) -> String {
    var escaped = ""
    for character in text {
        switch character {
        case "&": escaped += "&amp;"
        case "<": escaped += "&lt;"
        case ">": escaped += "&gt;"
        case "\"": escaped += "&quot;"
        case "'": escaped += "&apos;"
        default: escaped.append(character)
        }
    }
    return escaped
}
