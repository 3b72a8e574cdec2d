public import H264Bitstream
public import ISOBMFF
public import MPEGTS
public import MediaCore
import SystemIO
import SystemPackage

/// Any input H264Kit reads, as sample buffers in decoding order: an Annex-B stream, the H.264
/// stream of an MPEG-2 transport stream (a file or standard input as "-", either of them), or
/// the H.264 track of an MP4/MOV file, told apart by the first bytes, never by the name. What a movie carries besides the video (timecode, metadata,
/// the display transform) is at hand for whoever copies it on.
public final class MediaSource: SampleSource {
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
        /// framing and whether it starts at a sync sample come from ``annexB``.
        public var transportStream: TransportStreamReader.Options

        /// Options with the given Annex-B policies, track, edit-list handling and limits.
        public init(annexB: SampleBufferReader.Options = .init(), trackID: UInt32? = nil, editList: MovieReader.EditListHandling = .trim,
                    movieLimits: MovieReader.Limits = .init(), transportStream: TransportStreamReader.Options = .init()) {
            self.annexB = annexB
            self.trackID = trackID
            self.editList = editList
            self.movieLimits = movieLimits
            self.transportStream = transportStream
        }

        /// The transport stream options with the Annex-B framing and sync policy.
        var transportStreamOptions: TransportStreamReader.Options {
            var options = transportStream
            options.assembler = annexB.builder
            options.startsAtSyncSample = annexB.startsAtSyncSample
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
        /// A movie's H.264 track: the reader, the track's index, its samples.
        case movie(MovieReader, track: Int, samples: MovieSampleBuffers)
        /// The H.264 stream of a transport stream.
        case transportStream(TransportStreamReader)
    }

    /// What the input is, with its reader.
    public let kind: Kind
    /// The input's name in messages ("stdin" for standard input).
    public let name: String
    /// The first sample's format description, once read.
    public private(set) var formatDescription: VideoFormatDescription?
    private var position = 0

    /// Opens `path` ("-": standard input): a movie or a transport stream when it starts like
    /// one, else an Annex-B stream (``InputFormat/detect(path:)``).
    public init(path: String, options: Options = Options()) throws(SampleFlowError) {
        name = path == "-" ? "stdin" : path
        let (format, prefix) = try InputFormat.detect(path: path)
        switch format {
        case .transportStream where path == "-":
            kind = .transportStream(TransportStreamReader(fileDescriptor: .standardInput, name: name, prefix: prefix, options: options.transportStreamOptions))
        case .transportStream:
            do { kind = .transportStream(try TransportStreamReader(path: path, options: options.transportStreamOptions)) } catch { throw .container(error) }
        case .annexB where path == "-":
            kind = .annexB(SampleBufferReader(nalUnits: AnnexBReader(fileDescriptor: .standardInput, name: name, prefix: prefix, options: options.annexB.reader),
                                              options: options.annexB))
        case .annexB:
            kind = .annexB(try SampleBufferReader(path: path, options: options.annexB))
        case .movie:
            let reader: MovieReader
            do { reader = try MovieReader(path: path, limits: options.movieLimits) } catch { throw .container(error) }
            let index: Int
            if let id = options.trackID {
                guard let found = reader.trackIndex(id: id) else {
                    throw .container(ContainerError(.invalidInput, "no track \(id) (tracks: \(reader.tracks.map { "\($0.id) \($0.handlerType)" }.joined(separator: ", ")))", path: path))
                }
                guard reader.tracks[found].isH264 else { throw .container(ContainerError(.unsupported, "track \(id) is not H.264 video", path: path)) }
                index = found
            } else {
                guard let found = reader.firstVideoTrackIndex else { throw .container(ContainerError(.unsupported, "no H.264 video track", path: path)) }
                index = found
            }
            do { kind = .movie(reader, track: index, samples: try reader.sampleBuffers(track: index, editList: options.editList)) } catch { throw .container(error) }
        }
    }

    /// Reads a stream held in memory.
    public init(annexB bytes: [UInt8], name: String = "bytes", options: SampleBufferReader.Options = .init()) {
        self.name = name
        kind = .annexB(SampleBufferReader(bytes: bytes, name: name, options: options))
    }

