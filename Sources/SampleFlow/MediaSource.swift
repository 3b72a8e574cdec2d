public import H264Bitstream
public import ISOBMFF
public import MPEGTS
public import MediaCore
import SystemIO
import SystemPackage

/// Any input H264Kit reads, as sample buffers in decoding order: an Annex-B stream, an ADTS
/// stream (`.aac`), an MPEG-2 transport stream (a file or standard input as "-", either of
/// them), or an MP4/MOV file, told apart by the first bytes, never by the name.
///
/// Which tracks are read is ``Options/tracks``: by default the first H.264 video track (what a
/// decoder, a video encoder or a video-only job reads), or every track (``TrackSelection/all``:
/// video, audio, and the tracks carried as they are), every track but some kinds, or chosen
/// IDs. Samples of several tracks come in the order of their decoding times, each with its
/// track's ID: a movie's track IDs, a transport stream's PIDs, 1 for a stream of one. What the
/// input holds besides (``unselectedTracks``) is at hand for whoever has to say what it left
/// out; what a movie carries besides its tracks (timecode, metadata, the display transform) for
/// whoever copies it on.
public final class MediaSource: SampleSource {
    /// Which tracks a source reads.
    public enum TrackSelection: Sendable, Hashable {
        /// The first H.264 video track (or ``Options/trackID``).
        case firstVideo
        /// Every track: video, audio, and tracks of other codecs, carried as they are.
        case all
        /// Every track but those of these kinds (`.audio`: `--no-audio`).
        case allExcept(Set<MediaType>)
        /// The tracks of these IDs, in this order of preference.
        case ids([TrackID])

        /// Whether a track of `kind` and `id` is read when the input has it.
        func includes(_ id: TrackID, _ kind: MediaType) -> Bool {
            switch self {
            case .firstVideo: kind == .video
            case .all: true
            case .allExcept(let kinds): !kinds.contains(kind)
            case .ids(let ids): ids.contains(id)
            }
        }
    }

    /// How to read the input.
    public struct Options: Sendable, Hashable {
        /// For an Annex-B stream: the frame rate and remux policies.
        public var annexB: SampleBufferReader.Options
        /// For a movie: the track ID to read (nil: the first H.264 video track).
        public var trackID: UInt32?
        /// For a movie: how the edit list applies (`MovieReader/EditListHandling/trim` marks
        /// the samples a player does not show).
        public var editList: MovieReader.EditListHandling
        /// For a movie: how many samples its index may declare.
        public var movieLimits: MovieReader.Limits
        /// For a transport stream: the program, the damage policy, the time origin. Its
        /// framing and whether it starts at a sync sample come from ``annexB``, which tracks it
        /// reads from ``tracks``.
        public var transportStream: TransportStreamReader.Options
        /// Which tracks to read: the first video track by default.
        public var tracks: TrackSelection = .firstVideo

        /// Options with the given Annex-B policies, track, edit-list handling and limits.
        public init(annexB: SampleBufferReader.Options = .init(), trackID: UInt32? = nil, editList: MovieReader.EditListHandling = .trim,
                    movieLimits: MovieReader.Limits = .init(), transportStream: TransportStreamReader.Options = .init()) {
            self.annexB = annexB
            self.trackID = trackID
            self.editList = editList
            self.movieLimits = movieLimits
            self.transportStream = transportStream
        }

        /// The transport stream options with the Annex-B framing and sync policy, and the tracks.
        var transportStreamOptions: TransportStreamReader.Options {
            var options = transportStream
            options.assembler = annexB.builder
            options.startsAtSyncSample = annexB.startsAtSyncSample
            switch tracks {
            case .firstVideo: options.tracks = .firstVideo
            case .all: options.tracks = .all
            case .allExcept(let kinds): options.tracks = .allExcept(kinds)
            case .ids(let ids): options.tracks = .pids(ids.map { UInt16(clamping: $0.rawValue) })
            }
            return options
        }

