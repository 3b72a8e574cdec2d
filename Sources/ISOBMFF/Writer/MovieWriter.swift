public import MediaCore
import SystemIO

/// The container flavour: ISO BMFF `.mp4` or QuickTime `.mov`.
public enum MovieFileType: String, Sendable, Hashable, CaseIterable {
    /// An ISO base media file (`.mp4`), or a QuickTime movie (`.mov`).
    case mp4, mov

    /// The type a file name's extension implies (".mov"/".qt" → MOV, else MP4).
    public init(path: String) {
        let lower = path.lowercased()
        self = lower.hasSuffix(".mov") || lower.hasSuffix(".qt") ? .mov : .mp4
    }
}

/// Writes sample buffers to an MP4 or MOV file, a track for each track ID the samples carry
/// (H.264 video, AAC audio, and samples of other codecs with the sample entry they came with),
/// optionally with a timecode track and metadata: the AVAssetWriter analogue, each track ID an
/// AVAssetWriterInput.
///
/// Tracks are made as their first samples come (``Options/tracks`` declares them first, with
/// their languages, and must for a fragmented layout's tracks after the first), in the order
/// they come; every sample of a track goes in in decoding order, and samples of different
/// tracks in the order of their decoding times, as a demuxer gives them: the movie's chunks
/// follow that order. The first video track's samples are written as they come; the other
/// tracks' are gathered into chunks of ``Options/chunkDuration`` (0.5 s) and written between
/// them, so that a player reading the file finds each moment's sound beside its picture. Each
/// track's edit list starts it where its first shown sample is on the common timeline (an empty
/// edit for a track that starts later than the first, as an audio track recorded half a second
/// after its video), and leaves out what is not to be shown: a cut's pre-roll, an AAC encoder's
/// priming (with a `roll` sample group of -1, as FFmpeg and Apple write).
///
/// The writer owns its file from ``init(path:options:)`` to ``finish()``: a progressive or
/// faststart movie is written under a temporary name beside the target and renamed into place
/// once complete, so no reader ever sees a half-written file; a writer that fails, is
/// cancelled or is dropped unfinished removes what it wrote. Three layouts, one interface
/// (see ``Layout``). Chunk offsets switch from `stco` to `co64` by themselves past 4 GiB, and
/// `mdat` takes a 64-bit size. Output is deterministic: no wall-clock times are written.
///
/// A writer is `Sendable`: samples may come from any task or thread, one call at a time in
/// decoding order (calls are serialized). Memory stays bounded by the sample tables (a few
/// bytes per sample) and, for a fragmented file, one fragment.
public final class MovieWriter: Sendable {
    /// Where the index goes.
    public enum Layout: Sendable, Hashable {
        /// `ftyp`, the media, `moov` at the end (what a camera writes).
        case progressive
        /// `moov` before the media, for progressive download, without holding the media in
        /// memory or copying it on ext4/XFS.
        case faststart
        /// `moov` up front, then a `moof` + `mdat` per fragment of about `fragmentDuration`
        /// (cut at sync samples), `mfra` at the end; written in place (or to standard output,
        /// path "-"), so a killed process leaves every complete fragment playable.
        case fragmented(fragmentDuration: MediaTime)
    }

    /// Where the parameter sets live.
    public enum ParameterSetStorage: Sendable, Hashable {
        /// In `avc1` sample entries: a new entry at each change.
        case sampleEntries
        /// In the samples (`avc3`): one entry for the whole stream; a sample whose parameter
        /// sets differ from the previous sample's gets them in front unless it has them.
        case inBand
    }

