import H264Bitstream
public import ISOBMFF
import MPEGTS
public import H264Network
public import MediaCore
public import SampleFlow
import SystemIO

/// Packages an input for HTTP streaming without re-encoding: `h264kit package` as one call.
/// HLS (RFC 8216) and, for fragmented MP4, DASH.
///
/// The input is anything `MediaSource` reads (Annex-B, MPEG-TS, MP4/MOV). A `MediaSegmenter`
/// cuts it into segments at sync samples (CMAF fragmented MP4 after an initialization segment,
/// or MPEG-TS); beside the multivariant playlist at `OUT.m3u8` go, for each rendition `NAME`,
/// `OUT-NAME.m3u8` (the media playlist: VOD, `EXT-X-INDEPENDENT-SEGMENTS` when every segment
/// decodes on its own, `EXT-X-MAP` for fMP4), `OUT-NAME-iframes.m3u8` (an entry per sync sample,
/// a byte range of its segment), `OUT-NAME-init.mp4` and `OUT-NAME-00000.m4s`... (or `.ts`);
/// with ``Options/dashManifest``, an MPD of the same segments. The multivariant playlist's
/// BANDWIDTH is the peak of the segments' bit rates and AVERAGE-BANDWIDTH the whole's, both
/// measured; CODECS, RESOLUTION and FRAME-RATE come from the stream.
///
/// Every file is written under a temporary name and renamed when whole; a failure or a
/// cancellation removes what the run wrote. Memory: one segment's samples.
public struct HLSPackager: Sendable {
    /// How to package.
    public struct Options: Sendable {
        /// How segments are cut: their container and target duration (6 s), and whether only
        /// at clean sync samples.
        public var segmenter: MediaSegmenter.Options
        /// Where to write a DASH MPD of the same segments (fragmented MP4 only), if anywhere.
        public var dashManifest: String?
        /// How the input is read.
        public var source: MediaSource.Options
        /// Whether the input's first AAC track goes into transport stream segments, muxed
        /// beside the video (the variant's CODECS then name both), as Apple's authoring
        /// specification allows; true by default. Fragmented MP4 packages carry the video alone
        /// so far (the sound is named as left out). Applies when ``source`` reads the first
        /// video track alone (its default).
        public var carriesAudio = true

        /// Options: 6 s fMP4 segments, no DASH.
        public init(segmenter: MediaSegmenter.Options = .init(), dashManifest: String? = nil, source: MediaSource.Options = .init(editList: .shift)) {
            self.segmenter = segmenter
            self.dashManifest = dashManifest
            self.source = source
        }
    }

    /// One rendition as packaged.
    public struct Rendition: Sendable {
        /// Its name in the file names.
        public var name: String
        /// Its media playlist's path.
        public var playlist: String
        /// Its I-frame playlist's path.
        public var iFramePlaylist: String
        /// Its segments' reports, in order.
        public var segments: [MediaSegmenter.SegmentReport]
        /// The multivariant playlist's entry for it (bandwidths measured, codecs, size, rate).
        public var variant: HLSMultivariantPlaylist.Variant
        /// The multivariant playlist's entry for its I-frame playlist.
        public var iFrameVariant: HLSMultivariantPlaylist.Variant
        /// Its DASH representation (fragmented MP4).
        public var representation: DASHManifest.Representation?
        /// The sound muxed into its transport stream segments, if any.
        public var audio: TrackDescription?
        /// The input's tracks read but not packaged, each with why ("track 3 (audio, AC-3):
        /// left out: ...").
        public var tracksLeftOut: [String] = []
        /// The stream's presentation length, seconds.
        public var duration: Double
        /// Whether every segment decodes on its own.
        public var independentSegments: Bool
    }

    /// What a package holds.
    public struct Summary: Sendable {
        /// The multivariant playlist's path.
        public var playlist: String
        /// The renditions.
        public var renditions: [Rendition]
        /// The DASH manifest's path, when written.
        public var dashManifest: String?
        /// What the reader warned of.
        public var warnings: [String]
    }