        /// What a decoder is fed (what `ffmpeg` feeds libavcodec): every sample, those before
        /// the first sync sample and slices before their parameter sets included (the decoder
        /// drops what it cannot decode and uses the rest as references), the edit list trimmed.
        public static var decoding: Options {
            Options(annexB: .init(startsAtSyncSample: false, rejectsSlicesBeforeParameterSets: false), editList: .trim,
                    transportStream: .init(keepsDamagedPESPackets: true))
        }
    }

    /// What the input is.
    public enum Kind {
        /// An Annex-B elementary stream.
        case annexB(SampleBufferReader)
        /// A movie: the reader, and the index and samples of its first track read (the video,
        /// by default; ``MediaSource/movieTracks`` has every track read).
        case movie(MovieReader, track: Int, samples: MovieSampleBuffers)
        /// A transport stream.
        case transportStream(TransportStreamReader)
        /// An ADTS stream.
        case adts(ADTSReader)
    }

    /// A movie track being read: its index in the reader, its samples, the next one's position.
    public struct MovieTrack: Sendable {
        /// The track's index in the movie.
        public let index: Int
        /// Its samples.
        public let samples: MovieSampleBuffers
        /// The position of the next sample to read.
        public internal(set) var position: Int
    }

    /// A movie's tracks being read, in the movie's order (empty for other inputs).
    public private(set) var movieTracks: [MovieTrack] = []

    /// What the input is, with its reader.
    public let kind: Kind
    /// ``kind``'s reader when it is a transport stream's.
    /// (A constant: a sample read through it needs no retain of the reader.)
    private let transportStreamReader: TransportStreamReader?
    /// The input's name in messages ("stdin" for standard input).
    public let name: String
    /// The first video sample's format description, once read.
    public private(set) var formatDescription: VideoFormatDescription?
    private var samplesRead = 0

    /// Opens `path` ("-": standard input): a movie or a transport stream when it starts like
    /// one, else an Annex-B stream (``InputFormat/detect(path:)``).
    public init(path: String, options: Options = Options()) throws(SampleFlowError) {
        name = path == "-" ? "stdin" : path
        let (format, prefix) = try InputFormat.detect(path: path)
        switch format {
        case .transportStream where path == "-":
            let reader = TransportStreamReader(fileDescriptor: .standardInput, name: name, prefix: prefix, options: options.transportStreamOptions)
            kind = .transportStream(reader)
        case .transportStream:
            let reader: TransportStreamReader
            do { reader = try TransportStreamReader(path: path, options: options.transportStreamOptions) } catch { throw .container(error) }
            kind = .transportStream(reader)
        case .annexB where path == "-":
            kind = .annexB(SampleBufferReader(nalUnits: AnnexBReader(fileDescriptor: .standardInput, name: name, prefix: prefix, options: options.annexB.reader),
                                              options: options.annexB))
        case .annexB:
            kind = .annexB(try SampleBufferReader(path: path, options: options.annexB))
        case .adts where path == "-":
            kind = .adts(ADTSReader(fileDescriptor: .standardInput, name: name, prefix: prefix))
        case .adts:
            kind = .adts(try ADTSReader(path: path))
        case .movie:
            let reader: MovieReader
            do { reader = try MovieReader(path: path, limits: options.movieLimits) } catch { throw .container(error) }
            let indices = try Self.selectedTracks(of: reader, options: options, path: path)
            do {
                movieTracks = try indices.map { (index) throws(ContainerError) in
                    MovieTrack(index: index, samples: try reader.sampleBuffers(track: index, editList: options.editList), position: 0)
                }
            } catch {
                throw .container(error)
            }
            kind = .movie(reader, track: movieTracks[0].index, samples: movieTracks[0].samples)
        }
        if case .transportStream(let reader) = kind { transportStreamReader = reader } else { transportStreamReader = nil }
        // An input of one stream has no other tracks to choose among.
        if case .annexB = kind, !options.tracks.includes(.first, .video) {
            throw .invalidOption("\(name) is an H.264 stream: its one track is video (1)")
        }
        if case .adts = kind, !options.tracks.includes(.first, .audio) {
            throw .invalidOption("\(name) is an ADTS stream: its one track is audio (1)")
        }
    }