    /// What to write.
    public struct Options: Sendable, Hashable {
        /// MP4 or MOV: the brands, and where metadata and timecode go.
        public var fileType: MovieFileType
        /// Where the index goes: progressive, faststart or fragmented.
        public var layout: Layout
        /// Composition offsets as signed `ctts` version 1 values instead of an edit-list shift.
        public var negativeCompositionOffsets: Bool
        /// Where the parameter sets live: in `avc1` sample entries or in band (`avc3`).
        public var parameterSets: ParameterSetStorage
        /// A timecode track for the video (TN2310), referenced from it by `tref`/`tmcd`.
        public var timecode: TimecodeTrack?
        /// Movie metadata; an item the file type cannot hold is an error at `init`.
        public var metadata: [MetadataItem]
        /// The video track's display transform (`tkhd` matrix): a rotation, say.
        public var transform: TransformationMatrix
        /// Keep the first shown frame's presentation time: the presentation starts with an
        /// empty edit as long as that time (what a segment cut from a longer movie needs to
        /// keep its place; ffprobe reports it as the stream's start time). Off: the first shown
        /// frame is at time 0. Progressive and faststart layouts; a fragmented file keeps its
        /// decode times in `tfdt` instead.
        public var keepsStartTime: Bool
        /// The samples' time that is the movie's time 0, for every track (nil: the earliest
        /// track's start, or 0 with ``keepsStartTime`` when every track starts after 0). Pieces
        /// cut from one source keep one timeline with it: a split gives every segment the first
        /// segment's (``Summary/startTime``), whose sound may start before its picture. A track
        /// starting before it starts at 0. Progressive and faststart layouts.
        public var startTime: MediaTime?
        /// The tracks to write, declared before their samples come: their IDs, formats and
        /// languages, in the order they go in the file. A track not declared is made when its
        /// first sample comes (with no language).
        public var tracks: [TrackDescription] = []
        /// How much of a track other than the first video track is gathered into one chunk
        /// (at most 1 MiB): 0.5 s, as Apple writes.
        public var chunkDuration = MediaTime(value: 1, timescale: 2)
        /// About how many bytes the file will hold, when the caller knows (a remux: its input's
        /// size). That much disk is allocated before the media is written, which spares the
        /// file system reserving it page by page (a remux of 600 MB of TS on ext4 spends a third
        /// less time in the kernel); what the file does not use is freed when it is finished.
        /// Nil (the default): nothing is reserved. Progressive and faststart layouts, on file
        /// systems that can (`fallocate`); elsewhere it changes nothing.
        public var expectedSize: UInt64?

        /// Options; the defaults write a progressive MP4 with `avc1` sample entries.
        public init(fileType: MovieFileType = .mp4, layout: Layout = .progressive, negativeCompositionOffsets: Bool = false,
                    parameterSets: ParameterSetStorage = .sampleEntries, timecode: TimecodeTrack? = nil, metadata: [MetadataItem] = [],
                    transform: TransformationMatrix = .identity, keepsStartTime: Bool = false) {
            self.keepsStartTime = keepsStartTime
            self.fileType = fileType
            self.layout = layout
            self.negativeCompositionOffsets = negativeCompositionOffsets
            self.parameterSets = parameterSets
            self.timecode = timecode
            self.metadata = metadata
            self.transform = transform
        }
    }

    /// A timecode track: its format, and the timecode of the video's first shown frame; later
    /// runs start where the timecode jumps (an edit), each written as one sample lasting until
    /// the next run or the end of the video's presentation (never longer: the B-frame delay
    /// does not count).
    public struct TimecodeTrack: Sendable, Hashable {
        /// One run: from `time` (presentation time from the first shown frame), frames count on
        /// from `frameNumber`.
        public struct Run: Sendable, Hashable {
            /// Presentation time from the first shown frame.
            public var time: MediaTime
            /// The frame number counted from at `time`.
            public var frameNumber: Int64
            /// A run counting from `frameNumber` at `time`.
            public init(time: MediaTime, frameNumber: Int64) {
                self.time = time
                self.frameNumber = frameNumber
            }
        }

        /// The timecode format: frame duration, quanta, flags and reel name.
        public var format: TimecodeFormatDescription
        /// The runs, in time order; the first at time zero.
        public var runs: [Run]

        /// A track counting from `startFrameNumber` at the first shown frame.
        public init(format: TimecodeFormatDescription, startFrameNumber: Int64) {
            self.format = format
            self.runs = [Run(time: .zero, frameNumber: startFrameNumber)]
        }

        /// A track starting at timecode `start`.
        public init(format: TimecodeFormatDescription, start: Timecode) throws(TimecodeError) {
            self.init(format: format, startFrameNumber: try format.frameNumber(for: start))
        }

        /// From presentation time `time` on, the frames count from `frameNumber`.
        public mutating func jump(at time: MediaTime, to frameNumber: Int64) {
            runs.append(Run(time: time, frameNumber: frameNumber))
        }

        /// The same track for a movie that starts `offset` after this one's first shown frame (a
        /// segment cut from it): its first frame counts from the frame number shown at `offset`.
        public func starting(at offset: MediaTime) -> TimecodeTrack {
            guard offset > .zero, let current = runs.last(where: { $0.time <= offset }) else { return self }
            let elapsed = offset - current.time
            let frames = format.frameDuration.value > 0
                ? (elapsed.converted(toTimescale: format.frameDuration.timescale).value + format.frameDuration.value / 2) / format.frameDuration.value
                : 0
            var track = TimecodeTrack(format: format, startFrameNumber: current.frameNumber + frames)
            for run in runs where run.time > offset { track.jump(at: run.time - offset, to: run.frameNumber) }
            return track
        }
    }

