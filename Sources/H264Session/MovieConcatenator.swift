public import H264Container
public import MediaCore

/// Joins movies one after another into one movie without re-encoding: `h264kit concat`.
///
/// Each input's H.264 samples are copied in decoding order with their times. An input that
/// starts where the previous one ended (segments of ``MovieSplitter``, chunks transcoded from
/// them) keeps its times; one that starts earlier (files that each start at 0) is shifted to
/// start where the previous one ended, as FFmpeg's concat demuxer does; a later start keeps its
/// gap. Inputs whose parameter sets differ get a new sample description at their first sample;
/// inputs the writer cannot put in one track (another NAL unit length size, say) are an error
/// naming the file. The samples are read from the mapped inputs: memory is the writer's index.
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
        /// Another movie's (the source the joined pieces were cut from, say).
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

    /// Joins the movies at `paths`, in that order, into `output`. Nothing is left at `output`
    /// when it fails.
    public func concatenate(_ paths: [String], into output: String) throws(SessionError) -> Summary {
        guard !paths.isEmpty else { throw .invalidOption("no movies to join") }
        var options = self.options
        var warnings: [String] = []
        if case .movie(let path) = movieData {
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
        let writer: MovieWriter
        do { writer = try MovieWriter(path: output, options: options) } catch { throw .container(error) }
        var shifts: [MediaTime] = []
        var end: MediaTime?
        do throws(ContainerError) {
            for input in inputs {
                guard let first = input.samples.first else { shifts.append(.zero); continue }
                var shift = MediaTime.zero
                if let end, first.decodeTime < end { shift = end - first.decodeTime }
                shifts.append(shift)
                for var sample in input.samples {
                    if shift != .zero {
                        sample.timing = SampleTiming(presentationTime: sample.presentationTime + shift, decodeTime: sample.decodeTime + shift,
                                                     duration: sample.duration)
                    }
                    do { try writer.append(sample) } catch {
                        throw ContainerError(error.code, "joining \(input.path): \(error.reason)", path: output)
                    }
                    end = sample.decodeTime + sample.duration
                }
            }
            let summary = try writer.finish()
            return Summary(movie: summary, shifts: shifts, warnings: warnings)
        } catch {
            writer.cancel()
            throw .container(error)
        }
    }
}