    /// The indices of the movie's tracks the options select, in the movie's order (the
    /// preferred first for ``TrackSelection/ids(_:)``): at least one, or an error naming the
    /// tracks there are.
    static func selectedTracks(of reader: MovieReader, options: Options, path: String) throws(SampleFlowError) -> [Int] {
        let listing = reader.tracks.map { "\($0.id) \($0.mediaType)" }.joined(separator: ", ")
        let readable = reader.tracks.indices.filter { !reader.tracks[$0].samples.isEmpty && reader.tracks[$0].mediaType != .timecode }
        switch options.tracks {
        case .firstVideo:
            if let id = options.trackID {
                guard let found = reader.trackIndex(id: id) else {
                    throw .container(ContainerError(.invalidInput, "no track \(id) (tracks: \(listing))", path: path))
                }
                return [found]
            }
            guard let found = reader.firstVideoTrackIndex else { throw .container(ContainerError(.unsupported, "no H.264 video track (tracks: \(listing))", path: path)) }
            return [found]
        case .all, .allExcept:
            var chosen = readable.filter { options.tracks.includes(TrackID(rawValue: reader.tracks[$0].id), reader.tracks[$0].mediaType) }
            guard !chosen.isEmpty else { throw .container(ContainerError(.invalidInput, "no track left to read (tracks: \(listing))", path: path)) }
            // The first H.264 track leads (``track``, the frame rate), wherever it is in the file.
            if let video = reader.firstVideoTrackIndex, let place = chosen.firstIndex(of: video), place > 0 {
                chosen.remove(at: place)
                chosen.insert(video, at: 0)
            }
            return chosen
        case .ids(let ids):
            var chosen: [Int] = []
            for id in ids {
                guard let found = reader.trackIndex(id: id.rawValue) else {
                    throw .container(ContainerError(.invalidInput, "no track \(id) (tracks: \(listing))", path: path))
                }
                if !chosen.contains(found) { chosen.append(found) }
            }
            guard !chosen.isEmpty else { throw .invalidOption("no track chosen") }
            return chosen
        }
    }

    /// Reads a stream held in memory.
    public init(annexB bytes: [UInt8], name: String = "bytes", options: SampleBufferReader.Options = .init()) {
        self.name = name
        kind = .annexB(SampleBufferReader(bytes: bytes, name: name, options: options))
        transportStreamReader = nil
    }

    /// For a movie, moves the read position to the sync sample from which decoding shows the
    /// frame at `time` soonest: the last sync sample (in decoding order) of the first track
    /// shown at or before it (FFmpeg's `-ss` on an input); every other track starts at its
    /// sample playing at that sync sample's time. The frames before `time` still come out, for
    /// the caller to drop. A stream cannot seek: it returns false and reads from its start.
    @discardableResult
    public func seek(toPresentationTime time: MediaTime) -> Bool {
        guard !movieTracks.isEmpty else { return false }
        let samples = movieTracks[0].samples
        var target = 0
        for index in samples.indices {
            let sample = samples[index]
            if sample.isSync, sample.presentationTime <= time { target = index }
            if sample.decodeTime > time { break }  // later samples are shown later still
        }
        movieTracks[0].position = target
        let from = target < samples.count ? samples[target].presentationTime : time
        for track in movieTracks.indices.dropFirst() {
            let others = movieTracks[track].samples
            movieTracks[track].position = others.firstIndex { $0.presentationTime + $0.duration > from } ?? others.count
        }
        return true
    }

    /// How many samples behind the read position a movie's file pages stay resident.
    static let samplesKeptResident = 8

