package import MediaCore
package import SampleFlow

/// One sound track of a package cut into fragmented MP4 segments of its own, where the
/// picture's segments end (Apple's authoring specification: an audio rendition's segments
/// aligned with the video's): each frame goes to the segment whose span, moved by half a frame,
/// holds its start, so a boundary lands within half a frame of the picture's.
///
/// Frames wait (in ``waiting``) until the picture's boundary after them is known: the picture's
/// segment reports give them, a segment behind the sound at most. Memory: the sound of about
/// one segment. Without a picture (a package of sound alone) the first sound ``leads``: it is
/// cut on the segmenter's own schedule, and the others follow its boundaries.
package struct AlignedSoundSegments {
    /// The track.
    package let track: TrackDescription
    /// The rendition's name in the file names.
    package let name: String
    /// Its segmenter (fragmented MP4, on the package's timeline).
    package var segmenter: MediaSegmenter
    /// Its segments' reports, in order.
    package var reports: [MediaSegmenter.SegmentReport] = []
    /// Whether its initialization segment is written.
    package var wroteInitialization = false
    /// Frames decoded before the package's time origin, left out.
    package var framesBeforeOrigin = 0
    /// Whether it is cut on its own schedule (no picture): its segments' ends are the others'
    /// boundaries.
    package var leads = false
    /// Frames that wait for the picture's next boundary.
    package private(set) var waiting: [SampleBuffer] = []
    private var head = 0
    /// Frames still waiting (``waiting`` keeps some handed on until it is compacted).
    package var waitingCount: Int { waiting.count - head }
    /// The picture's boundaries this sound has passed.
    private var cuts = 0
    private var started = false

    package init(track: TrackDescription, name: String, segmenter: MediaSegmenter) {
        self.track = track
        self.name = name
        self.segmenter = segmenter
    }

    /// Queues a frame.
    package mutating func enqueue(_ frame: SampleBuffer) { waiting.append(frame) }

    /// Hands every frame whose segment is known to the segmenter; `boundaries` are where the
    /// picture's segments end (from the time origin), `final` once the picture has ended (its
    /// last boundary is then the end, and no cut). `horizon`, when given, is the decoding time
    /// (from the origin) the picture has reached: its next boundary, a sync picture's
    /// presentation time, comes after it, so a frame ending half a frame before it belongs to
    /// the segment being made (a live origin's sound then waits for the picture's decoding
    /// order, not for its segment's end). Returns what the segmenter made, in order, each with
    /// the decoding time of the frame that made it (nil for the end).
    package mutating func drain(boundaries: [MediaTime], origin: MediaTime, final: Bool,
                        horizon: MediaTime? = nil) throws(SampleFlowError) -> [(output: MediaSegmenter.Output, decodeTime: MediaTime?)] {
        var made: [(output: MediaSegmenter.Output, decodeTime: MediaTime?)] = []
        let usable = final ? max(0, boundaries.count - 1) : boundaries.count
        while head < waiting.count {
            let frame = waiting[head]
            let time = frame.presentationTime - origin
            if frame.decodeTime < origin {
                framesBeforeOrigin += 1
                head += 1
                continue
            }
            if leads {
                made.append((try segmenter.append(frame), frame.decodeTime))
                head += 1
                continue
            }
            let half = Self.half(frame.duration)
            var passes = cuts
            while passes < usable && time >= boundaries[passes] - half { passes += 1 }
            // Not yet known whether the next boundary comes before this frame.
            if passes == boundaries.count && !final && !(horizon.map { time + half < $0 } ?? false) { break }
            let cut = started && passes > cuts
            cuts = passes
            started = true
            made.append((try segmenter.append(frame, startsSegment: cut), frame.decodeTime))
            head += 1
        }
        if head > 256 && head * 2 > waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        if final { made.append((try segmenter.finish(), nil)) }
        return made
    }

    /// Half a frame's duration (zero when it has none).
    package static func half(_ duration: MediaTime) -> MediaTime {
        guard duration.isNumeric, duration.value > 0 else { return .zero }
        return duration.timescale <= Int32.max / 2 ? MediaTime(value: duration.value, timescale: duration.timescale * 2)
            : MediaTime(value: duration.value / 2, timescale: duration.timescale)
    }
}
