public import MediaCore

/// The samples of a media file (anything ``MediaSource`` reads: Annex-B, MP4, MOV) as an async
/// sequence (for an RTP sender, a display), optionally looped: each pass after the first is
/// shifted by the length of the ones before it, so that times keep rising (`ffmpeg
/// -stream_loop -1`). A read error ends the sequence with the ``SampleFlowError`` that names
/// the file and the place.
public struct MediaFileSamples: AsyncSequence, Sendable {
    /// One pass over the file, or passes without end.
    public let path: String
    /// How the file is read.
    public let options: MediaSource.Options
    /// Start again at the first sample after the last.
    public let loops: Bool
    /// Called with the reader's warnings (damage kept or left out, corrected times) when the
    /// first pass ends, if it had any: a streaming sender has no summary to put them in.
    public let onWarnings: (@Sendable ([String]) -> Void)?

    /// The samples of the file at `path`; `onWarnings` hears what the first pass warned of.
    public init(path: String, options: MediaSource.Options = .init(), loops: Bool = false, onWarnings: (@Sendable ([String]) -> Void)? = nil) {
        self.path = path
        self.options = options
        self.loops = loops
        self.onWarnings = onWarnings
    }

    /// An iterator that opens the file on its first call.
    public func makeAsyncIterator() -> Iterator {
        var iterator = Iterator(path: path, options: options, loops: loops)
        iterator.reader.onWarnings = onWarnings
        return iterator
    }

    /// Reads the file pass after pass.
    public struct Iterator: AsyncIteratorProtocol {
        var reader: LoopingSampleReader

        init(path: String, options: MediaSource.Options, loops: Bool) {
            reader = LoopingSampleReader(path: path, options: options, loops: loops)
        }

        /// The next sample, its times shifted for the pass it is in; nil at the end.
        public mutating func next() async throws(SampleFlowError) -> SampleBuffer? { try reader.next() }
    }
}

/// A media file's samples pass after pass, synchronously: each pass after the first shifted by
/// the length of the ones before it, so that times keep rising.
package struct LoopingSampleReader {
    let path: String
    let options: MediaSource.Options
    let loops: Bool
    var source: MediaSource?
    var timeline = LoopTimeline()
    var samplesInPass = 0
    var finished = false
    var start: MediaTime?
    /// Hears the first pass's warnings at its end.
    package var onWarnings: (@Sendable ([String]) -> Void)?
    private var passes = 0

    package init(path: String, options: MediaSource.Options, loops: Bool) {
        self.path = path
        self.options = options
        self.loops = loops
    }

    /// Whether the last pass has ended (or a read failed).
    package var isFinished: Bool { finished }

    /// Starts the first pass at the last sync sample shown at or before `time` (a movie; an
    /// Annex-B stream starts at its beginning).
    package mutating func seek(to time: MediaTime) {
        start = time
        if time > .zero { timeline = LoopTimeline(firstPassIsWhole: false) }
    }

    /// The next sample, its times shifted for the pass it is in; nil at the end.
    package mutating func next() throws(SampleFlowError) -> SampleBuffer? {
        while !finished {
            if source == nil {
                do { source = try MediaSource(path: path, options: options) } catch {
                    finished = true
                    throw error
                }
                if let start, timeline.end == nil, start > .zero { _ = source?.seek(toPresentationTime: start) }
            }
            let read: SampleBuffer?
            do { read = try source?.next() } catch {
                finished = true
                throw error
            }
            guard var sample = read else {
                // The end of a pass: another one, following this one, when looping (and when
                // the pass held anything).
                if passes == 0, let onWarnings, let warnings = source?.warnings, !warnings.isEmpty { onWarnings(warnings) }
                passes += 1
                source = nil
                guard loops, samplesInPass > 0 else { finished = true; return nil }
                samplesInPass = 0
                timeline.beginPass()
                continue
            }
            samplesInPass += 1
            timeline.place(&sample)
            return sample
        }
        return nil
    }
}
