public import MediaCore

extension MovieWriter.Options {
    /// Takes over what a movie carries besides its video samples, for a file made from it (a
    /// transcode, a join): the timecode track of video track `videoTrack` (its runs, counted from
    /// the first shown frame), the movie's metadata items that this file type can hold, and the
    /// track's display transform. Returns what could not be carried over, one line each.
    public mutating func carryOver(from movie: MovieReader, videoTrack: Int) -> [String] {
        var left: [String] = []
        if let index = movie.timecodeTrackIndex(forVideoTrack: videoTrack) {
            do {
                let info = try movie.timecodeTrack(index)
                if let first = info.samples.first {
                    var track = MovieWriter.TimecodeTrack(format: info.format, startFrameNumber: first.frameNumber)
                    track.runs = info.samples.map { .init(time: $0.start - first.start, frameNumber: $0.frameNumber) }
                    timecode = track
                }
            } catch {
                left.append("the timecode track: \(error)")
            }
        }
        for item in movie.metadata {
            do {
                try MetadataItem.validate([item], for: fileType, path: movie.path)
                metadata.append(item)
            } catch {
                left.append("metadata \(item.key): \(error.reason)")
            }
        }
        if movie.tracks.indices.contains(videoTrack) { transform = movie.tracks[videoTrack].matrix }
        return left
    }
}
