import MediaCore

/// Puts samples of several tracks back in the order of their decoding times, when a source
/// gives each track in order but the tracks out of step with each other (a transport stream's
/// audio PES packets each carry up to a third of a second of frames, and muxers place them
/// ahead of or behind the video by as much again). A sample is let out once a sample read after
/// it is decoded ``window`` later, or when more than ``maximumCount`` are held: memory is a
/// window of samples.
struct DecodeOrderBuffer {
    /// How far apart in decoding time the tracks may come: 1 s (FFmpeg's muxers keep them
    /// within 0.7 s).
    var window = MediaTime(value: 1, timescale: 1)
    /// The most samples held.
    static let maximumCount = 4096

    /// Held samples, in decoding order (ties: in the order read).
    private var held: [SampleBuffer] = []
    private var start = 0
    private var latest: MediaTime?

    /// Takes a sample in; returns those now due, in decoding order.
    mutating func push(_ sample: SampleBuffer) -> [SampleBuffer] {
        // Insert after every held sample decoded at or before it: most come last.
        var index = held.endIndex
        while index > start, sample.decodeTime < held[index - 1].decodeTime { index -= 1 }
        held.insert(sample, at: index)
        if latest.map({ sample.decodeTime > $0 }) ?? true { latest = sample.decodeTime }
        var due: [SampleBuffer] = []
        while start < held.endIndex, held.endIndex - start > Self.maximumCount || held[start].decodeTime + window <= latest! {
            due.append(held[start])
            start += 1
        }
        if start > 1024 {
            held.removeFirst(start)
            start = 0
        }
        return due
    }

    /// Every held sample, in decoding order, at the end of the source.
    mutating func drain() -> [SampleBuffer] {
        let rest = Array(held[start...])
        held = []
        start = 0
        return rest
    }
}