    /// For a movie, moves the read position to the sync sample from which decoding shows the
    /// frame at `time` soonest: the last sync sample (in decoding order) shown at or before it
    /// (FFmpeg's `-ss` on an input). The frames before `time` still come out, for the caller
    /// to drop. An Annex-B stream cannot seek: it returns false and reads from its start.
    @discardableResult
    public func seek(toPresentationTime time: MediaTime) -> Bool {
        guard case .movie(_, _, let samples) = kind else { return false }
        var target = 0
        for index in samples.indices {
            let sample = samples[index]
            if sample.isSync, sample.presentationTime <= time { target = index }
            if sample.decodeTime > time { break }  // later samples are shown later still
        }
        position = target
        return true
    }

    /// How many samples behind the read position a movie's file pages stay resident.
    static let samplesKeptResident = 8

    /// The next sample in decoding order, or nil at the end.
    public func next() throws(SampleFlowError) -> SampleBuffer? {
        let sample: SampleBuffer?
        switch kind {
        case .annexB(let reader):
            sample = try reader.next()
        case .movie(_, _, let samples):
            guard position < samples.count else { return nil }
            sample = samples[position]
            position += 1
            // Resident memory stays flat over a long file: the pages of samples read long ago
            // (more than a frame-threaded decoder holds) are given back.
            if position % 8 == 0, position > Self.samplesKeptResident { samples.releaseMemory(before: position - Self.samplesKeptResident) }
        case .transportStream(let reader):
            do { sample = try reader.next() } catch { throw .container(error) }
            if sample == nil, reader.sampleCount == 0 {
                throw .noSamples(input: name, reason: "no decodable picture in the transport stream's H.264 stream" + (reader.warnings.isEmpty ? "" : " (\(reader.warnings.joined(separator: "; ")))"))
            }
        }
        if formatDescription == nil { formatDescription = sample?.formatDescription }
        return sample
    }

    /// The movie, for a movie input.
    public var movie: MovieReader? {
        if case .movie(let reader, _, _) = kind { return reader }
        return nil
    }

    /// The movie track being read, for a movie input.
    public var track: MovieReader.Track? {
        if case .movie(let reader, let index, _) = kind { return reader.tracks[index] }
        return nil
    }

    /// The rate the stream is timed at: a stream's VUI timing (or the given or assumed rate),
    /// or a movie track's first sample duration as a rate (the timebase FFmpeg's framemd5
    /// uses). Known from the first sample on.
    public var frameRate: FrameRate? {
        switch kind {
        case .annexB(let reader): return reader.frameRate
        case .transportStream(let reader): return reader.frameRate
        case .movie(let reader, let index, _):
            let track = reader.tracks[index]
            guard let first = track.samples.first else { return nil }
            return FrameRate(UInt64(track.timescale), UInt64(max(first.duration, 1)))
        }
    }

    /// Samples given so far.
    public var sampleCount: Int {
        switch kind {
        case .annexB(let reader): reader.sampleCount
        case .transportStream(let reader): reader.sampleCount
        case .movie: position
        }
    }

    /// How far reading has come, for progress: bytes read of the file's size for a stream (no size
    /// for standard input), samples read of the sample count for a movie.
    public var progress: (read: Int, total: Int?) {
        switch kind {
        case .annexB(let reader): return (reader.nalUnits.bytesRead, reader.nalUnits.totalBytes)
        case .transportStream(let reader): return (reader.bytesRead, reader.totalBytes)
        case .movie(_, _, let samples): return (position, samples.count)
        }
    }

    /// The H.264 stream parser of an Annex-B stream or a transport stream (a movie's samples
    /// are not parsed): its diagnostics, parameter sets, counts.
    public var parser: H264StreamParser? {
        switch kind {
        case .annexB(let reader): reader.parser
        case .transportStream(let reader): reader.parser
        case .movie: nil
        }
    }

    /// Problems that did not stop reading: the Annex-B reader's warnings and the parser's
    /// diagnostics, or the movie reader's warnings.
    public var warnings: [String] {
        switch kind {
        case .annexB(let reader): reader.warnings.map(\.description) + reader.parser.diagnostics.map(\.description)
        case .transportStream(let reader): reader.warnings + reader.parser.diagnostics.map(\.description)
        case .movie(let reader, _, _): reader.warnings
        }
    }
}
