import MediaCore

/// One track of a movie being written: its timeline, its sample tables (plain layouts), its
/// place in the file, and the chunk it is gathering.
struct WrittenTrack {
    var timeline: TrackTimeline
    var tables = SampleTables()
    /// Its `track_ID` in the file, from 1 in order of creation (a plain movie's index
    /// renumbers the tracks with samples).
    var fileTrackID: UInt32
    /// The track ID its samples carry.
    let sourceID: TrackID
    /// Its language (ISO 639-2/T), when declared.
    var language: String?
    /// Its kind of media as declared, before its first sample.
    var declaredType: MediaType?
    /// Samples gathered into a chunk not yet written (plain layouts; every track but the first
    /// video track).
    var pending: [PlacedSample] = []
    var pendingBytes = 0
    /// The longest chunk in the track's ticks, once computed (with its timescale).
    var chunkLimit: (ticks: Int64, timescale: Int32)?

    init(timeline: TrackTimeline, fileTrackID: UInt32, sourceID: TrackID, language: String?) {
        self.timeline = timeline
        self.fileTrackID = fileTrackID
        self.sourceID = sourceID
        self.language = language
    }

    /// The gathered chunk's length in decoding time, ticks.
    var pendingDuration: Int64 {
        // By index: `first` and `last` would copy the samples (a retain of each's bytes).
        guard !pending.isEmpty else { return 0 }
        return pending[pending.count - 1].decodeTime + pending[pending.count - 1].duration - pending[0].decodeTime
    }

    /// The kind of media, once the first sample came.
    var mediaType: MediaType? { timeline.mediaType }
}

extension [WrittenTrack] {
    /// The track whose samples are written as they come and the others' chunks between: the
    /// first video track, else the first track.
    var primaryIndex: Int? {
        // By index: a closure over the elements would be handed a copy of each track.
        for index in indices where self[index].timeline.kind == .video { return index }
        return isEmpty ? nil : 0
    }

    /// Where the movie's presentation starts on the common timeline: the earliest start of a
    /// track with samples, or 0 when the start time is kept and every track starts after 0.
    func movieStart(keepingStartTime: Bool) -> MediaTime {
        let starts = compactMap { $0.timeline.sampleCount > 0 ? $0.timeline.presentationStartTime : nil }
        guard var earliest = starts.first else { return .zero }
        for start in starts.dropFirst() where start < earliest { earliest = start }
        return keepingStartTime && earliest > .zero ? .zero : earliest
    }
}
