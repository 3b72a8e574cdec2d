/// An HLS multivariant playlist (RFC 8216 §4.3.4, "master playlist" before RFC 8216bis): the
/// renditions of one presentation, each with what a player chooses by, and their I-frame
/// playlists.
///
/// Apple's authoring rules ask for BANDWIDTH (the peak segment bit rate), AVERAGE-BANDWIDTH,
/// CODECS, RESOLUTION and FRAME-RATE on every variant; all are written. Sound in renditions of
/// its own (`EXT-X-MEDIA` with `TYPE=AUDIO`, §4.3.4.1) goes in ``alternativeRenditions``, named
/// by the variants that play it (``Variant/audioGroup``).
public struct HLSMultivariantPlaylist: Sendable, Hashable {
    /// An alternative rendition (`EXT-X-MEDIA`): a media playlist of sound (or another
    /// picture) that a player picks within a group, by language and name.
    public struct AlternativeRendition: Sendable, Hashable {
        /// TYPE.
        public enum MediaType: String, Sendable, Hashable {
            /// `AUDIO`.
            case audio = "AUDIO"
            /// `VIDEO`.
            case video = "VIDEO"
            /// `SUBTITLES`.
            case subtitles = "SUBTITLES"
        }
        /// TYPE.
        public var type: MediaType
        /// GROUP-ID: the group the variants name (`AUDIO=`).
        public var groupID: String
        /// NAME: what a player shows; unique within the group.
        public var name: String
        /// LANGUAGE: an RFC 5646 tag, if known.
        public var language: String?
        /// DEFAULT=YES: played when the user has not chosen (one a group).
        public var isDefault: Bool
        /// AUTOSELECT=YES: a player may choose it by the user's language.
        public var autoselect: Bool
        /// CHANNELS: for sound, the channel count ("2").
        public var channels: Int?
        /// URI: its media playlist, relative to this one.
        public var uri: String

        /// A rendition of `type` in group `groupID`.
        public init(type: MediaType = .audio, groupID: String, name: String, language: String? = nil, isDefault: Bool, autoselect: Bool = true,
                    channels: Int? = nil, uri: String) {
            self.type = type
            self.groupID = groupID
            self.name = name
            self.language = language
            self.isDefault = isDefault
            self.autoselect = autoselect
            self.channels = channels
            self.uri = uri
        }

        /// The `EXT-X-MEDIA` line.
        var line: String {
            var list = ["TYPE=\(type.rawValue)", "GROUP-ID=\"\(groupID)\"", "NAME=\"\(name)\""]
            if let language { list.append("LANGUAGE=\"\(language)\"") }
            list.append("DEFAULT=\(isDefault ? "YES" : "NO")")
            list.append("AUTOSELECT=\(autoselect || isDefault ? "YES" : "NO")")
            if let channels { list.append("CHANNELS=\"\(channels)\"") }
            list.append("URI=\"\(uri)\"")
            return "#EXT-X-MEDIA:" + list.joined(separator: ",")
        }
    }

    /// A rendition: `EXT-X-STREAM-INF` and its media playlist.
    public struct Variant: Sendable, Hashable {
        /// The media playlist's URI, relative to this one.
        public var uri: String
        /// BANDWIDTH: the peak bit rate, bits per second (RFC 8216bis §4.4.6.2: the largest
        /// of the segments' sizes over their durations).
        public var bandwidth: Int
        /// AVERAGE-BANDWIDTH: the whole presentation's bits over its duration.
        public var averageBandwidth: Int?
        /// CODECS: RFC 6381 strings (`avc1.64001f`).
        public var codecs: [String]
        /// RESOLUTION: width and height in pixels.
        public var resolution: (width: Int, height: Int)?
        /// FRAME-RATE: frames per second, three decimals.
        public var frameRate: Double?
        /// AUDIO: the group of alternative renditions whose sound it plays (its BANDWIDTH and
        /// CODECS count the group's), if any.
        public var audioGroup: String?

        /// A variant at `uri`.
        public init(uri: String, bandwidth: Int, averageBandwidth: Int? = nil, codecs: [String], resolution: (width: Int, height: Int)? = nil,
                    frameRate: Double? = nil, audioGroup: String? = nil) {
            self.uri = uri
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.codecs = codecs
            self.resolution = resolution
            self.frameRate = frameRate
            self.audioGroup = audioGroup
        }

        /// The attribute list shared by `EXT-X-STREAM-INF` and `EXT-X-I-FRAME-STREAM-INF`.
        var attributes: [String] {
            var list = ["BANDWIDTH=\(bandwidth)"]
            if let averageBandwidth { list.append("AVERAGE-BANDWIDTH=\(averageBandwidth)") }
            if !codecs.isEmpty { list.append("CODECS=\"\(codecs.joined(separator: ","))\"") }
            if let resolution { list.append("RESOLUTION=\(resolution.width)x\(resolution.height)") }
            return list
        }

        /// Equal in every attribute.
        public static func == (a: Variant, b: Variant) -> Bool {
            a.uri == b.uri && a.attributes == b.attributes && a.frameRate == b.frameRate && a.audioGroup == b.audioGroup
        }
        /// Hashes what `==` compares.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(uri)
            hasher.combine(attributes)
            hasher.combine(frameRate)
            hasher.combine(audioGroup)
        }
    }

    /// The renditions, best first or in any order (a player sorts by BANDWIDTH).
    public var variants: [Variant]
    /// The I-frame playlists (`EXT-X-I-FRAME-STREAM-INF`): their URIs, peak bit rates of the
    /// I-frames alone, codecs and resolution.
    public var iFrameVariants: [Variant]
    /// `EXT-X-INDEPENDENT-SEGMENTS`: every media playlist's segments decode on their own.
    public var independentSegments: Bool
    /// The alternative renditions (`EXT-X-MEDIA`), before the variants that name their groups.
    public var alternativeRenditions: [AlternativeRendition]

    /// A playlist of `variants`, and of `alternativeRenditions` that they name.
    public init(variants: [Variant], iFrameVariants: [Variant] = [], independentSegments: Bool = false, alternativeRenditions: [AlternativeRendition] = []) {
        self.variants = variants
        self.iFrameVariants = iFrameVariants
        self.independentSegments = independentSegments
        self.alternativeRenditions = alternativeRenditions
    }

    /// The lowest `EXT-X-VERSION` the tags need: 4 with I-frame playlists, else 3.
    public var version: Int { iFrameVariants.isEmpty ? 3 : 4 }

    /// The playlist as text.
    public var rendered: String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)"]
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        lines += alternativeRenditions.map(\.line)
        for variant in variants {
            var attributes = variant.attributes
            if let rate = variant.frameRate { attributes.append("FRAME-RATE=\(Self.threeDecimals(rate))") }
            if let group = variant.audioGroup { attributes.append("AUDIO=\"\(group)\"") }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(variant.uri)
        }
        for variant in iFrameVariants {
            lines.append("#EXT-X-I-FRAME-STREAM-INF:" + (variant.attributes + ["URI=\"\(variant.uri)\""]).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func threeDecimals(_ value: Double) -> String {
        let thousandths = Int64((value * 1000).rounded())
        let fraction = thousandths % 1000
        return "\(thousandths / 1000)." + (fraction < 10 ? "00" : fraction < 100 ? "0" : "") + "\(fraction)"
    }
}
