extension DASHManifest {
    /// A sound track in an adaptation set of its own (`contentType="audio"`), with its language,
    /// channel count (`AudioChannelConfiguration`, ISO/IEC 23001-8) and sample rate; the main
    /// one has the `main` role, the others `alternate`.
    public struct AudioRepresentation: Sendable, Hashable {
        /// Its `id`.
        public var id: String
        /// `codecs` (RFC 6381: `mp4a.40.2`).
        public var codecs: String
        /// The adaptation set's `lang` (RFC 5646), if known.
        public var language: String?
        /// `audioSamplingRate`, hertz.
        public var sampleRate: Int
        /// The channel count.
        public var channelCount: Int
        /// `bandwidth`, bits per second.
        public var bandwidth: Int
        /// The `SegmentTemplate` timescale (the CMAF track's).
        public var timescale: Int
        /// The initialization segment's URI.
        public var initialization: String
        /// The media segments' URI template, with `$Number$`.
        public var media: String
        /// The first segment's number.
        public var startNumber: Int
        /// The segments: each one's earliest presentation time and duration, timescale ticks.
        public var segments: [(time: Int64, duration: Int64)]

        /// A sound representation.
        public init(id: String, codecs: String, language: String?, sampleRate: Int, channelCount: Int, bandwidth: Int, timescale: Int,
                    initialization: String, media: String, startNumber: Int, segments: [(time: Int64, duration: Int64)]) {
            self.id = id
            self.codecs = codecs
            self.language = language
            self.sampleRate = sampleRate
            self.channelCount = channelCount
            self.bandwidth = bandwidth
            self.timescale = timescale
            self.initialization = initialization
            self.media = media
            self.startNumber = startNumber
            self.segments = segments
        }

        /// Equal in every attribute and segment.
        public static func == (a: AudioRepresentation, b: AudioRepresentation) -> Bool { a.adaptationSetXML(isMain: true) == b.adaptationSetXML(isMain: true) }
        /// Hashes the rendering.
        public func hash(into hasher: inout Hasher) { hasher.combine(adaptationSetXML(isMain: true)) }

        /// Its adaptation set's XML.
        func adaptationSetXML(isMain: Bool) -> String {
            var lines = ["    <AdaptationSet contentType=\"audio\" mimeType=\"audio/mp4\"" + (language.map { " lang=\"\(escapeXML($0))\"" } ?? "")
                         + " segmentAlignment=\"true\" startWithSAP=\"1\">",
                         "      <Role schemeIdUri=\"urn:mpeg:dash:role:2011\" value=\"\(isMain ? "main" : "alternate")\"/>",
                         "      <Representation id=\"\(escapeXML(id))\" codecs=\"\(escapeXML(codecs))\" audioSamplingRate=\"\(sampleRate)\" bandwidth=\"\(bandwidth)\">",
                         "        <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"\(channelCount)\"/>"]
            lines += DASHManifest.segmentTemplate(timescale: timescale, initialization: initialization, media: media, startNumber: startNumber, segments: segments)
            lines += ["      </Representation>", "    </AdaptationSet>"]
            return lines.joined(separator: "\n")
        }
    }
}
