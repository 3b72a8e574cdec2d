public import ISOBMFF
import MPEGTS
public import MediaCore
import SystemIO

/// Joins movies one after another into one movie without re-encoding: `h264kit concat`.
///
/// Each input's H.264 samples are copied in decoding order with their times. An input that
/// starts where the previous one ended (segments of ``MovieSplitter``, chunks transcoded from
/// them) keeps its times; one that starts earlier (files that each start at 0) is shifted so
/// that its first shown frame follows the previous input's last, as FFmpeg's concat demuxer
/// does, and further when its first sample would otherwise be decoded before the previous
/// input's last one ended (an input with a longer B-frame reorder delay than the one before it);
/// a later start keeps its gap. Samples an input's edit list hides stay hidden at the ends of
/// the joined movie (its one edit leaves them out); inside it they are shown. Inputs whose
/// parameter sets differ get a new sample description at their first sample; inputs the writer
/// cannot put in one track (another NAL unit length size, say) are an error naming the file.
///
/// Sound goes with the picture: each input's audio tracks are joined into the output's, the
/// first audio track of every input into the first, and so on (at most
/// ``maximumAudioTracks``). An input's audio is shifted as its video is; when that would start
/// it before the previous input's audio ended (files that each start at 0 with a priming edit),
/// it follows that audio instead, so that no frame is lost or overlaps (the sound may then lag
/// the picture by less than a frame at each such join). The first input's priming stays trimmed
/// by the joined movie's edit; the joined segments of ``MovieSplitter`` give back the source's
/// audio frames and sound. The samples are read from the mapped inputs: memory is the writer's
/// index.
public struct MovieConcatenator: Sendable {
    /// How the joined movie is written; `MovieWriter/Options/keepsStartTime` keeps the first
    /// input's start.
    public var options: MovieWriter.Options
    /// Where the joined movie's timecode track, metadata and display transform come from.
    public var movieData: MovieDataSource

    /// Where a join takes its timecode track, metadata and display transform from.
    public enum MovieDataSource: Sendable, Hashable {
        /// The first input's.
        case firstInput
        /// Another movie's (the source the joined pieces were cut from, say); an Annex-B stream
        /// there carries nothing over, with a warning.
        case movie(path: String)
        /// None: only what ``MovieConcatenator/options`` holds.
        case none
    }

    /// The most audio tracks joined; an input's later ones are left out, said in the warnings.
    public static let maximumAudioTracks = 8

    /// A concatenator writing with `options`, taking the movie data from `movieData`.
    public init(options: MovieWriter.Options = MovieWriter.Options(keepsStartTime: true), movieData: MovieDataSource = .firstInput) {
        self.options = options
        self.movieData = movieData
    }

    /// What a join wrote.
    public struct Summary: Sendable, Hashable {
        /// The writer's summary.
        public var movie: MovieWriter.Summary
        /// How far each input was shifted to follow the previous one (zero when it already did).
        public var shifts: [MediaTime]
        /// What could not be carried over from the first input.
        public var warnings: [String]
    }

    /// The first shown frame's presentation time and the last one's end (every sample's when
    /// none is to be shown).
    private static func shownSpan(_ samples: MovieSampleBuffers) -> (start: MediaTime, end: MediaTime) {
        var start: MediaTime?
        var end: MediaTime?
        for shownOnly in [true, false] {
            for sample in samples where !(shownOnly && sample.attachments.doNotDisplay) {
                if start.map({ sample.presentationTime < $0 }) ?? true { start = sample.presentationTime }
                let sampleEnd = sample.presentationTime + sample.duration
                if end.map({ sampleEnd > $0 }) ?? true { end = sampleEnd }
            }
            if let start, let end { return (start, end) }
        }
        return (.zero, .zero)
    }