    /// How to package.
    public var options: Options

    /// A packager with `options`.
    public init(options: Options = Options()) { self.options = options }

    /// Packages the input at `path` ("-": standard input) as the rendition `name`, with the
    /// multivariant playlist at `output` (`.m3u8`). Cancelling the calling task stops it,
    /// removes what it wrote and throws `StreamingError.source(.cancelled)`, whenever it comes.
    public func run(path: String, to output: String, name: String = "video",
                    progress: (_ read: Int, _ total: Int?) -> Void = { _, _ in }) throws(StreamingError) -> Summary {
        try Self.checkOutput(output, dash: options.dashManifest, format: options.segmenter.format)
        let files = WrittenFiles()
        do throws(StreamingError) {
            try files.makeDirectory(for: output)
            var sourceOptions = options.source
            // Every track read when the sound goes in: the packaging chooses what it carries
            // (else the video alone is read, and the reader names the rest).
            let readsAll = options.carriesAudio && options.segmenter.format == .transportStream && sourceOptions.tracks == .firstVideo && sourceOptions.trackID == nil
            if readsAll { sourceOptions.tracks = .all }
            let source: MediaSource
            do { source = try MediaSource(path: path, options: sourceOptions) } catch { throw .source(error) }
            // A transport stream's tracks are known from its first frames: probed first, so that
            // the first segment's tables list the sound too (a stream added to the PMT later
            // stalls GStreamer's demuxer).
            let probed = readsAll ? ((try? MediaSource.otherTracks(path: path, options: sourceOptions)) ?? []) : []
            let rendition = try Self.package(source, as: name, beside: output, options: options.segmenter, files: files,
                                             tracks: readsAll ? .chosen(audio: true, known: probed) : .all) {
                progress(source.progress.read, source.progress.total)
            }
            if Task.isCancelled { throw .source(.cancelled) }
            return try Self.finish([rendition], playlist: output, dash: options.dashManifest,
                                   warnings: source.warnings + source.leftOutTracks(reason: Self.videoOnly) + rendition.tracksLeftOut, files: files)
        } catch {
            files.removeAll()
            if Task.isCancelled { throw .source(.cancelled) }
            throw error
        }
    }

    // MARK: The steps, shared with the ladder

    /// Refuses a DASH manifest of transport stream segments, and an output not named `.m3u8`.
    static func checkOutput(_ output: String, dash: String?, format: MediaSegmenter.Format) throws(StreamingError) {
        guard output.lowercased().hasSuffix(".m3u8") else { throw .invalidOption("\(output): the multivariant playlist is an .m3u8 file") }
        if dash != nil && format != .fragmentedMP4 { throw .invalidOption("a DASH manifest needs fragmented MP4 segments (--segment-format fmp4)") }
    }

    /// The path of a file of rendition `name` beside the multivariant playlist `output`.
    static func sibling(_ output: String, _ name: String, _ suffix: String) -> String {
        String(output.dropLast(".m3u8".count)) + "-" + name + suffix
    }

    /// The file name part of a path (a URI relative to the playlist beside it).
    static func fileName(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
    }

    /// Which of a source's tracks a rendition takes.
    enum TrackChoice {
        /// Every sample (a source of the video alone).
        case all
        /// The first H.264 track, and with `audio` the first AAC track muxed beside it; the
        /// others left out, each named with why. `known`: tracks known before the first sample
        /// (a transport stream's, probed), declared with the source's own at the start.
        case chosen(audio: Bool, known: [TrackDescription])
    }

