import MediaCore

extension MovieWriter.Options {
    /// Takes over what a movie carries besides its video samples, for a file made from it (a
    /// transcode, a join): the timecode track of video track `videoTrack` (its runs, counted from
    /// the first shown frame), the movie's metadata items that this file type can hold, and the
    /// track's display transform. What these options already set wins: a timecode track, a
    /// transform other than the identity, and metadata items of the same key are kept. Returns
    /// what could not be carried over, one line each (a fragmented layout holds no timecode
    /// track).
    public mutating func carryOver(from movie: MovieReader, videoTrack: Int) -> [String] {
        var left: [String] = []
        if timecode == nil, let index = movie.timecodeTrackIndex(forVideoTrack: videoTrack) {
            if case .fragmented = layout {
                left.append("the timecode track: a fragmented movie holds none; write a progressive or faststart movie to keep it")
            } else {
                do {
                    let info = try movie.timecodeTrack(index)
                    if let first = info.samples.first {
                        var track = MovieWriter.TimecodeTrack(format: info.format, startFrameNumber: first.frameNumber)
                        track.runs = info.samples.map { .init(time: $0.start - first.start, frameNumber: $0.frameNumber) }
                        timecode = track
                    }
                } catch {
                    left.append("the timecode track: " + error.description)
                }
            }
        }
        let keys = Set(metadata.map(\.key))
        for item in movie.metadata where !keys.contains(item.key) {
            do {
                try MetadataItem.validate([item], for: fileType, path: movie.path)
                metadata.append(item)
            } catch {
                left.append("metadata \(item.key): \(error.reason)")
            }
        }
        if transform == .identity, movie.tracks.indices.contains(videoTrack) { transform = movie.tracks[videoTrack].matrix }
        return left
    }
}
