/// What a sample's bytes are (`CMFormatDescription`): one case per kind of media H264Kit reads,
/// and one for what it only carries. A ``SampleBuffer`` carries one; a source's tracks say
/// their first.
public indirect enum FormatDescription: Hashable, Sendable, CustomStringConvertible {
    /// H.264 video: parameter sets and NAL unit framing.
    case video(VideoFormatDescription)
    /// Compressed audio: AAC (or G.711), its rate, channels and configuration.
    case audio(AudioFormatDescription)
    /// A timecode track's format (TN2310).
    case timecode(TimecodeFormatDescription)
    /// Samples carried as they are, with what their container said of them.
    case opaque(OpaqueFormatDescription)

    /// The kind of media (`CMFormatDescriptionGetMediaType`).
    public var mediaType: MediaType {
        switch self {
        case .video: .video
        case .audio: .audio
        case .timecode: .timecode
        case .opaque(let format): format.mediaType
        }
    }

    /// The codec (`CMFormatDescriptionGetMediaSubType`): `avc1`, `mp4a`, `tmcd`, ...
    public var codec: FourCharCode {
        switch self {
        case .video(let format): format.codec
        case .audio(let format): format.codec
        case .timecode(let format): format.sampleFormat.fourCC
        case .opaque(let format): format.codec
        }
    }

    /// The video description, for video.
    public var video: VideoFormatDescription? { if case .video(let format) = self { format } else { nil } }
    /// The audio description, for audio H264Kit reads.
    public var audio: AudioFormatDescription? { if case .audio(let format) = self { format } else { nil } }
    /// The timecode description, for a timecode track.
    public var timecode: TimecodeFormatDescription? { if case .timecode(let format) = self { format } else { nil } }
    /// The opaque description, for samples only carried.
    public var opaque: OpaqueFormatDescription? { if case .opaque(let format) = self { format } else { nil } }

    /// The RFC 6381 codec string (`avc1.64001f`, `mp4a.40.2`), for the media HLS and DASH name.
    public var codecString: String? {
        switch self {
        case .video(let format): format.codecString
        case .audio(let format): format.codecString
        case .timecode, .opaque: nil
        }
    }

    /// The codec's name for messages: "H.264", "AAC", "Opus", ...
    public var codecName: String {
        switch self {
        case .video: "H.264"
        case .audio(let format): format.isAAC ? "AAC" : format.codec.description
        case .timecode(let format): "timecode (\(format.sampleFormat.fourCC))"
        case .opaque(let format): format.name
        }
    }

    /// The wrapped description's own words.
    public var description: String {
        switch self {
        case .video(let format): format.description
        case .audio(let format): format.description
        case .timecode(let format): "timecode \(format.sampleFormat.fourCC)"
        case .opaque(let format): format.description
        }
    }
}

/// A track as a source reads it or a sink is to write it (the `AVAssetTrack` of H264Kit's
/// sources): its ID, what it holds, its first format, and what the container said of it.
public struct TrackDescription: Hashable, Sendable, CustomStringConvertible {
    /// The ID its samples carry.
    public var id: TrackID
    /// The format of its first sample.
    public var format: FormatDescription
    /// Its language, an ISO 639-2/T code ("eng", "fra"), when the container gave one.
    public var language: String?
    /// The clock its samples are timed in, when the container has one (a movie track's
    /// `mdhd` timescale; 90 kHz in a transport stream).
    public var timescale: Int32?

    /// A track of these values.
    public init(id: TrackID, format: FormatDescription, language: String? = nil, timescale: Int32? = nil) {
        self.id = id
        self.format = format
        self.language = language
        self.timescale = timescale
    }

    /// The kind of media.
    public var mediaType: MediaType { format.mediaType }

    /// "track 2: audio, AAC mp4a.40.2 48000 Hz, 2 channels (eng)".
    public var description: String {
        "track \(id): \(mediaType), \(format.codecName) \(format)" + (language.map { " (\($0))" } ?? "")
    }
}
