/// The times of a file played again and again (`--loop`): each pass follows the one before it,
/// its samples shifted so that decode and presentation times keep rising across passes.
///
/// Every track of a pass is shifted by one exact amount (a picture and its sound stay in sync),
/// the least that keeps each track's samples after its own last ones: the pass before's length
/// by its longest track (its first decoding time to its last sample's end). That track then
/// runs on without a gap, and a shorter one waits the difference: a file's sound that starts
/// a priming frame before its picture plays on continuously from pass to pass, and its picture
/// shows its last frame a little longer (a gap in sound is heard, a longer frame is not).
///
/// Each track's samples move by that shift rounded up to a tick of the track's own timescale
/// as a movie or segment writer takes it (a timescale under 10000 doubled until it is not, as
/// FFmpeg and `TrackTimeline` choose a picture's), so that every shifted time is whole in it:
/// the sound, whose frames are whole ticks of its sample rate, by the exact shift (its frames
/// follow each other exactly across every seam), the picture within one of its ticks of it
/// (1/15360 s, not accumulating: the next shift is counted from the exact one, not the rounded).
///
/// A sound's frame ends where its whole frame does (1,024 samples of AAC), also the last one an
/// edit list cuts short: a frame cannot be cut, and the passes have no edit list of their own,
/// so the next pass starts after all of it (FFmpeg's file with `-shortest` ends its sound 256
/// samples into its last frame: followed from there, every seam overlapped the frame before).
public struct LoopTimeline: Sendable, Hashable {
    /// The exact shift of the current pass (each track's samples move by it rounded up to a
    /// tick of their timescale: ``offset(of:)``).
    public private(set) var offset = MediaTime.zero
    /// Where the samples placed so far end (decode time plus duration, shifted); nil before
    /// the first.
    public private(set) var end: MediaTime?
    /// Where they end on the exact shifts (what the next pass's shift is counted from).
    private var exactEnd: MediaTime?
    private var startsPass = false
    private var tracks: [TrackID: Track] = [:]

    /// A track's first decoding time in a pass (unshifted: every pass is the same file), where
    /// its samples placed so far end on the exact shifts, the timescale its times are whole
    /// in, and the current pass's shift of its samples.
    private struct Track: Sendable, Hashable {
        var first: MediaTime
        var end: MediaTime
        var timescale: Int32
        var shift: MediaTime
    }

    /// Whether the pass being placed began at the file's start (its firsts are the file's).
    private var passIsWhole: Bool

    /// A timeline before its first sample; `firstPassIsWhole` false when the first pass starts
    /// after the file's start (a seek): the second pass then follows every sample of the first
    /// (not knowing where each track begins), the later ones as the type's discussion says.
    public init(firstPassIsWhole: Bool = true) {
        passIsWhole = firstPassIsWhole
    }

    /// How far the samples of `track` are shifted in the current pass: ``offset`` rounded up
    /// to a tick of the track's timescale (``offset`` itself for a track not seen yet).
    public func offset(of track: TrackID) -> MediaTime {
        tracks[track]?.shift ?? offset
    }

    /// Another pass begins: its first sample is placed after the last one's of every track.
    public mutating func beginPass() {
        startsPass = exactEnd != nil
        if !passIsWhole { tracks = tracks.mapValues { Track(first: .invalid, end: $0.end, timescale: $0.timescale, shift: $0.shift) } }
        passIsWhole = true
    }

    /// Shifts `sample`'s times onto the timeline.
    public mutating func place(_ sample: inout SampleBuffer) {
        if startsPass, let exactEnd {
            // The least shift after which every track's first sample of this pass comes at or
            // after its own end (the first pass's firsts: the same file again).
            // (After a partial pass: after every sample placed, from this first one.)
            let spans = tracks.values.map { $0.first.isNumeric ? $0.end - $0.first : exactEnd - sample.decodeTime }
            offset = spans.max(by: <) ?? (exactEnd - sample.decodeTime)
            for (id, track) in tracks { tracks[id]!.shift = Self.shift(offset, wholeIn: track.timescale) }
            startsPass = false
        }
        var track = tracks[sample.trackID] ?? Track(first: .invalid, end: .invalid, timescale: Self.timescale(of: sample), shift: .zero)
        if !tracks.keys.contains(sample.trackID) { track.shift = Self.shift(offset, wholeIn: track.timescale) }
        let first = sample.decodeTime
        var sampleEnd = sample.decodeTime + sample.duration
        if let sound = sample.audioFormatDescription, sound.framesPerPacket > 1, sound.sampleRate > 0 {
            let whole = sample.decodeTime + sound.packetDuration
            if whole > sampleEnd { sampleEnd = whole }
        }
        if track.shift != .zero {
            sample.timing.presentationTime = sample.presentationTime + track.shift
            sample.timing.decodeTime = sample.decodeTime + track.shift
        }
        let shiftedEnd = sampleEnd + track.shift, exactSampleEnd = sampleEnd + offset
        if end.map({ shiftedEnd > $0 }) ?? true { end = shiftedEnd }
        if exactEnd.map({ exactSampleEnd > $0 }) ?? true { exactEnd = exactSampleEnd }
        if !track.end.isNumeric || exactSampleEnd > track.end { track.end = exactSampleEnd }
        if passIsWhole && !track.first.isNumeric { track.first = first }
        tracks[sample.trackID] = track
    }

    /// The timescale a writer keeps a sample's track in: its decoding time's, under 10000
    /// doubled until it is not (nil time: 1, any shift whole).
    private static func timescale(of sample: SampleBuffer) -> Int32 {
        guard sample.decodeTime.isNumeric else { return 1 }
        var scale = sample.decodeTime.timescale
        while scale > 0 && scale < 10_000 { scale *= 2 }
        return max(scale, 1)
    }

    /// `offset` rounded up to a whole number of ticks of `timescale`.
    private static func shift(_ offset: MediaTime, wholeIn timescale: Int32) -> MediaTime {
        guard offset != .zero, timescale > 1 else { return offset }
        let rounded = offset.converted(toTimescale: timescale, rounding: .towardPositiveInfinity)
        // (A new exact time: the rounding was meant, and a rounded flag would follow every sample.)
        return MediaTime(value: rounded.value, timescale: rounded.timescale)
    }
}
