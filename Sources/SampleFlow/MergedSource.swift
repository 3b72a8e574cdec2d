public import H264Bitstream
public import MediaCore

/// Several sources read as one (`h264kit mux video.264 sound.aac out.mp4`): their samples in
/// the order of their decoding times, each source's tracks renumbered after the ones before
/// (the first source's first track is 1), so that a sink keeps every track apart. Each source
/// is read one sample ahead; memory is a sample per source.
public final class MergedSource: SampleSource {
    /// The sources, in the order given.
    public let sources: [any SampleSource]
    private var lookahead: [SampleBuffer?]
    private var started = false
    /// (source index, its track ID) → the merged track ID.
    private var numbering: [Int: [TrackID: TrackID]] = [:]
    private var nextID: UInt32 = 1

    /// The samples of `sources`, merged.
    public init(_ sources: [any SampleSource]) {
        self.sources = sources
        lookahead = Array(repeating: nil, count: sources.count)
    }

    /// The sources' names, joined.
    public var name: String { sources.map(\.name).joined(separator: " + ") }

    /// The sample decoded first among the sources' next ones, or nil when all are read.
    public func next() throws(SampleFlowError) -> SampleBuffer? {
        if !started {
            started = true
            for index in sources.indices { lookahead[index] = try sources[index].next() }
        }
        var best: Int?
        for index in lookahead.indices {
            guard let sample = lookahead[index] else { continue }
            if let current = best, let other = lookahead[current], !(sample.decodeTime < other.decodeTime) { continue }
            best = index
        }
        guard let chosen = best, var sample = lookahead[chosen] else { return nil }
        lookahead[chosen] = try sources[chosen].next()
        sample.trackID = mergedID(source: chosen, track: sample.trackID)
        return sample
    }

    private func mergedID(source: Int, track: TrackID) -> TrackID {
        if let id = numbering[source]?[track] { return id }
        // The source's tracks in its own order, then this one if it was not among them yet.
        for known in sources[source].tracks.map(\.id) + [track] where numbering[source]?[known] == nil {
            numbering[source, default: [:]][known] = TrackID(rawValue: nextID)
            nextID += 1
        }
        return numbering[source]![track]!
    }

    /// The first video description among the sources.
    public var formatDescription: VideoFormatDescription? { sources.lazy.compactMap(\.formatDescription).first }
    /// The first source's rate that has one (the video's).
    public var frameRate: FrameRate? { sources.lazy.compactMap(\.frameRate).first }
    /// Bytes (or samples) read of all sources.
    public var progress: (read: Int, total: Int?) {
        let all = sources.map(\.progress)
        let totals = all.compactMap(\.total)
        return (all.reduce(0) { $0 + $1.read }, totals.count == all.count ? totals.reduce(0, +) : nil)
    }
    /// Every source's warnings, each with its source's name.
    public var warnings: [String] { sources.flatMap { source in source.warnings.map { "\(source.name): \($0)" } } }

    /// The sources' tracks, renumbered.
    public var tracks: [TrackDescription] {
        var result: [TrackDescription] = []
        for (index, source) in sources.enumerated() {
            for track in source.tracks {
                var renumbered = track
                renumbered.id = mergedID(source: index, track: track.id)
                result.append(renumbered)
            }
        }
        return result
    }
}
