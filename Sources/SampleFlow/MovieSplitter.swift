import FoundationEssentials
public import ISOBMFF
import MPEGTS
public import MediaCore
import SystemIO

/// Where a split put each segment: what `h264kit split` writes as `index.json`.
public struct SegmentIndex: Sendable, Hashable, Codable {
    /// One segment file.
    public struct Segment: Sendable, Hashable, Codable {
        /// The file name, in the directory of the split.
        public var file: String
        /// The presentation time of its first shown frame, seconds.
        public var firstPresentationTime: Double
        /// The presentation time of its last shown frame, seconds.
        public var lastPresentationTime: Double
        /// The same times as exact fractions of a second ("1001/30000").
        public var firstPresentationTimeExact: String
        /// The last presentation time as an exact fraction.
        public var lastPresentationTimeExact: String
        /// Samples (frames) in it.
        public var frameCount: Int

        /// A segment entry.
        public init(file: String, firstPresentationTime: MediaTime, lastPresentationTime: MediaTime, frameCount: Int) {
            self.file = file
            self.firstPresentationTime = firstPresentationTime.seconds
            self.lastPresentationTime = lastPresentationTime.seconds
            firstPresentationTimeExact = "\(firstPresentationTime.value)/\(firstPresentationTime.timescale)"
            lastPresentationTimeExact = "\(lastPresentationTime.value)/\(lastPresentationTime.timescale)"
            self.frameCount = frameCount
        }
    }

    /// The input that was split.
    public var source: String
    /// The segments, in order (their file names sort in the same order).
    public var segments: [Segment]
    /// What the reader warned of while splitting (damage it kept or left out, corrected
    /// times); not written to `index.json`.
    public var warnings: [String] = []

    private enum CodingKeys: String, CodingKey { case source, segments }

    /// An index of `segments` cut from `source`.
    public init(source: String, segments: [Segment]) {
        self.source = source
        self.segments = segments
    }

    /// The index's name in the directory of a split.
    public static let fileName = "index.json"

    /// The largest index read, bytes (a million segments' entries).
    public static let maximumSize = 256 << 20

    /// The index a split wrote at `path` (`DIR/index.json`), at most ``maximumSize`` bytes.
    public init(contentsOf path: String) throws(SampleFlowError) {
        let bytes: [UInt8]
        do { bytes = try filePrefix(path, count: Self.maximumSize + 1) } catch { throw .file(error) }
        guard bytes.count <= Self.maximumSize else {
            throw .splitIndex(path: path, reason: "larger than \(Self.maximumSize) bytes: not a split index", underlying: nil)
        }
        do { self = try JSONDecoder().decode(SegmentIndex.self, from: Data(bytes)) } catch {
            throw .splitIndex(path: path, reason: "not a split index", underlying: error)
        }
    }

    /// Writes the index to `directory/index.json` as JSON (sorted keys), under a temporary name
    /// renamed into place.
    public func write(into directory: String) throws(SampleFlowError) {
        let path = (directory.isEmpty ? "." : directory) + "/" + Self.fileName
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let json: Data
        do { json = try encoder.encode(self) } catch { throw .splitIndex(path: path, reason: "cannot be encoded", underlying: error) }
        do throws(SystemError) {
            let file = try OutputFile(path: path)
            try file.write(Array(json))
            try file.commit()
        } catch {
            throw .file(error)
        }
    }

    /// The segments' paths, for an index read from the file at `indexPath` (the segments sit
    /// beside it: `/index.json`'s are in `/`, `index.json`'s in the current directory).
    public func segmentPaths(besideIndexAt indexPath: String) -> [String] {
        let directory = indexPath.lastIndex(of: "/").map { String(indexPath[...$0]) } ?? ""
        return segments.map { directory + $0.file }
    }
}

/// Cuts an input into standalone movies at sync samples, without decoding or re-encoding:
/// `h264kit split`. Each segment keeps its samples' presentation and decode times (an empty
/// edit before the first shown frame; ffprobe reports it as the start time), so joining the
/// segments with ``MovieConcatenator`` gives back the input's samples and times.
///
/// A cut is made at the first sync sample at or after each multiple of the segment duration
/// (counted from the first shown frame) that no later sample is shown before: a sync sample
/// followed by leading pictures of an open GOP (B-frames that refer back across it) is not a
/// clean cut, as those pictures would not decode in the new segment; the cut moves to the next
/// clean sync sample. Memory is bounded by the samples between a sync sample and the first
/// sample decoded after it is shown.
///
/// Sound goes with the picture (``tracks``): every audio frame goes to the one segment whose
/// video it starts within (a frame starting before the first frame shown goes to the first
/// segment, with the source's priming trim), so each segment plays its own stretch of sound,
/// within a frame of its video's, and the segments joined give back the source's frames and
/// sound. Frames past the next possible cut wait until it is made: at most the audio of one
/// run of samples between sync samples is held.
public struct MovieSplitter: Sendable {
    /// The target length of a segment; segments are longer when sync samples are rarer.
    public var segmentDuration: MediaTime
    /// The segments' file type.
    public var fileType: MovieFileType
    /// The segment files' names: this prefix, a five-digit number from 00000, the type's extension.
    public var namePrefix: String
    /// Give every segment a movie input's metadata, display transform and timecode track (each
    /// segment's timecode starting at its first frame's).
    public var carriesOverMovieData: Bool
    /// What a cancelled split does: finish the segment being written and return the index of
    /// the segments so far (true, the default: `h264kit split` stopped by Ctrl-C keeps them, as
    /// a stopped mux keeps its movie), or remove every segment it wrote and throw
    /// ``SampleFlowError/cancelled`` (false: a job that needs the whole split, as a chunked
    /// transcode does). Either way a split cancelled before its first segment throws
    /// ``SampleFlowError/cancelled``.
    public var keepsSegmentsWhenCancelled = true
    /// Which of the input's tracks go into the segments: all of them (video and sound) by
    /// default; ``MediaSource/TrackSelection/firstVideo`` splits the picture alone. The cuts
    /// are the video's.
    public var tracks: MediaSource.TrackSelection = .all

