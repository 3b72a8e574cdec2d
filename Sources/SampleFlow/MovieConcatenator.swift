public import ISOBMFF
public import MPEGTS
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
/// cannot put in one track (another NAL unit length size, say) are an error naming the file. The samples are read from the mapped inputs: memory is the writer's index.
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
        var inputs: [(path: String, samples: MovieSampleBuffers)] = []
        for (number, path) in paths.enumerated() {
            let movie: MovieReader
            do { movie = try MovieReader(path: path) } catch { throw .container(error) }
            guard let track = movie.firstVideoTrackIndex else {
                throw .container(ContainerError(.unsupported, "no H.264 video track to join", path: path))
            }
            if number == 0, movieData == .firstInput { warnings = options.carryOver(from: movie, videoTrack: track) }
            do { inputs.append((path, try movie.sampleBuffers(track: track, editList: .trim))) } catch { throw .container(error) }
        }
        if Task.isCancelled { throw .cancelled }
        let writer: MovieWriter
        do { writer = try MovieWriter(path: output, options: options) } catch { throw .container(error) }
        var shifts: [MediaTime] = []
        // Where the inputs so far end: the last shown frame's end, and the last sample's decode end.
        var presentationEnd: MediaTime?
        var decodeEnd: MediaTime?
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
                for var sample in input.samples {
                    if Task.isCancelled { break }
                    if shift != .zero {
                        sample.timing = SampleTiming(presentationTime: sample.presentationTime + shift, decodeTime: sample.decodeTime + shift,
                                                     duration: sample.duration)
                    }
                    do { try writer.append(sample) } catch {
                        // The writer's error whole (its system error, box and byte), said of the input.
                        var failure = ContainerError(error.code, "joining \(input.path)", path: output, cause: error)
                        failure.systemError = error.systemError
                        throw failure
                    }
                    decodeEnd = sample.decodeTime + sample.duration
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
