public import MediaCore

/// A timecode track as read (the AVAssetReader timecode track output of TN2310 listing 6):
/// its format, and its samples placed on the movie's presentation timeline.
public struct TimecodeTrackInfo: Sendable {
    /// One sample: from `start`, for `duration`, frames count on from `frameNumber`.
    public struct Sample: Sendable, Hashable {
        /// The frame number the sample stores: the label of its first frame.
        public var frameNumber: Int64
        /// Presentation time on the movie timeline (edit list applied).
        public var start: MediaTime
        /// How long the sample lasts on the movie timeline.
        public var duration: MediaTime
    }

    /// The timecode track's `tkhd` track_ID.
    public var trackID: UInt32
    /// The format of the track's samples: frame duration, quanta, flags and reel name.
    public var format: TimecodeFormatDescription
    /// The samples in presentation order.
    public var samples: [Sample]

    /// The timecode of the first sample (what FFmpeg reports as the `timecode` tag).
    public func startTimecode() throws(TimecodeError) -> Timecode? {
        guard let first = samples.first else { return nil }
        return try format.timecode(forFrameNumber: first.frameNumber)
    }

    /// The frame number at presentation time `time`: the sample covering it, counted on by
    /// whole frames; before the first sample nil, after the last the last keeps counting.
    public func frameNumber(at time: MediaTime) -> Int64? {
        // The last sample starting at or before `time` (samples are in presentation order).
        var low = 0, high = samples.count
        while low < high {
            let middle = (low + high) / 2
            if samples[middle].start <= time { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let sample = samples[low - 1]
        return format.frameNumber(sample.frameNumber, advancedBy: time - sample.start)
    }

    /// The timecode label at presentation time `time`, or nil before the first sample.
    public func timecode(at time: MediaTime) throws(TimecodeError) -> Timecode? {
        guard let number = frameNumber(at: time) else { return nil }
        return try format.timecode(forFrameNumber: number)
    }

    /// The track's frame count: its samples' durations in whole frames.
    public var frameCount: Int64 {
        samples.reduce(0) { total, sample in
            let frames = sample.duration.converted(toTimescale: format.frameDuration.timescale, rounding: .towardZero).value / format.frameDuration.value
            let (sum, overflow) = total.addingReportingOverflow(frames)
            return overflow ? .max : sum
        }
    }
}

extension MovieReader {
    /// The track holding the timecode of video track `index` (its `tref`/`tmcd`), else the
    /// first timecode track in the movie.
    public func timecodeTrackIndex(forVideoTrack index: Int? = nil) -> Int? {
        let isTimecode: (Track) -> Bool = { track in
            track.descriptions.contains { if case .timecode = $0 { true } else { false } }
        }
        if let index, let ids = tracks[index].references["tmcd"] {
            for id in ids { if let found = tracks.firstIndex(where: { $0.id == id && isTimecode($0) }) { return found } }
        }
        return tracks.firstIndex(where: isTimecode)
    }

    /// Reads a timecode track's samples (4 bytes each in `tmcd`, 8 in `tc64`).
    public func timecodeTrack(_ index: Int) throws(ContainerError) -> TimecodeTrackInfo {
        let track = tracks[index]
        let (shift, delay) = editOffsets(track)
        var result: [TimecodeTrackInfo.Sample] = []
        var format: TimecodeFormatDescription?
        for (number, entry) in track.samples.enumerated() {
            guard entry.descriptionIndex >= 1, Int(entry.descriptionIndex) <= track.descriptions.count,
                  case .timecode(let sampleFormat) = track.descriptions[Int(entry.descriptionIndex) - 1] else {
                throw ContainerError(.invalidBox, "timecode sample \(number + 1) has no timecode sample description", path: path, boxPath: "moov/trak")
            }
            format = format ?? sampleFormat
            let bytes = data[Int(entry.offset)..<(Int(entry.offset) + Int(entry.size))]
            let frameNumber: Int64
            do {
                frameNumber = try bytes.withUnsafeBytes { (raw) throws(TimecodeError) -> Int64 in try sampleFormat.frameNumber(sampleData: raw) }
            } catch {
                throw ContainerError(.invalidBox, "timecode sample \(number + 1) of track \(track.id)", path: path, boxPath: "moov/trak/mdia/minf/stbl", byteOffset: Int(entry.offset), cause: error)
            }
            result.append(.init(frameNumber: frameNumber,
                                start: MediaTime(value: entry.decodeTime &- shift &+ delay, timescale: track.timescale),
                                duration: MediaTime(value: Int64(entry.duration), timescale: track.timescale)))
        }
        guard let format = format ?? track.descriptions.lazy.compactMap({ if case .timecode(let f) = $0 { f } else { nil } }).first else {
            throw ContainerError(.unsupported, "track \(track.id) is not a timecode track", path: path)
        }
        // Decode order is presentation order for timecode samples, unless times wrapped.
        if zip(result, result.dropFirst()).contains(where: { $1.start < $0.start }) { result.sort { $0.start < $1.start } }
        return TimecodeTrackInfo(trackID: track.id, format: format, samples: result)
    }
}

extension MovieReader {
    /// The presentation times of a video track's shown frames, in order (the edit list
    /// applied: samples outside it are left out).
    public func displayTimes(track index: Int) throws(ContainerError) -> [MediaTime] {
        let samples = try sampleBuffers(track: index, editList: .trim)
        return samples.filter { !$0.attachments.doNotDisplay }.map(\.presentationTime).sorted { $0 < $1 }
    }

    /// The timecode of every shown frame of `videoTrack` (or, without a video track, of every
    /// frame the timecode track spans), from timecode track `index`. A track spanning more
    /// than `limit` frames is an error rather than a list that size: its durations say more
    /// than any file holds.
    public func frameTimecodes(timecodeTrack index: Int, videoTrack: Int?, limit: Int = 10_000_000) throws(ContainerError) -> [(time: MediaTime, frameNumber: Int64)] {
        let info = try timecodeTrack(index)
        if let videoTrack {
            return try displayTimes(track: videoTrack).compactMap { time in info.frameNumber(at: time).map { (time, $0) } }
        }
        let count = info.frameCount
        guard count <= Int64(limit) else {
            throw ContainerError(.limitExceeded, "timecode track \(info.trackID) spans \(count) frames, over the limit of \(limit) (the limit parameter)",
                                 path: path, boxPath: "moov/trak/mdia/minf/stbl/stts")
        }
        // A timecode track alone: one frame per frame duration.
        return (0..<count).lazy.map { info.format.frameDuration * $0 }.compactMap { time in info.frameNumber(at: time).map { (time, $0) } }
    }
}
