public import MediaCore
public import SampleFlow
import H264Network

/// Which of a file's tracks go over the network beside its H.264 video: the first sound track
/// the destination carries (RTP and RTSP carry one, AAC or G.711, as ffmpeg sends a file; HTTP
/// carries AAC), and every other track with the reason it is left out, for a sender to say (a
/// track is never dropped without a word).
///
/// ``RTPSender``'s callers and ``RTSPServer`` choose with it; `h264kit stream` and `sdp`
/// print ``leftOut``.
public struct StreamedTracks: Sendable, Hashable {
    /// The sound track sent as the audio medium, if any.
    public var audio: TrackDescription?
    /// Every AAC track sent (``audio`` first): that one alone, or with `everyAACTrack` each of
    /// the file's AAC tracks (a live origin's fMP4 renditions of sound, one per language).
    public var audioTracks: [TrackDescription]
    /// The tracks besides the video that are not sent, and why.
    public var leftOut: [StreamMuxer.LeftOutTrack]

    /// The reason of a track left out because the caller asked for the video alone (`--no-audio`).
    public static let audioNotAsked = "the video alone was asked for"
    /// The reason of a track left out because one sound track is sent already, or RTP does not
    /// carry its codec.
    public static let oneAACTrack = "RTP carries the video and one sound track (AAC or G.711)"
    /// The same for a live HLS/DASH rendition.
    public static let oneAACTrackOverHTTP = "a live rendition carries the video and one AAC track"
    /// The same for a live origin's transport stream segments (one audio track in a segment).
    public static let oneAACTrackInTransportStream = "a transport stream segment carries the video and one AAC track"
    /// The reason of a track left out of a live origin that carries every AAC track: it is not AAC.
    public static let notAACOverHTTP = "a live origin carries H.264 and AAC tracks"

    /// The sound a destination carries.
    public enum Sound: Sendable, Hashable {
        /// AAC (HLS and DASH).
        case aac
        /// AAC or G.711 (RTP and RTSP: what `AudioPacketizer` sends).
        case aacOrG711

        /// Whether a track of `format` goes.
        public func carries(_ format: AudioFormatDescription) -> Bool {
            switch self {
            case .aac: format.isAAC
            case .aacOrG711: AudioPacketizer.sends(format)
            }
        }
    }

    /// The choice for the file at `path` (read with `options`; standard input has no tracks
    /// to choose from): with `carriesAudio`, its first track of the `sound` the destination
    /// carries (AAC unless said: the first AAC track); `reason`, when given, is why
    /// every track is left out instead (a destination that carries the video alone);
    /// `othersReason`, why the tracks besides the first AAC one are; with `everyAACTrack`,
    /// every AAC track goes (``audioTracks``) and `othersReason` is why the others do not.
    public init(path: String, options: MediaSource.Options = .decoding, carriesAudio: Bool = true, reason: String? = nil,
                othersReason: String = oneAACTrack, everyAACTrack: Bool = false, sound: Sound = .aac) throws(StreamingError) {
        let others: [TrackDescription]
        do { others = try MediaSource.otherTracks(path: path, options: options) } catch { throw .source(error) }
        let aac = carriesAudio && reason == nil ? others.filter { $0.format.audio.map(sound.carries) == true } : []
        audioTracks = everyAACTrack ? aac : Array(aac.prefix(1))
        audio = audioTracks.first
        let carried = Set(audioTracks.map(\.id))
        leftOut = others.filter { !carried.contains($0.id) }.map { track in
            let why = reason ?? (!carriesAudio && track.mediaType == .audio ? Self.audioNotAsked : othersReason)
            return StreamMuxer.LeftOutTrack(track: track, reason: why)
        }
    }

    /// The tracks a `MediaSource` must read to give the video and the chosen audio: `options`
    /// widened to every track when there is audio to send (the sender leaves the rest out).
    public func sourceOptions(_ options: MediaSource.Options) -> MediaSource.Options {
        var options = options
        if audio != nil { options.tracks = .all }
        return options
    }
}
