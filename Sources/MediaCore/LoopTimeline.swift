/// The times of a file played again and again (`--loop`): each pass follows the one before it,
/// its samples shifted so that decode and presentation times keep rising across passes.
///
/// Every track of a pass is shifted by the same amount (a picture and its sound stay in sync),
/// the least that keeps each track's samples after its own last ones: the pass before's length
/// by its longest track (its first decoding time to its last sample's end). That track then
/// runs on without a gap, and a shorter one waits the difference: a file's sound that starts
/// a priming frame before its picture plays on continuously from pass to pass, and its picture
/// shows its last frame a little longer (a gap in sound is heard, a longer frame is not). The
/// shift is a whole number of ticks of every track's timescale as a movie or segment writer
/// takes it (a timescale under 10000 doubled until it is not, as FFmpeg and `TrackTimeline`
/// choose a picture's): rounded up to one over their greatest common divisor (1/3200 s for
/// 12800 and 48000; at most 10 samples of 48 kHz sound), so that every shifted time is whole.
///
/// A sound's frame ends where its whole frame does (1,024 samples of AAC), also the last one an
/// edit list cuts short: a frame cannot be cut, and the passes have no edit list of their own,
/// so the next pass starts after all of it (FFmpeg's file with `-shortest` ends its sound 256
/// samples into its last frame: followed from there, every seam overlapped the frame before).
public struct LoopTimeline: Sendable, Hashable {
    /// How far the samples of the current pass are shifted.
    public private(set) var offset = MediaTime.zero
    /// Where the samples placed so far end (decode time plus duration, shifted); nil before
    /// the first.
    public private(set) var end: MediaTime?
    private var startsPass = false
    /// Each track's first decoding time in a pass (unshifted: every pass is the same file)
    /// and where its samples placed so far end (shifted).
    private var tracks: [TrackID: Span] = [:]
    /// The greatest common divisor of the tracks' timescales (nil before the first sample).
    private var commonTimescale: Int32?

    private struct Span: Sendable, Hashable {
        var first: MediaTime
        var end: MediaTime
    }

    /// Whether the pass being placed began at the file's start (its firsts are the file's).
    private var passIsWhole: Bool

    /// A timeline before its first sample; `firstPassIsWhole` false when the first pass starts
    /// after the file's start (a seek): the second pass then follows every sample of the first
    /// (not knowing where each track begins), the later ones as the type's discussion says.
    public init(firstPassIsWhole: Bool = true) {
        passIsWhole = firstPassIsWhole
    }

    /// Another pass begins: its first sample is placed after the last one's of every track.
    public mutating func beginPass() {
        startsPass = end != nil
        if !passIsWhole { tracks = tracks.mapValues { Span(first: .invalid, end: $0.end) } }
        passIsWhole = true
    }

    /// Shifts `sample`'s times onto the timeline.
    public mutating func place(_ sample: inout SampleBuffer) {
        if startsPass {
            // The least shift after which every track's first sample of this pass comes at or
            // after its own end (the first pass's firsts: the same file again).
            // (After a partial pass: after every sample placed, from this first one.)
            let spans = tracks.values.map { $0.first.isNumeric ? $0.end - $0.first : end! - sample.decodeTime }
            let needed = spans.max(by: <) ?? (end! - sample.decodeTime)
            // (A new exact time: the rounding was meant, and a rounded flag would follow every sample.)
            offset = commonTimescale.map { scale in
                let rounded = needed.converted(toTimescale: scale, rounding: .towardPositiveInfinity)
                return MediaTime(value: rounded.value, timescale: rounded.timescale)
            } ?? needed
            startsPass = false
        }
        if offset != .zero {
            sample.timing.presentationTime = sample.presentationTime + offset
            sample.timing.decodeTime = sample.decodeTime + offset
        }
        if sample.decodeTime.isNumeric {
            var scale = sample.decodeTime.timescale
            while scale > 0 && scale < 10_000 { scale *= 2 }
            commonTimescale = commonTimescale.map { Self.gcd($0, scale) } ?? scale
        }
        var sampleEnd = sample.decodeTime + sample.duration
        if let sound = sample.audioFormatDescription, sound.framesPerPacket > 1, sound.sampleRate > 0 {
            let whole = sample.decodeTime + sound.packetDuration
            if whole > sampleEnd { sampleEnd = whole }
        }
        if end.map({ sampleEnd > $0 }) ?? true { end = sampleEnd }
        if let known = tracks[sample.trackID] {
            if sampleEnd > known.end { tracks[sample.trackID]!.end = sampleEnd }
            if passIsWhole && !known.first.isNumeric { tracks[sample.trackID]!.first = sample.decodeTime - offset }
        } else {
            tracks[sample.trackID] = Span(first: passIsWhole ? sample.decodeTime - offset : .invalid, end: sampleEnd)
        }
    }

    private static func gcd(_ a: Int32, _ b: Int32) -> Int32 {
        var (x, y) = (abs(a), abs(b))
        while y != 0 { (x, y) = (y, x % y) }
        return max(x, 1)
    }
}