    /// The next sample in decoding order, or nil at the end.
    public func next() throws(SampleFlowError) -> SampleBuffer? {
        if let reader = transportStreamReader {
            // (The hot path of a transport stream: its reader without a copy of `kind`.)
            // (No binding of the sample after the first: each would be a copy, retains and
            // releases for every sample.)
            let sample = try next(from: reader)
            guard sample != nil else { return nil }
            samplesRead += 1
            if formatDescription == nil, case .video(let video)? = sample?.formatDescription { formatDescription = video }
            return sample
        }
        let sample: SampleBuffer?
        switch kind {
        case .annexB(let reader):
            sample = try reader.next()
        case .movie:
            sample = nextMovieSample()
        case .adts(let reader):
            sample = try reader.next()
        case .transportStream(let reader):  // (read above; kept for a reader set only in `kind`)
            sample = try next(from: reader)
        }
        if formatDescription == nil, let video = sample?.videoFormatDescription { formatDescription = video }
        if sample != nil { samplesRead += 1 }
        return sample
    }

    /// A transport stream's next sample; its end before any sample is an error naming why.
    private func next(from reader: TransportStreamReader) throws(SampleFlowError) -> SampleBuffer? {
        let sample: SampleBuffer?
        do { sample = try reader.next() } catch { throw .container(error) }
        if sample == nil, reader.sampleCount == 0 {
            throw .noSamples(input: name, reason: "no decodable picture in the transport stream's H.264 stream" + (reader.warnings.isEmpty ? "" : " (\(reader.warnings.joined(separator: "; ")))"))
        }
        return sample
    }

    /// The movie track whose next sample is decoded first gives it.
    private func nextMovieSample() -> SampleBuffer? {
        var best: (track: Int, time: MediaTime)?
        for (number, track) in movieTracks.enumerated() where track.position < track.samples.count {
            let time = track.samples[track.position].decodeTime
            if best.map({ time < $0.time }) ?? true { best = (number, time) }
        }
        guard let chosen = best?.track else { return nil }
        let sample = movieTracks[chosen].samples[movieTracks[chosen].position]
        movieTracks[chosen].position += 1
        // Resident memory stays flat over a long file: the pages of samples read long ago (more
        // than a frame-threaded decoder holds) are given back, behind every track's position.
        let read = movieTracks[chosen].position
        if read % 8 == 0, read > Self.samplesKeptResident {
            var behind = Int.max
            for track in movieTracks {
                let position = track.position - Self.samplesKeptResident
                if position <= 0 { behind = 0 } else if position < track.samples.count { behind = min(behind, track.samples.byteOffset(of: position)) }
            }
            if behind != Int.max, behind > 0 { movieTracks[chosen].samples.releaseMemory(beforeByte: behind) }
        }
        return sample
    }

    /// The movie, for a movie input.
    public var movie: MovieReader? {
        if case .movie(let reader, _, _) = kind { return reader }
        return nil
    }

    /// The first movie track being read (the video, by default), for a movie input.
    public var track: MovieReader.Track? {
        if case .movie(let reader, let index, _) = kind { return reader.tracks[index] }
        return nil
    }

    /// The tracks read: a movie's as its index says them, a transport stream's once its tables
    /// came, a stream's once its first sample is read.
    public var tracks: [TrackDescription] {
        switch kind {
        case .annexB: formatDescription.map { [TrackDescription(id: .first, format: .video($0))] } ?? []
        case .adts(let reader): reader.tracks
        case .transportStream(let reader): reader.tracks
        case .movie(let reader, _, _): movieTracks.compactMap { reader.tracks[$0.index].trackDescription }
        }
    }

    /// The input's tracks not read (not selected), with what each holds: for saying what a job
    /// left out. A transport stream's are known once its tables came.
    public var unselectedTracks: [TrackDescription] {
        switch kind {
        case .annexB, .adts: []
        case .transportStream(let reader): reader.unselectedTracks
        case .movie(let reader, _, _):
            reader.tracks.indices.filter { index in !movieTracks.contains { $0.index == index } && !reader.tracks[index].samples.isEmpty
                && reader.tracks[index].mediaType != .timecode }.compactMap { reader.tracks[$0].trackDescription }
        }
    }

