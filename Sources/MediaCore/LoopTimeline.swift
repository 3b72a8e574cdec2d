/// The times of a file played again and again (`--loop`): each pass follows the one before it,
/// its samples shifted so that decode and presentation times keep rising across passes.
public struct LoopTimeline: Sendable, Hashable {
    /// How far the samples of the current pass are shifted.
    public private(set) var offset = MediaTime.zero
    /// Where the samples placed so far end (decode time plus duration, shifted); nil before
    /// the first.
    public private(set) var end: MediaTime?
    private var startsPass = false

    /// A timeline before its first sample.
    public init() {}

    /// Another pass begins: its first sample is placed at the end of the last one.
    public mutating func beginPass() {
        startsPass = end != nil
    }

    /// Shifts `sample`'s times onto the timeline.
    public mutating func place(_ sample: inout SampleBuffer) {
        if startsPass, let end {
            offset = end - sample.decodeTime
            startsPass = false
        }
        if offset != .zero {
            sample.timing.presentationTime = sample.presentationTime + offset
            sample.timing.decodeTime = sample.decodeTime + offset
        }
        let sampleEnd = sample.decodeTime + sample.duration
        if end.map({ sampleEnd > $0 }) ?? true { end = sampleEnd }
    }
}
