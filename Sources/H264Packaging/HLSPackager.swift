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
/// Sound (``Options/carriesAudio``): TS segments carry the first AAC track muxed beside the
/// picture; a fragmented MP4 package puts each AAC track in an alternative rendition of its own
/// (`EXT-X-MEDIA:TYPE=AUDIO` in the group `audio`, the first the default, LANGUAGE and CHANNELS
/// from the track; `OUT-audio.m3u8`, `OUT-audio-init.mp4`, `OUT-audio-00000.m4s`...), its
/// segments cut within half a frame of the picture's, on one timeline with the picture (each
/// track's first sample where it is in the source); the variant names the group, and its
/// CODECS and BANDWIDTH count the sound.
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
        /// Whether the input's sound goes in: for transport stream segments the first AAC
        /// track, muxed beside the video (the variant's CODECS then name both), as Apple's
        /// authoring specification allows; for fragmented MP4 every AAC track (up to
        /// ``maximumAudioRenditions``), each an alternative rendition. True by default; a
        /// track left out is named in the summary's warnings. Applies when ``source`` reads the
        /// first video track alone (its default).
        public var carriesAudio = true

        /// The most sound renditions a fragmented MP4 package carries.
        public static let maximumAudioRenditions = 16

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
        /// For fragmented MP4, the sound renditions its variant plays (the group its `AUDIO=`
        /// names), the default first.
        public var audioRenditions: [AudioRendition] = []
        /// The input's tracks read but not packaged, each with why ("track 3 (audio, AC-3):
        /// left out: ...").
        public var tracksLeftOut: [String] = []
        /// The stream's presentation length, seconds.
        public var duration: Double
        /// Whether every segment decodes on its own.
        public var independentSegments: Bool
    }

    /// A rendition of sound alone (fragmented MP4): an alternative rendition the variants
    /// name by its group.
    public struct AudioRendition: Sendable {
        /// Its name in the file names (`audio`, `audio-2`...).
        public var name: String
        /// Its media playlist's path.
        public var playlist: String
        /// The input's track it carries.
        public var track: TrackDescription
        /// Its segments' reports, in order.
        public var segments: [MediaSegmenter.SegmentReport]
        /// Its `EXT-X-MEDIA` entry.
        public var alternative: HLSMultivariantPlaylist.AlternativeRendition
        /// Its CODECS string (`mp4a.40.2`).
        public var codecs: String
        /// The peak of its segments' bit rates, and the whole's average, bits per second.
        public var peakBandwidth: Int, averageBandwidth: Int
        /// Its DASH representation.
        public var representation: DASHManifest.AudioRepresentation?
        /// Its length, seconds.
        public var duration: Double
    }

    /// What a package holds.
    public struct Summary: Sendable {
        /// The multivariant playlist's path.
        public var playlist: String
        /// The renditions of the picture (none for a package of sound alone).
        public var renditions: [Rendition]
        /// Every sound rendition (fragmented MP4), the default first.
        public var audioRenditions: [AudioRendition] = []
        /// The multivariant playlist's variants (for sound alone, one: the default sound's
        /// playlist, naming the group).
        public var variants: [HLSMultivariantPlaylist.Variant] = []
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
            let readsAll = options.carriesAudio && sourceOptions.tracks == .firstVideo && sourceOptions.trackID == nil
            if readsAll { sourceOptions.tracks = .all }
            let source: MediaSource
            do { source = try MediaSource(path: path, options: sourceOptions) } catch { throw .source(error) }
            // A transport stream's tracks are known from its first frames: probed first, so that
            // the first segment's tables list the sound too (a stream added to the PMT later
            // stalls GStreamer's demuxer).
            let probed = readsAll ? ((try? MediaSource.otherTracks(path: path, options: sourceOptions)) ?? []) : []
            let packaged = try Self.package(source, as: name, beside: output, options: options.segmenter, files: files,
                                            tracks: readsAll ? .chosen(audio: true, known: probed) : .all) {
                progress(source.progress.read, source.progress.total)
            }
            if Task.isCancelled { throw .source(.cancelled) }
            return try Self.finish(packaged.rendition.map { [$0] } ?? [], sounds: packaged.audioRenditions, playlist: output, dash: options.dashManifest,
                                   warnings: source.warnings + source.leftOutTracks(reason: options.carriesAudio ? Self.videoOnly : Self.soundOff) + packaged.tracksLeftOut,
                                   files: files)
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
                        files: WrittenFiles, tracks choice: TrackChoice = .all, tick: () -> Void = {}) throws(StreamingError) -> Packaged {
        var segmenter: MediaSegmenter
        do { segmenter = try MediaSegmenter(options: options) } catch { throw .output(error) }
        let isFMP4 = options.format == .fragmentedMP4
        // Each track taken or left out at its first sample (a transport stream's tracks become
        // known as their samples come): the first H.264 track, and the first AAC one with it
        // (TS), or every AAC one, each a rendition of its own (fMP4).
        var decided: [TrackID: Bool] = [:]
        var video: TrackID?
        var audio: TrackDescription?
        var sounds: [AlignedSoundSegments] = []
        var soundIndex: [TrackID: Int] = [:]
        var leftOut: [String] = []
        var started = false
        // fMP4 with sound: one timeline for the picture and the sound, from the earliest first
        // decoding time of the tracks known at the start; samples held until each has come (at
        // most `heldLimit`), then handed on.
        var origin: MediaTime?
        var held: [SampleBuffer] = []
        var heldBytes = 0
        var awaiting: Set<TrackID> = []
        func soundSegmenter() throws(StreamingError) -> MediaSegmenter {
            var soundOptions = MediaSegmenter.Options(format: .fragmentedMP4, segmentDuration: options.segmentDuration)
            soundOptions.timeOrigin = origin
            do { return try MediaSegmenter(options: soundOptions) } catch { throw .output(error) }
        }
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
                    if try decide(track, withAudio: withAudio), isFMP4, !sounds.isEmpty || soundIndex[track.id] != nil { awaiting.insert(track.id) }
                }
                if sounds.isEmpty { awaiting = [] }
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
            case .audio(let format) where withAudio && format.isAAC && isFMP4:
                if sounds.count >= Options.maximumAudioRenditions {
                    reason = "a package carries at most \(Options.maximumAudioRenditions) sound renditions"
                } else {
                    soundIndex[track.id] = sounds.count
                    sounds.append(AlignedSoundSegments(track: track, name: sounds.isEmpty ? "audio" : "audio-\(sounds.count + 1)", segmenter: try soundSegmenter()))
                }
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
                reason = "a package carries AAC sound"
            case .audio:
                reason = soundOff
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
        var boundaries: [MediaTime] = []
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
                boundaries.append(report.earliestPresentationTime + report.duration)
            }
        }
        func drainSound(_ index: Int, final: Bool) throws(StreamingError) {
            let made: [MediaSegmenter.Output]
            do { made = try sounds[index].drain(boundaries: boundaries, origin: origin ?? .zero, final: final).map(\.output) } catch { throw .output(error) }
            let soundName = sounds[index].name
            for piece in made {
                if !sounds[index].wroteInitialization, let bytes = sounds[index].segmenter.initializationSegment {
                    try files.write(BlockBuffer(bytes), to: sibling(output, soundName, "-init.mp4"))
                    sounds[index].wroteInitialization = true
                }
                for chunk in piece.chunks { try files.append(chunk.data, to: segmentPath(output, soundName, chunk.segment, .fragmentedMP4)) }
                for report in piece.completed {
                    try files.commit(segmentPath(output, soundName, report.index, .fragmentedMP4))
                    sounds[index].reports.append(report)
                    // (Sound alone: the leading sound's segments are the others' boundaries.)
                    if sounds[index].leads { boundaries.append(report.earliestPresentationTime + report.duration) }
                }
            }
            if sounds[index].leads, made.contains(where: { !$0.completed.isEmpty }) {
                for other in sounds.indices where other != index { try drainSound(other, final: false) }
            }
        }
        func route(_ sample: SampleBuffer) throws(StreamingError) {
            if let index = soundIndex[sample.trackID] {
                sounds[index].enqueue(sample)
                try drainSound(index, final: false)
                return
            }
            let made: MediaSegmenter.Output
            do { made = try segmenter.append(sample) } catch { throw .output(error) }
            try take(made)
            if !made.completed.isEmpty { for index in sounds.indices { try drainSound(index, final: false) } }
        }
        /// The timeline's origin from the held samples, and the held samples handed on.
        func start() throws(StreamingError) {
            var firsts: [TrackID: MediaTime] = [:]
            for sample in held where firsts[sample.trackID] == nil && sample.decodeTime.isNumeric { firsts[sample.trackID] = sample.decodeTime }
            origin = firsts.values.min(by: <)
            var withOrigin = options
            withOrigin.timeOrigin = origin
            do { segmenter = try MediaSegmenter(options: withOrigin) } catch { throw .output(error) }
            for index in sounds.indices { sounds[index].segmenter = try soundSegmenter() }
            // No picture known: the first sound leads.
            if video == nil, !sounds.isEmpty { sounds[0].leads = true }
            awaiting = []
            let handed = held
            held = []
            for sample in handed { try route(sample) }
        }
        var frameRate: FrameRate?
        while true {
            let sample: SampleBuffer?
            do { sample = try source.next() } catch { throw .source(error) }
            guard let sample else { break }
            if Task.isCancelled { throw .source(.cancelled) }
            guard try takes(sample) else { continue }
            if frameRate == nil, sample.formatDescription.video != nil { frameRate = source.frameRate }
            if !awaiting.isEmpty {
                held.append(sample)
                heldBytes += sample.data.count
                awaiting.remove(sample.trackID)
                if awaiting.isEmpty || held.count >= heldLimit.samples || heldBytes >= heldLimit.bytes { try start() }
            } else {
                if origin == nil, isFMP4, !sounds.isEmpty {
                    // (A sound found after the picture began: the picture's first sample is the origin.)
                    held = [sample]
                    try start()
                } else {
                    try route(sample)
                }
            }
            tick()
        }
        if !held.isEmpty { try start() }
        let last: MediaSegmenter.Output
        do { last = try segmenter.finish() } catch { throw .output(error) }
        try take(last)
        for index in sounds.indices { try drainSound(index, final: true) }
        var soundRenditions: [AudioRendition] = []
        for sound in sounds {
            if sound.framesBeforeOrigin > 0 {
                leftOut.append("track \(sound.track.id) (audio, \(sound.track.format.codecName)): \(sound.framesBeforeOrigin) frame(s) presented before the package's start left out")
            }
            guard let rendition = audioRendition(sound, beside: output, isDefault: soundRenditions.isEmpty, files: files) else {
                leftOut.append("track \(sound.track.id) (audio, \(sound.track.format.codecName)): left out: no frames")
                continue
            }
            soundRenditions.append(rendition)
        }
        guard let format = segmenter.formatDescription, !reports.isEmpty else {
            // Sound alone (fragmented MP4): its renditions are the package.
            if video == nil, audio != nil { throw .invalidOption("\(source.name): no picture: a package of sound alone is fragmented MP4 (--segment-format fmp4), not TS") }
            guard !soundRenditions.isEmpty else { throw .source(.noSamples(input: source.name, reason: "no H.264 or AAC samples to package")) }
            return Packaged(rendition: nil, audioRenditions: soundRenditions, tracksLeftOut: leftOut)
        }
        var made = rendition(name: name, beside: output, reports: reports, format: format, audio: audio?.format.audio, frameRate: frameRate ?? format.sps.frameRate,
                             segmenter: options, timescale: segmenter.timescale, files: files)
        made.audio = audio
        made.audioRenditions = soundRenditions
        if let main = made.audioRenditions.first {
            // The variant plays the group: its CODECS and bit rates count the sound's (the
            // largest rendition's, RFC 8216bis §4.4.6.2).
            made.variant.plays(.init(id: main.alternative.groupID, codecs: made.audioRenditions.map(\.codecs),
                                     peakBandwidth: made.audioRenditions.map(\.peakBandwidth).max() ?? 0,
                                     averageBandwidth: made.audioRenditions.map(\.averageBandwidth).max() ?? 0))
        }
        made.tracksLeftOut = leftOut
        return Packaged(rendition: made, audioRenditions: soundRenditions, tracksLeftOut: leftOut)
    }

    /// What one packaging of a source made: the picture's rendition (nil for sound alone) and
    /// the sound's.
    struct Packaged {
        var rendition: Rendition?
        var audioRenditions: [AudioRendition]
        var tracksLeftOut: [String]
    }

    /// The most samples (and bytes) held while a fragmented MP4 package waits for the first
    /// sample of each track it carries (its timeline starts at the earliest).
    static let heldLimit = (samples: 2000, bytes: 64 << 20)

    /// A sound rendition's media playlist (written) and its `EXT-X-MEDIA` and DASH entries;
    /// nil when it has no segment.
    static func audioRendition(_ sound: AlignedSoundSegments, beside output: String, isDefault: Bool, files: WrittenFiles) -> AudioRendition? {
        let reports = sound.reports
        guard !reports.isEmpty, let format = sound.segmenter.audioFormatDescription else { return nil }
        let initialization = fileName(sibling(output, sound.name, "-init.mp4"))
        let uris = reports.map { fileName(segmentPath(output, sound.name, $0.index, .fragmentedMP4)) }
        let durations = reports.map(\.duration.seconds)
        let media = HLSMediaPlaylist(targetDuration: HLSMediaPlaylist.targetDuration(for: durations), playlistType: .vod, independentSegments: true,
                                     map: (uri: initialization, byteRange: nil), segments: zip(uris, durations).map { HLSMediaPlaylist.Segment(uri: $0, duration: $1) },
                                     endList: true)
        let playlist = sibling(output, sound.name, ".m3u8")
        files.pending[playlist] = media.rendered
        let total = durations.reduce(0, +)
        let peak = reports.map { Double($0.byteCount * 8) / max($0.duration.seconds, 0.001) }.max() ?? 0
        let average = Double(reports.reduce(0) { $0 + $1.byteCount } * 8) / max(total, 0.001)
        let language = LanguageTag(sound.track.language)
        let alternative = HLSMultivariantPlaylist.AlternativeRendition(sound: sound.track, format: format, uri: fileName(playlist), isDefault: isDefault)
        var representation: DASHManifest.AudioRepresentation?
        if let timescale = sound.segmenter.timescale {
            let ticks = { (time: MediaTime) in time.converted(toTimescale: timescale).value }
            representation = DASHManifest.AudioRepresentation(
                id: sound.name, codecs: format.codecString, language: language?.tag, sampleRate: format.sampleRate, channelCount: format.channelCount,
                bandwidth: Int(peak.rounded(.up)), timescale: Int(timescale), initialization: initialization,
                media: fileName(sibling(output, sound.name, "-$Number%05d$.m4s")), startNumber: 0,
                segments: reports.map { (ticks($0.earliestPresentationTime), ticks($0.duration)) })
        }
        return AudioRendition(name: sound.name, playlist: playlist, track: sound.track, segments: reports, alternative: alternative, codecs: format.codecString,
                              peakBandwidth: Int(peak.rounded(.up)), averageBandwidth: Int(average.rounded(.up)), representation: representation, duration: total)
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
        let variant = HLSMultivariantPlaylist.Variant(picture: format, uri: fileName(playlist), peakBandwidth: Int(peak.rounded(.up)), averageBandwidth: Int(average.rounded(.up)),
                                                      frameRate: frameRate?.framesPerSecond, muxedSound: audio)
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
    static let videoOnly = "a package carries H.264 video and AAC sound"
    /// Why a package without sound leaves a sound track out.
    static let soundOff = "the package's sound is off (carriesAudio false, --no-audio)"

    static func finish(_ renditions: [Rendition], sounds alone: [AudioRendition] = [], playlist output: String, dash: String?, warnings: [String],
                       files: WrittenFiles) throws(StreamingError) -> Summary {
        var sounds: [AudioRendition] = []
        for sound in renditions.flatMap(\.audioRenditions) + alone where !sounds.contains(where: { $0.playlist == sound.playlist }) { sounds.append(sound) }
        var variants = renditions.map(\.variant)
        if renditions.isEmpty, let main = sounds.first {
            // Sound alone: one variant, the default sound's playlist, naming the group.
            var codecs: [String] = []
            for codec in sounds.map(\.codecs) where !codecs.contains(codec) { codecs.append(codec) }
            variants = [HLSMultivariantPlaylist.Variant(uri: main.alternative.uri, bandwidth: sounds.map(\.peakBandwidth).max() ?? 0,
                                                        averageBandwidth: sounds.map(\.averageBandwidth).max(), codecs: codecs, audioGroup: main.alternative.groupID)]
        }
        let multivariant = HLSMultivariantPlaylist(variants: variants, iFrameVariants: renditions.map(\.iFrameVariant),
                                                   independentSegments: renditions.allSatisfy(\.independentSegments),
                                                   alternativeRenditions: sounds.map(\.alternative))
        for (path, text) in files.pending.sorted(by: { $0.key < $1.key }) { try files.write(BlockBuffer(Array(text.utf8)), to: path) }
        files.pending = [:]
        if let dash {
            let manifest = DASHManifest(kind: .static(duration: (renditions.map(\.duration) + sounds.map(\.duration)).max() ?? 0),
                                        minimumBufferTime: (renditions.first?.segments ?? sounds.first?.segments ?? []).map(\.duration.seconds).max() ?? 2,
                                        representations: renditions.compactMap(\.representation), audioRepresentations: sounds.compactMap(\.representation))
            try files.write(BlockBuffer(Array(manifest.rendered.utf8)), to: dash)
        }
        try files.write(BlockBuffer(Array(multivariant.rendered.utf8)), to: output)
        return Summary(playlist: output, renditions: renditions, audioRenditions: sounds, variants: variants, dashManifest: dash, warnings: warnings)
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