    /// The rate the stream is timed at: a stream's VUI timing (or the given or assumed rate),
    /// or a movie track's first sample duration as a rate (the timebase FFmpeg's framemd5
    /// uses). Known from the first sample on.
    public var frameRate: FrameRate? {
        switch kind {
        case .annexB(let reader): return reader.frameRate
        case .adts: return nil
        case .transportStream(let reader): return reader.frameRate
        case .movie(let reader, let index, _):
            let track = reader.tracks[index]
            guard let first = track.samples.first else { return nil }
            return FrameRate(UInt64(track.timescale), UInt64(max(first.duration, 1)))
        }
    }

    /// Samples given so far.
    public var sampleCount: Int { samplesRead }

    /// How far reading has come, for progress: bytes read of the file's size for a stream (no size
    /// for standard input), samples read of the sample count for a movie.
    public var progress: (read: Int, total: Int?) {
        if let reader = transportStreamReader { return (reader.bytesRead, reader.totalBytes) }  // (asked after every sample)
        switch kind {
        case .annexB(let reader): return (reader.nalUnits.bytesRead, reader.nalUnits.totalBytes)
        case .adts(let reader): return reader.progress
        case .transportStream(let reader): return (reader.bytesRead, reader.totalBytes)
        case .movie: return (movieTracks.reduce(0) { $0 + $1.position }, movieTracks.reduce(0) { $0 + $1.samples.count })
        }
    }

    /// How many diagnostics the H.264 parser has kept (nil without one), cheap enough to check
    /// after every sample: ``parser`` is a copy of the parser's whole state.
    public var diagnosticCount: Int? {
        if let reader = transportStreamReader { return reader.diagnosticCount }
        switch kind {
        case .annexB(let reader): return reader.diagnosticCount
        case .transportStream(let reader): return reader.diagnosticCount
        case .movie, .adts: return nil
        }
    }

    /// The H.264 stream parser of an Annex-B stream or a transport stream (a movie's samples
    /// are not parsed): its diagnostics, parameter sets, counts.
    public var parser: H264StreamParser? {
        switch kind {
        case .annexB(let reader): reader.parser
        case .transportStream(let reader): reader.parser
        case .movie, .adts: nil
        }
    }

    /// Problems that did not stop reading: the Annex-B reader's warnings and the parser's
    /// diagnostics, or the movie reader's warnings.
    public var warnings: [String] {
        switch kind {
        case .annexB(let reader): reader.warnings.map(\.description) + reader.parser.diagnostics.map(\.description)
        case .transportStream(let reader): reader.warnings + reader.parser.diagnostics.map(\.description)
        case .movie(let reader, _, _): reader.warnings
        case .adts(let reader): reader.warnings
        }
    }
}

extension MediaSource {
    /// Sentences naming each of the input's tracks this source does not read, for a job that
    /// carries only what it reads: "track 257 (audio, AAC, eng): left out: `reason`". A
    /// transport stream's are known once its tables came (after reading).
    public func leftOutTracks(reason: String) -> [String] {
        unselectedTracks.map { track in
            "track \(track.id) (\(track.mediaType), \(track.format.codecName)\(track.language.map { ", \($0)" } ?? "")): left out: \(reason)"
        }
    }

    /// The tracks of the input at `path` besides its first H.264 track, for a job that carries
    /// the video alone to say what it leaves out before it starts: a movie's from its index, a
    /// transport stream's from its tables and first frames (at most ``tracksProbeSamples``
    /// samples read); none for an elementary stream or standard input.
    public static func otherTracks(path: String, options: Options = .decoding) throws(SampleFlowError) -> [TrackDescription] {
        guard path != "-" else { return [] }
        var options = options
        options.tracks = .all
        options.trackID = nil
        let source = try MediaSource(path: path, options: options)
        if case .transportStream = source.kind {
            var read = 0
            while read < tracksProbeSamples, try source.next() != nil { read += 1 }
            return (source.tracks + source.unselectedTracks).filter { $0.format.video == nil }
        }
        return source.tracks.filter { $0.format.video == nil }
    }

    /// The most samples ``otherTracks(path:options:)`` reads of a transport stream.
    public static let tracksProbeSamples = 500
}
