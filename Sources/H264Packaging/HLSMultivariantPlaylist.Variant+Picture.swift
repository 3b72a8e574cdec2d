public import H264Network
public import MediaCore

extension HLSMultivariantPlaylist.Variant {
    /// The sound a variant plays from a group of alternative renditions: the group, the codecs
    /// of its renditions, and the bit rates of its largest.
    public struct SoundGroup: Sendable, Hashable {
        /// The group's `GROUP-ID`.
        public var id: String
        /// Its renditions' codecs (RFC 6381), each once.
        public var codecs: [String]
        /// The largest rendition's peak bit rate, bits per second.
        public var peakBandwidth: Int
        /// The largest rendition's average bit rate, bits per second.
        public var averageBandwidth: Int

        /// A group `id` of renditions of `codecs` (repeats dropped), the largest at these rates.
        public init(id: String = HLSMultivariantPlaylist.AlternativeRendition.soundGroup, codecs: [String], peakBandwidth: Int, averageBandwidth: Int) {
            self.id = id
            var unique: [String] = []
            for codec in codecs where !unique.contains(codec) { unique.append(codec) }
            self.codecs = unique
            self.peakBandwidth = peakBandwidth
            self.averageBandwidth = averageBandwidth
        }
    }

    /// A picture rendition's variant, as the packager and the live origin describe it: CODECS
    /// names the picture and the sound muxed in its segments (transport stream), RESOLUTION and
    /// FRAME-RATE from the picture, BANDWIDTH and AVERAGE-BANDWIDTH the segments' (sound muxed
    /// in them included).
    public init(picture format: VideoFormatDescription, uri: String, peakBandwidth: Int, averageBandwidth: Int?, frameRate: Double?,
                muxedSound: AudioFormatDescription? = nil) {
        self.init(uri: uri, bandwidth: peakBandwidth, averageBandwidth: averageBandwidth, codecs: [format.codecString] + (muxedSound.map { [$0.codecString] } ?? []),
                  resolution: (format.width, format.height), frameRate: frameRate)
    }

    /// The variant plays `group`'s sound (RFC 8216bis §4.4.6.2): `AUDIO=` names it, CODECS
    /// names its codecs too, and the bit rates count its largest rendition's.
    public mutating func plays(_ group: SoundGroup) {
        audioGroup = group.id
        for codec in group.codecs where !codecs.contains(codec) { codecs.append(codec) }
        bandwidth += group.peakBandwidth
        averageBandwidth = averageBandwidth.map { $0 + group.averageBandwidth }
    }
}