    /// Reads `source` to its end into the segments, playlists and files of rendition `name`.
    static func package(_ source: some SampleSource, as name: String, beside output: String, options: MediaSegmenter.Options,
                        files: WrittenFiles, tracks choice: TrackChoice = .all, tick: () -> Void = {}) throws(StreamingError) -> Rendition {
        var segmenter: MediaSegmenter
        do { segmenter = try MediaSegmenter(options: options) } catch { throw .output(error) }
        // Each track taken or left out at its first sample (a transport stream's tracks become
        // known as their samples come): the first H.264 track, and the first AAC one with it.
        var decided: [TrackID: Bool] = [:]
        var video: TrackID?
        var audio: TrackDescription?
        var leftOut: [String] = []
        var started = false
        func takes(_ sample: SampleBuffer) throws(StreamingError) -> Bool {
            guard case .chosen(let withAudio, let probed) = choice else { return true }
            if !started {
                // Every track known now decided before the first sample goes in, the picture
                // first (PID 0x100, then the sound's, as FFmpeg lists them): the first tables
                // list them all.
                started = true
                var known = source.tracks
                for track in probed where !known.contains(where: { $0.id == track.id }) { known.append(track) }
                for track in known.filter({ $0.format.video != nil }) + known.filter({ $0.format.video == nil }) {
                    _ = try decide(track, withAudio: withAudio)
                }
            }
            if let known = decided[sample.trackID] { return known }
            return try decide(source.tracks.first { $0.id == sample.trackID } ?? TrackDescription(id: sample.trackID, format: sample.formatDescription), withAudio: withAudio)
        }
        func decide(_ track: TrackDescription, withAudio: Bool) throws(StreamingError) -> Bool {
            if let known = decided[track.id] { return known }
            var reason: String?
            switch track.format {
            case .video where video == nil:
                do { try segmenter.declare(track) } catch { throw .output(error) }
                video = track.id
            case .video:
                reason = "a rendition carries one video track"
            case .audio(let format) where withAudio && format.isAAC && audio == nil:
                do {
                    try segmenter.declare(track)
                    audio = track
                } catch {
                    reason = "a transport stream carries AAC as ADTS: Main, LC, SSR or LTP, 7 channels or fewer"
                }
            case .audio(let format) where withAudio && format.isAAC:
                reason = "a transport stream segment carries one audio track (the first AAC one)"
            case .audio where withAudio:
                reason = "a transport stream segment of this package carries AAC"
            default:
                reason = videoOnly
            }
            if let reason {
                leftOut.append("track \(track.id) (\(track.mediaType), \(track.format.codecName)\(track.language.map { ", \($0)" } ?? "")): left out: \(reason)")
            }
            decided[track.id] = reason == nil
            return reason == nil
        }
        var reports: [MediaSegmenter.SegmentReport] = []
        var wroteInitialization = false
        let initialization = sibling(output, name, "-init.mp4")
        // Chunks go to their segment's file as they come; a segment's file is committed when
        // its report says it is whole.
        func take(_ made: MediaSegmenter.Output) throws(StreamingError) {
            if !wroteInitialization, let bytes = segmenter.initializationSegment {
                try files.write(BlockBuffer(bytes), to: initialization)
                wroteInitialization = true
            }
            for chunk in made.chunks { try files.append(chunk.data, to: segmentPath(output, name, chunk.segment, options.format)) }
            for report in made.completed {
                try files.commit(segmentPath(output, name, report.index, options.format))
                reports.append(report)
            }
        }
        var frameRate: FrameRate?
        while true {
            let sample: SampleBuffer?
            do { sample = try source.next() } catch { throw .source(error) }
            guard let sample else { break }
            if Task.isCancelled { throw .source(.cancelled) }
            guard try takes(sample) else { continue }
            if frameRate == nil { frameRate = source.frameRate }
            let made: MediaSegmenter.Output
            do { made = try segmenter.append(sample) } catch { throw .output(error) }
            try take(made)
            tick()
        }
        let last: MediaSegmenter.Output
        do { last = try segmenter.finish() } catch { throw .output(error) }
        try take(last)
        guard let format = segmenter.formatDescription, !reports.isEmpty else {
            throw .source(.noSamples(input: source.name, reason: "no samples to package"))
        }
        var made = rendition(name: name, beside: output, reports: reports, format: format, audio: audio?.format.audio, frameRate: frameRate ?? format.sps.frameRate,
                             segmenter: options, timescale: segmenter.timescale, files: files)
        made.audio = audio
        made.tracksLeftOut = leftOut
        return made
    }