    /// A splitter into segments of about `segmentDuration`.
    public init(segmentDuration: MediaTime, fileType: MovieFileType = .mp4, namePrefix: String = "seg-", carriesOverMovieData: Bool = true) {
        self.segmentDuration = segmentDuration
        self.fileType = fileType
        self.namePrefix = namePrefix
        self.carriesOverMovieData = carriesOverMovieData
    }

    /// The name of segment `number`.
    public func fileName(_ number: Int) -> String {
        let digits = String(number)
        return namePrefix + String(repeating: "0", count: max(0, 5 - digits.count)) + digits + (fileType == .mov ? ".mov" : ".mp4")
    }

    /// Splits the input at `path` into `directory` (which must exist); returns the index.
    /// Every segment is complete when it is named; a failure leaves the complete segments.
    /// Cancelling the calling task stops the reading: see ``keepsSegmentsWhenCancelled``.
    /// `progress` is called with each segment's number (from 0) once it is complete.
    public func split(path: String, into directory: String, sourceOptions: MediaSource.Options = .decoding,
                      progress: (_ segment: Int) -> Void = { _ in }) throws(SampleFlowError) -> SegmentIndex {
        guard segmentDuration.isNumeric, segmentDuration > .zero else { throw .invalidOption("the segment duration \(segmentDuration) is not a positive time") }
        if Task.isCancelled { throw .cancelled }
        var sourceOptions = sourceOptions
        if sourceOptions.trackID == nil { sourceOptions.tracks = tracks }
        let source = try MediaSource(path: path, options: sourceOptions)
        var segments: [SegmentIndex.Segment] = []
        var writer: SegmentWriter?
        do throws(SampleFlowError) {
            return try split(source, path: path, into: directory, segments: &segments, writer: &writer, progress: progress)
        } catch {
            // Cut short: what is not to be kept goes (the segment being written was never named).
            writer?.cancel()
            if Task.isCancelled && !keepsSegmentsWhenCancelled {
                for segment in segments { removeFile(directory + "/" + segment.file) }
                throw .cancelled
            }
            throw error
        }
    }