    /// What was written.
    public struct Summary: Sendable, Hashable {
        /// Samples written to the first track (the video, in a movie of video).
        public var sampleCount: Int
        /// Sample descriptions in the file (one for `avc3` and for fragmented files).
        public var sampleDescriptionCount: Int
        /// From the first shown frame to the end of the last.
        public var duration: MediaTime
        /// The file's size in bytes.
        public var fileSize: UInt64
        /// Movie fragments written; 0 unless the layout is fragmented.
        public var fragmentCount: Int
        /// Whether chunk offsets needed 64 bits (`co64`).
        public var usesLargeOffsets: Bool
        /// Each track written, in file order.
        public var tracks: [WrittenTrackSummary] = []
        /// The samples' time that is the movie's time 0 (see ``Options/startTime``).
        public var startTime: MediaTime = .zero

        /// A summary of these values.
        public init(sampleCount: Int, sampleDescriptionCount: Int, duration: MediaTime, fileSize: UInt64, fragmentCount: Int, usesLargeOffsets: Bool,
                    tracks: [WrittenTrackSummary] = []) {
            self.sampleCount = sampleCount
            self.sampleDescriptionCount = sampleDescriptionCount
            self.duration = duration
            self.fileSize = fileSize
            self.fragmentCount = fragmentCount
            self.usesLargeOffsets = usesLargeOffsets
            self.tracks = tracks
        }
    }

    /// One track of a written movie.
    public struct WrittenTrackSummary: Sendable, Hashable {
        /// Its `track_ID` in the file.
        public var trackID: UInt32
        /// The source track ID its samples carried.
        public var sourceTrackID: TrackID
        /// Its kind of media.
        public var mediaType: MediaType
        /// Its codec (`avc1`, `mp4a`, `Opus`).
        public var codec: FourCharCode
        /// Samples written.
        public var sampleCount: Int
        /// From its first shown sample to the end of its last.
        public var duration: MediaTime
        /// Where it starts after the movie's start (its empty edit).
        public var startOffset: MediaTime
    }

    /// The path being written (`"-"` for standard output).
    public let path: String
    /// What the writer was asked to write, checked at `init`.
    public let options: Options
    private let state: Locked<State>

    private enum Phase { case writing, failed(ContainerError), finished }

    private struct State {
        var tracks: [WrittenTrack] = []
        var layout: any MovieLayout
        var phase: Phase = .writing
    }

    /// Opens `path` for writing (`"-"` is standard output, fragmented layout only). Every
    /// option is checked here, before anything is created.
    public init(path: String, options: Options = Options()) throws(ContainerError) {
        self.path = path
        self.options = options
        try Self.check(options, path: path)
        let layout: any MovieLayout
        switch options.layout {
        case .progressive: layout = try ProgressiveLayout(path: path, options: options)
        case .faststart: layout = try FaststartLayout(path: path, options: options)
        case .fragmented(let duration): layout = try FragmentedLayout(path: path, options: options, fragmentDuration: duration)
        }
        var initial = State(layout: layout)
        // The declared tracks come first, in their order, whichever sample comes first.
        for track in options.tracks where !initial.tracks.contains(where: { $0.sourceID == track.id }) {
            _ = Self.makeTrack(for: track.id, into: &initial, options: options, path: path)
        }
        state = Locked(initial)
    }

    /// A new track for samples of `source`: file track IDs from 1 in order of creation.
    private func makeTrack(for source: TrackID, into state: inout State) -> Int {
        Self.makeTrack(for: source, into: &state, options: options, path: path)
    }

    private static func makeTrack(for source: TrackID, into state: inout State, options: Options, path: String) -> Int {
        let fragmented = if case .fragmented = options.layout { true } else { false }
        let timeline = TrackTimeline(path: path, descriptions: options.parameterSets == .inBand || fragmented ? .single : .perChange,
                                     signedOffsets: options.negativeCompositionOffsets)
        let declared = options.tracks.first { $0.id == source }
        state.tracks.append(WrittenTrack(timeline: timeline, fileTrackID: UInt32(state.tracks.count + 1), sourceID: source, language: declared?.language))
        state.tracks[state.tracks.count - 1].declaredType = declared?.mediaType
        return state.tracks.count - 1
    }

    private static func check(_ options: Options, path: String) throws(ContainerError) {
        if let start = options.startTime, !start.isNumeric {
            throw ContainerError(.invalidInput, "start time \(start) is not a numeric time", path: path)
        }
        if case .fragmented(let duration) = options.layout {
            guard duration.isNumeric, duration > .zero else { throw ContainerError(.invalidInput, "fragment duration \(duration) is not positive", path: path) }
            guard options.timecode == nil else {
                throw ContainerError(.invalidInput, "a fragmented movie does not carry a timecode track yet; write a progressive or faststart movie to keep the timecode", path: path)
            }
        } else if path == "-" {
            throw ContainerError(.invalidInput, "only a fragmented movie can be written to standard output (a plain movie's index is written after its media)", path: "stdout")
        }
        try MetadataItem.validate(options.metadata, for: options.fileType, path: path)
        if let timecode = options.timecode {
            guard let first = timecode.runs.first, first.time == .zero else {
                throw ContainerError(.invalidInput, "the timecode track's first run must start at time 0", path: path)
            }
            for (previous, run) in zip(timecode.runs, timecode.runs.dropFirst()) where !(run.time > previous.time) {
                throw ContainerError(.invalidInput, "timecode runs must start at increasing times (\(run.time) after \(previous.time))", path: path)
            }
            for run in timecode.runs {
                do { _ = try timecode.format.sampleData(forFrameNumber: run.frameNumber) } catch {
                    throw ContainerError(.invalidInput, "timecode", path: path, cause: error)
                }
            }
        }
        if path != "-", let status = try? FileStatus.of(path: path), status.kind != .regular {
            // Never rename over a device, a pipe or a directory (the movie is written under a
            // temporary name and renamed into place, or in place when fragmented).
            throw ContainerError(.invalidInput, "not a regular file; a movie is written as a regular file", path: path)
        }
    }