    static func segmentPath(_ output: String, _ name: String, _ index: Int, _ format: MediaSegmenter.Format) -> String {
        let number = String(index)
        return sibling(output, name, "-" + String(repeating: "0", count: max(0, 5 - number.count)) + number + "." + format.fileExtension)
    }

    /// The rendition's playlists (its media and I-frame playlists, written) and its entries in
    /// the multivariant playlist and the MPD.
    static func rendition(name: String, beside output: String, reports: [MediaSegmenter.SegmentReport], format: VideoFormatDescription, audio: AudioFormatDescription? = nil,
                          frameRate: FrameRate?, segmenter: MediaSegmenter.Options, timescale: Int32?, files: WrittenFiles) -> Rendition {
        let isFMP4 = segmenter.format == .fragmentedMP4
        let map = isFMP4 ? (uri: fileName(sibling(output, name, "-init.mp4")), byteRange: Range<Int>?.none) : nil
        let uris = reports.map { fileName(segmentPath(output, name, $0.index, segmenter.format)) }
        let durations = reports.map(\.duration.seconds)
        let independent = reports.allSatisfy(\.isIndependent)
        let media = HLSMediaPlaylist(targetDuration: HLSMediaPlaylist.targetDuration(for: durations), playlistType: .vod, independentSegments: independent,
                                     map: map, segments: zip(uris, durations).map { HLSMediaPlaylist.Segment(uri: $0, duration: $1) }, endList: true)
        var frames: [HLSMediaPlaylist.Segment] = []
        for (uri, report) in zip(uris, reports) {
            for sync in report.syncSamples { frames.append(.init(uri: uri, duration: sync.duration.seconds, byteRange: sync.byteRange)) }
        }
        let iFrames = HLSMediaPlaylist(targetDuration: HLSMediaPlaylist.targetDuration(for: frames.map(\.duration)), playlistType: .vod,
                                       independentSegments: true, iFramesOnly: true, map: map, segments: frames, endList: true)
        let playlist = sibling(output, name, ".m3u8")
        let iFramePlaylist = sibling(output, name, "-iframes.m3u8")
        files.pending[playlist] = media.rendered
        files.pending[iFramePlaylist] = iFrames.rendered
        // Bit rates: the peak over the segments (RFC 8216bis), and the whole's average.
        let total = durations.reduce(0, +)
        let peak = reports.map { Double($0.byteCount * 8) / max($0.duration.seconds, 0.001) }.max() ?? 0
        let average = Double(reports.reduce(0) { $0 + $1.byteCount } * 8) / max(total, 0.001)
        let iFramePeak = zip(frames, frames.map { Double($0.byteRange?.count ?? 0) * 8 }).map { $1 / max($0.duration, 0.001) }.max() ?? 0
        let size = (width: format.width, height: format.height)
        let variant = HLSMultivariantPlaylist.Variant(uri: fileName(playlist), bandwidth: Int(peak.rounded(.up)), averageBandwidth: Int(average.rounded(.up)),
                                                      codecs: [format.codecString] + (audio.map { [$0.codecString] } ?? []), resolution: size,
                                                      frameRate: frameRate?.framesPerSecond)
        let iFrameVariant = HLSMultivariantPlaylist.Variant(uri: fileName(iFramePlaylist), bandwidth: Int(iFramePeak.rounded(.up)), codecs: [format.codecString],
                                                            resolution: size)
        var representation: DASHManifest.Representation?
        if isFMP4, let timescale {
            let ticks = { (time: MediaTime) in time.converted(toTimescale: timescale).value }
            representation = DASHManifest.Representation(
                id: name, codecs: format.codecString, width: size.width, height: size.height, frameRate: frameRate.map { "\($0.numerator)/\($0.denominator)" },
                bandwidth: Int(peak.rounded(.up)), timescale: Int(timescale), initialization: fileName(sibling(output, name, "-init.mp4")),
                media: fileName(sibling(output, name, "-$Number%05d$.m4s")), startNumber: 0,
                segments: reports.map { (ticks($0.earliestPresentationTime), ticks($0.duration)) })
        }
        return Rendition(name: name, playlist: playlist, iFramePlaylist: iFramePlaylist, segments: reports, variant: variant, iFrameVariant: iFrameVariant,
                         representation: representation, duration: total, independentSegments: independent)
    }