    private func split(_ source: MediaSource, path: String, into directory: String, segments: inout [SegmentIndex.Segment], writer: inout SegmentWriter?,
                       progress: (Int) -> Void) throws(SampleFlowError) -> SegmentIndex {
        var origin: MediaTime?
        // Samples after a candidate sync sample, held until a sample decoded at or after its
        // presentation time shows it is a clean cut (or is not).
        var held: [SampleBuffer] = []
        var base = MovieWriter.Options(fileType: fileType, keepsStartTime: true)
        if carriesOverMovieData, case .movie(let movie, let track, _) = source.kind {
            _ = base.carryOver(from: movie, videoTrack: track)  // what does not fit a segment's type is left out
        }

        // Audio frames not yet placed: those at or past the next possible cut, and those
        // before the first segment is opened.
        var sound: [SampleBuffer] = []
        // Where the segment being written may end at the earliest (the next cut is at or after).
        func nextDue() -> MediaTime? { origin.map { $0 + segmentDuration * Int64(segments.count + 1) } }
        /// Writes the waiting frames that start before `end` (all with nil) to the open segment.
        func placeSound(before end: MediaTime?) throws(SampleFlowError) {
            guard writer != nil else { return }
            var kept: [SampleBuffer] = []
            for frame in sound {
                if let end, frame.presentationTime >= end { kept.append(frame) } else { try writer!.append(frame) }
            }
            sound = kept
        }

        func emit(_ sample: SampleBuffer) throws(SampleFlowError) {
            if writer == nil || (sample.isSync && isDue(sample, origin: origin, count: segments.count + 1) && isClean(sample, held)) {
                // The frames that start before the cut end the segment.
                if writer != nil { try placeSound(before: sample.presentationTime) }
                if let finished = try writer?.finish() {
                    segments.append(finished.segment)
                    // One timeline for all: the first segment's start (its sound may start
                    // before its picture) is every segment's time 0.
                    if base.startTime == nil { base.startTime = finished.startTime }
                    progress(segments.count - 1)
                }
                var options = base
                // A clean cut is the segment's first shown frame.
                if let origin, writer != nil { options.timecode = base.timecode?.starting(at: sample.presentationTime - origin) }
                writer = try SegmentWriter(path: directory + "/" + fileName(segments.count), fileName: fileName(segments.count), options: options)
                // Every segment has the source's tracks in the source's order, whichever sample comes first.
                try writer!.declare(source.tracks.filter { $0.mediaType != .timecode })
                try placeSound(before: nextDue())
            }
            try writer!.append(sample)
        }

        func take(_ sample: SampleBuffer) throws(SampleFlowError) {
            if sample.mediaType != .video {
                // Placed now when no cut can come before it; held until the cut otherwise.
                if writer != nil, sound.isEmpty, let due = nextDue(), sample.presentationTime < due {
                    try writer!.append(sample)
                } else {
                    sound.append(sample)
                }
                return
            }
            // Counted from the first frame shown (a pre-roll the edit list hides is not).
            if !sample.attachments.doNotDisplay, origin.map({ sample.presentationTime < $0 }) ?? true { origin = sample.presentationTime }
            held.append(sample)
            // The first held sample waits while it is a sync sample that may be a cut and the
            // samples after it may still be shown before it.
            while let first = held.first {
                let waiting = first.isSync && held.count > 1 ? held.last!.decodeTime < first.presentationTime : first.isSync
                if waiting && held.count < Self.maximumLookahead { break }
                held.removeFirst()
                try emit(first)
            }
        }

        // The tracks in decoding order, so that a frame of sound comes before the cut it precedes.
        var ordered = DecodeOrderBuffer()
        while let sample = try source.next() {
            if Task.isCancelled {
                if !keepsSegmentsWhenCancelled || writer == nil { throw .cancelled }
                break
            }
            for due in ordered.push(sample) { try take(due) }
        }
        // A cancelled split ends with what was placed: the window still held goes unread.
        if !Task.isCancelled { for rest in ordered.drain() { try take(rest) } }
        while !held.isEmpty { try emit(held.removeFirst()) }
        if writer == nil && !sound.isEmpty {
            throw .noSamples(input: source.name, reason: "no video to cut at (a split cuts at the video's sync samples); nothing written")
        }
        try placeSound(before: nil)
        if let finished = try writer?.finish() {
            writer = nil
            segments.append(finished.segment)
            progress(segments.count - 1)
        }
        if Task.isCancelled && (!keepsSegmentsWhenCancelled || segments.isEmpty) { throw .cancelled }
        guard !segments.isEmpty else {
            throw .noSamples(input: source.name, reason: "no samples; nothing written")
        }
        var index = SegmentIndex(source: path, segments: segments)
        index.warnings = source.warnings
        return index
    }

    /// Samples held while deciding whether a sync sample is a clean cut.
    static let maximumLookahead = 64

    private func isDue(_ sample: SampleBuffer, origin: MediaTime?, count: Int) -> Bool {
        guard let origin else { return false }
        return sample.presentationTime >= origin + segmentDuration * Int64(count)
    }

    /// Whether no sample after the sync sample (those held) is shown before it.
    private func isClean(_ sync: SampleBuffer, _ after: [SampleBuffer]) -> Bool {
        !after.contains { $0.presentationTime < sync.presentationTime }
    }
}

/// One segment being written.
private struct SegmentWriter {
    let writer: MovieWriter
    let fileName: String
    var first: MediaTime?
    var last: MediaTime?
    var count = 0

    init(path: String, fileName: String, options: MovieWriter.Options) throws(SampleFlowError) {
        do { writer = try MovieWriter(path: path, options: options) } catch { throw .container(error) }
        self.fileName = fileName
    }

    func declare(_ tracks: [TrackDescription]) throws(SampleFlowError) {
        for track in tracks {
            do { try writer.addTrack(track) } catch { throw .container(error) }
        }
    }

    mutating func append(_ sample: SampleBuffer) throws(SampleFlowError) {
        do { try writer.append(sample) } catch { throw .sample(index: count, decodeTime: sample.decodeTime, underlying: .container(error)) }
        guard sample.mediaType == .video else { return }  // the index counts and times frames
        count += 1
        if !sample.attachments.doNotDisplay {
            if first.map({ sample.presentationTime < $0 }) ?? true { first = sample.presentationTime }
            if last.map({ sample.presentationTime > $0 }) ?? true { last = sample.presentationTime }
        }
    }

    /// The segment's entry, and the source time its movie starts at.
    func finish() throws(SampleFlowError) -> (segment: SegmentIndex.Segment, startTime: MediaTime) {
        let summary: MovieWriter.Summary
        do { summary = try writer.finish() } catch { throw .container(error) }
        return (SegmentIndex.Segment(file: fileName, firstPresentationTime: first ?? .zero, lastPresentationTime: last ?? .zero, frameCount: count), summary.startTime)
    }

    /// Drops the segment being written: nothing is left of it.
    func cancel() { writer.cancel() }
}