    deinit {
        state.withLock { state in
            if case .finished = state.phase { return }
            state.layout.discard()
        }
    }

    /// Samples written so far, every track's.
    public var sampleCount: Int { state.withLock { $0.tracks.reduce(0) { $0 + $1.timeline.sampleCount } } }

    /// Declares a track before its first sample (AVAssetWriter's `add(_:)`): its language goes
    /// in the movie, and a fragmented movie's header names it even if its first sample comes
    /// after the first fragment's start. Declaring a track again updates its language.
    public func addTrack(_ track: TrackDescription) throws(ContainerError) {
        try state.withLock { (state) throws(ContainerError) in
            if case .failed(let error) = state.phase { throw error }
            if let index = state.tracks.firstIndex(where: { $0.sourceID == track.id }) {
                state.tracks[index].language = track.language
                return
            }
            try state.layout.acceptsNewTrack(track.id, declared: true)
            let index = makeTrack(for: track.id, into: &state)
            state.tracks[index].language = track.language
            state.tracks[index].declaredType = track.mediaType
        }
    }

    /// Appends the next sample, in decoding order. After an error the writer is failed: every
    /// later call throws it again, and nothing is left on disk.
    ///
    /// A sample lasts in the movie from its decode time to the next sample's (the last one for
    /// its own duration), as FFmpeg's muxer writes it: with reordering at a variable rate, a
    /// sample buffer's presentation duration differs from that step. Samples marked
    /// `SampleAttachments/doNotDisplay` before the first shown sample or after the last (a
    /// cut's pre-roll) are stored but left out of the edit list.
    public func append(_ sample: SampleBuffer) throws(ContainerError) {
        try state.withLock { (state) throws(ContainerError) in
            switch state.phase {
            case .writing: break
            case .failed(let error): throw error
            case .finished: throw ContainerError(.invalidInput, "the movie is finished; no more samples can be added", path: path)
            }
            do throws(ContainerError) {
                // By index, not `firstIndex(where:)`: its closure would be handed a copy of each
                // track (its tables' every array retained and released) for every sample.
                var index: Int?
                for candidate in state.tracks.indices where state.tracks[candidate].sourceID == sample.trackID {
                    index = candidate
                    break
                }
                if index == nil {
                    try state.layout.acceptsNewTrack(sample.trackID, declared: options.tracks.contains { $0.id == sample.trackID })
                    index = makeTrack(for: sample.trackID, into: &state)
                }
                let placed = try state.tracks[index!].timeline.place(sample)
                try state.layout.write(placed, track: index!, tracks: &state.tracks)
            } catch {
                state.phase = .failed(error)
                state.layout.discard()
                throw error
            }
        }
    }

    /// Completes the movie: writes the index and puts the file in place, once. After an error
    /// nothing is left on disk.
    @discardableResult
    public func finish() throws(ContainerError) -> Summary {
        try state.withLock { (state) throws(ContainerError) -> Summary in
            switch state.phase {
            case .writing: break
            case .failed(let error): throw error
            case .finished: throw ContainerError(.invalidInput, "the movie is finished already", path: path)
            }
            guard state.tracks.contains(where: { $0.timeline.sampleCount > 0 }) else {
                state.layout.discard()
                let error = ContainerError(.invalidInput, "no samples to write; no movie written", path: path)
                state.phase = .failed(error)
                throw error
            }
            do throws(ContainerError) {
                let summary = try state.layout.finish(tracks: &state.tracks)
                state.phase = .finished
                return summary
            } catch {
                state.layout.discard()
                state.phase = .failed(error)
                throw error
            }
        }
    }

    /// Gives up: whatever was written is removed. Later calls throw.
    public func cancel() {
        state.withLock { state in
            guard case .writing = state.phase else { return }
            state.layout.discard()
            state.phase = .failed(ContainerError(.invalidInput, "the writer was cancelled", path: path))
        }
    }
}