    /// Writes the playlists (and the MPD) of `renditions` and commits every file.
    /// Why a packager leaves a track out.
    static let videoOnly = "HLS and DASH packaging carries the video alone so far (TS segments carry the first AAC track)"

    static func finish(_ renditions: [Rendition], playlist output: String, dash: String?, warnings: [String], files: WrittenFiles) throws(StreamingError) -> Summary {
        let multivariant = HLSMultivariantPlaylist(variants: renditions.map(\.variant), iFrameVariants: renditions.map(\.iFrameVariant),
                                                   independentSegments: renditions.allSatisfy(\.independentSegments))
        for (path, text) in files.pending.sorted(by: { $0.key < $1.key }) { try files.write(BlockBuffer(Array(text.utf8)), to: path) }
        files.pending = [:]
        if let dash {
            let manifest = DASHManifest(kind: .static(duration: renditions.map(\.duration).max() ?? 0),
                                        minimumBufferTime: renditions.first.map { $0.segments.map(\.duration.seconds).max() ?? 2 } ?? 2,
                                        representations: renditions.compactMap(\.representation))
            try files.write(BlockBuffer(Array(manifest.rendered.utf8)), to: dash)
        }
        try files.write(BlockBuffer(Array(multivariant.rendered.utf8)), to: output)
        return Summary(playlist: output, renditions: renditions, dashManifest: dash, warnings: warnings)
    }
}

/// The files a packaging run wrote, each under a temporary name and renamed when whole;
/// removed all together when the run fails.
final class WrittenFiles: @unchecked Sendable {  // used by one packaging run at a time
    private(set) var paths: [String] = []
    /// Directories made for the output, outermost first.
    private var directories: [String] = []
    /// Playlists waiting to be written at the end (they name every segment).
    var pending: [String: String] = [:]

    /// Writes `data` to `path`, whole or not at all.
    func write(_ data: BlockBuffer, to path: String) throws(StreamingError) {
        do throws(SystemError) {
            let file = try OutputFile(path: path)
            do throws(SystemError) {
                try data.forEachSegment { (bytes) throws(SystemError) in try file.write(bytes) }
                try file.commit()
            } catch {
                file.discard()
                throw error
            }
        } catch {
            throw .output(.file(error))
        }
        paths.append(path)
    }

    /// Files being written a chunk at a time, by path.
    private var open: [String: OutputFile] = [:]

    /// Appends `data` to the file at `path`, made (under a temporary name) at its first chunk.
    func append(_ data: BlockBuffer, to path: String) throws(StreamingError) {
        do throws(SystemError) {
            let file: OutputFile
            if let existing = open[path] { file = existing } else { file = try OutputFile(path: path) }
            open[path] = file
            try data.forEachSegment { (bytes) throws(SystemError) in try file.write(bytes) }
        } catch {
            throw .output(.file(error))
        }
    }

    /// Puts the file written a chunk at a time at `path` in place.
    func commit(_ path: String) throws(StreamingError) {
        guard let file = open.removeValue(forKey: path) else { return }
        do { try file.commit() } catch { throw .output(.file(error)) }
        paths.append(path)
    }

    /// Makes the directory the output goes in, when missing.
    func makeDirectory(for path: String) throws(StreamingError) {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return }
        do { directories += try makeDirectories(String(path[..<slash])) } catch { throw .output(.file(error)) }
    }

    /// Removes every file written, and the directories made for them.
    func removeAll() {
        for file in open.values { file.discard() }
        open = [:]
        for path in paths { removeFile(path) }
        for directory in directories.reversed() { removeDirectory(directory) }
        paths = []
        directories = []
    }
}