    /// Joins the movies at `paths`, in that order, into `output`. Nothing is left at `output`
    /// when it fails, or when the calling task is cancelled (``SampleFlowError/cancelled``,
    /// whenever the cancellation comes). `progress` is called with the number of inputs joined
    /// so far after each one.
    public func concatenate(_ paths: [String], into output: String, progress: (_ joined: Int) -> Void = { _ in }) throws(SampleFlowError) -> Summary {
        guard !paths.isEmpty else { throw .invalidOption("no movies to join") }
        if Task.isCancelled { throw .cancelled }
        var options = self.options
        var warnings: [String] = []
        if case .movie(let path) = movieData, (try? filePrefix(path, count: 8)) != nil, !MovieReader.looksLikeMovie(path: path) {
            warnings = ["\(path) is not a movie: an Annex-B stream has no timecode track, metadata or rotation to carry over"]
        } else if case .movie(let path) = movieData {
            do {
                let movie = try MovieReader(path: path)
                if let track = movie.firstVideoTrackIndex { warnings = options.carryOver(from: movie, videoTrack: track) }
            } catch {
                throw .container(error)
            }
        }
        var inputs: [(path: String, samples: MovieSampleBuffers, audio: [MovieSampleBuffers], languages: [String?])] = []
        for (number, path) in paths.enumerated() {
            let movie: MovieReader
            do { movie = try MovieReader(path: path) } catch { throw .container(error) }
            guard let track = movie.firstVideoTrackIndex else {
                throw .container(ContainerError(.unsupported, "no H.264 video track to join", path: path))
            }
            if number == 0, movieData == .firstInput { warnings = options.carryOver(from: movie, videoTrack: track) }
            let audioTracks = movie.tracks.indices.filter { movie.tracks[$0].mediaType == .audio && !movie.tracks[$0].samples.isEmpty }
            if audioTracks.count > Self.maximumAudioTracks {
                warnings.append("\(path): \(audioTracks.count - Self.maximumAudioTracks) audio track(s) past the first \(Self.maximumAudioTracks) left out")
            }
            do {
                let audio = try audioTracks.prefix(Self.maximumAudioTracks).map { (index) throws(ContainerError) in try movie.sampleBuffers(track: index, editList: .trim) }
                let languages = audioTracks.prefix(Self.maximumAudioTracks).map { movie.tracks[$0].language }
                inputs.append((path, try movie.sampleBuffers(track: track, editList: .trim), audio, languages))
            } catch {
                throw .container(error)
            }
        }
        if Task.isCancelled { throw .cancelled }
        // The joined tracks, as the first input has them: its video, then its audio in order.
        if let first = inputs.first, let video = first.samples.first {
            options.tracks = [TrackDescription(id: TrackID(rawValue: 1), format: video.formatDescription)]
            for (number, audio) in first.audio.enumerated() {
                guard let sample = audio.first else { continue }
                options.tracks.append(TrackDescription(id: TrackID(rawValue: UInt32(2 + number)), format: sample.formatDescription, language: first.languages[number]))
            }
        }
        let writer: MovieWriter
        do { writer = try MovieWriter(path: output, options: options) } catch { throw .container(error) }
        var shifts: [MediaTime] = []
        // Where the inputs so far end: the last shown frame's end, and the last sample's decode end.
        var presentationEnd: MediaTime?
        var decodeEnd: MediaTime?
        // Where each audio track so far ends (its last frame's decode end).
        var audioEnds: [Int: MediaTime] = [:]
        do throws(ContainerError) {
            for input in inputs {
                guard let first = input.samples.first else { shifts.append(.zero); continue }
                let shown = Self.shownSpan(input.samples)
                var shift = MediaTime.zero
                if let presentationEnd, let decodeEnd {
                    // Starts before the previous input ended: follow it, frame after frame, and
                    // decode after its last sample (inputs with a longer reorder delay than the
                    // previous one leave that much of a gap).
                    let byPresentation = presentationEnd - shown.start
                    let byDecoding = decodeEnd - first.decodeTime
                    if byPresentation > .zero || byDecoding > .zero { shift = byPresentation > byDecoding ? byPresentation : byDecoding }
                }
                shifts.append(shift)
                // Each audio track follows the video's shift, or its own previous end if later.
                let audioShifts = input.audio.enumerated().map { (number, samples) -> MediaTime in
                    guard let first = samples.first, let end = audioEnds[number], end > first.decodeTime + shift else { return shift }
                    return end - first.decodeTime
                }
                // The input's tracks merged by decode time: the video's, then each audio track's.
                var positions = [input.samples.startIndex] + input.audio.map(\.startIndex)
                while !Task.isCancelled {
                    var chosen: Int?
                    var chosenTime = MediaTime.zero
                    for track in positions.indices {
                        let samples = track == 0 ? input.samples : input.audio[track - 1]
                        guard positions[track] < samples.endIndex else { continue }
                        let time = samples[positions[track]].decodeTime + (track == 0 ? shift : audioShifts[track - 1])
                        if chosen == nil || time < chosenTime {
                            chosen = track
                            chosenTime = time
                        }
                    }
                    guard let track = chosen else { break }
                    var sample = track == 0 ? input.samples[positions[track]] : input.audio[track - 1][positions[track]]
                    positions[track] += 1
                    let trackShift = track == 0 ? shift : audioShifts[track - 1]
                    if trackShift != .zero {
                        sample.timing = SampleTiming(presentationTime: sample.presentationTime + trackShift, decodeTime: sample.decodeTime + trackShift,
                                                     duration: sample.duration)
                    }
                    sample.trackID = TrackID(rawValue: UInt32(1 + track))
                    do { try writer.append(sample) } catch {
                        // The writer's error whole (its system error, box and byte), said of the input.
                        var failure = ContainerError(error.code, "joining \(input.path)", path: output, cause: error)
                        failure.systemError = error.systemError
                        throw failure
                    }
                    if track == 0 { decodeEnd = sample.decodeTime + sample.duration } else { audioEnds[track - 1] = sample.decodeTime + sample.duration }
                }
                presentationEnd = shown.end + shift
                if Task.isCancelled { break }
                progress(shifts.count)
            }
        } catch {
            writer.cancel()
            if Task.isCancelled { throw .cancelled }
            throw .container(error)
        }
        // A join cut short is not the join asked for: nothing is left.
        if Task.isCancelled {
            writer.cancel()
            throw .cancelled
        }
        let summary: MovieWriter.Summary
        do { summary = try writer.finish() } catch { throw .container(error) }
        return Summary(movie: summary, shifts: shifts, warnings: warnings)
    }
}
