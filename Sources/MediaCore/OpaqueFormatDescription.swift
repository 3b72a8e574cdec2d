/// The format of samples H264Kit carries without understanding them (MP3, AC-3, Opus, PCM,
/// subtitles, data): what the container said of them, kept so that the same container writes
/// them back as they were. An MP4/MOV source keeps the track's sample entry whole, and a movie
/// writer writes it back byte for byte; a transport stream source keeps the PID's stream type
/// and descriptors, and a transport stream writer does the same. A writer of the other
/// container leaves such a track out, and says so.
public struct OpaqueFormatDescription: Hashable, Sendable, CustomStringConvertible {
    /// The kind of media (audio for MP3, AC-3 or Opus; text, subtitles, data, ...).
    public var mediaType: MediaType
    /// The sample entry type (`Opus`, `ac-3`, `.mp3`, `tx3g`), or for a transport stream a
    /// code naming the stream type ("TS" then the stream type's two hex digits: `TS81`).
    public var codec: FourCharCode
    /// A name for messages: "Opus", "AC-3", "MP3", "subtitles".
    public var name: String
    /// The ISO BMFF sample entry as it was, its size and type included, when the samples came
    /// from an MP4/MOV file.
    public var sampleEntry: [UInt8]?
    /// The transport stream carriage, when the samples came from a transport stream.
    public var transportStream: TransportStreamCarriage?
    /// The rate the samples are timed at, when known (an audio sample entry's).
    public var sampleRate: Int?
    /// Channels, when known.
    public var channelCount: Int?

    /// How a transport stream carried the samples: its PMT entry.
    public struct TransportStreamCarriage: Hashable, Sendable {
        /// `stream_type`.
        public var streamType: UInt8
        /// The PMT entry's descriptors, raw (`ES_info`).
        public var descriptors: [UInt8]
        /// The PES packets' `stream_id`.
        public var streamID: UInt8

        /// A carriage of these values.
        public init(streamType: UInt8, descriptors: [UInt8], streamID: UInt8) {
            self.streamType = streamType
            self.descriptors = descriptors
            self.streamID = streamID
        }
    }

    /// A description of these values.
    public init(mediaType: MediaType, codec: FourCharCode, name: String, sampleEntry: [UInt8]? = nil, transportStream: TransportStreamCarriage? = nil,
                sampleRate: Int? = nil, channelCount: Int? = nil) {
        self.mediaType = mediaType
        self.codec = codec
        self.name = name
        self.sampleEntry = sampleEntry
        self.transportStream = transportStream
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }

    /// "Opus (audio, Opus)".
    public var description: String { "\(name) (\(mediaType), \(codec))" }
}
