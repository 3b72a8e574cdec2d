import MediaCore
import SampleFlow
import SystemIO

/// One live rendition's publishing: its picture cut into segments (and parts) as samples
/// come, and the sound chosen to go with it: in transport stream segments one AAC track muxed
/// beside the picture, in fragmented MP4 each AAC track a rendition of its own (`EXT-X-MEDIA`,
/// one per language) whose segments end where the picture's do (`AlignedSoundSegments`, each frame released once the picture's decoding
/// has passed it: the sound lags the picture by its reordering, not by a segment).
///
/// Fragmented MP4 with sound: picture and sound share one timeline, from the earliest first
/// decoding time of the two; the first samples are held (at most ``heldLimit`` of them, or
/// ``heldSpan`` of media) until each has begun, as the packager does. Sound before the picture
/// in a transport stream waits for the first picture (the tables list the picture first), at
/// most ``heldLimit`` frames. Samples of any other track are counted, not published.
struct LiveRenditionPublisher {
    /// The most samples held while the start waits for the picture or the sound.
    static let heldLimit = 512
    /// The most media held while the start waits for the picture or the sound.
    static let heldSpan = MediaTime(value: 2, timescale: 1)

    let rendition: String
    /// The tracks of the sound published with the picture (their AAC frames; others are left
    /// out): in transport stream segments the first alone.
    let sounds: [TrackID]
    private let options: MediaSegmenter.Options
    private var segmenter: MediaSegmenter
    private var gathering: SegmentGathering
    /// Fragmented MP4: each sound track's rendition, in the order of `sounds`.
    private var soundRenditions: [SoundRendition] = []
    /// Samples held until the start (see the type's discussion).
    private var held: [SampleBuffer] = []
    private var started: Bool
    private var origin: MediaTime?
    /// Where the picture's segments end, from the origin.
    private var boundaries: [MediaTime] = []
    /// The picture's latest decoding time, from the origin.
    private var pictureDecoded: MediaTime?
    /// How long the first picture is presented after it is decoded (its reordering): the
    /// picture's segments are dated by their first decoding, the sound's as far before their
    /// presentation, so that one date is one moment in both playlists.
    private var pictureDelay: MediaTime?
    /// Samples of tracks not published, and sound frames dropped (before the start, or held
    /// past the limit).
    private(set) var samplesLeftOut = 0

    /// Whether the sound's format is known (its first frame routed).
    private var soundFormatNoted = false

    /// A sound track's rendition (fragmented MP4): its segments, aligned with the picture's,
    /// and their publishing.
    private struct SoundRendition {
        let track: TrackID
        let name: String
        /// Its language (ISO 639-2), for the rendition's NAME and LANGUAGE.
        let language: String?
        var segments: AlignedSoundSegments
        var gathering: SegmentGathering
        /// Whether it is listed in the store (at its first frame).
        var listed = false
    }

    /// The sound renditions listed in the store (to be ended with the picture's).
    var listedSoundRenditions: [String] { soundRenditions.filter(\.listed).map(\.name) }
    /// The most sound frames that wait for the picture's decoding to pass them (a picture that
    /// stalls while its sound goes on): past it they go to the segment being made.
    static let waitingSoundLimit = 1024

    /// A publisher of `rendition` cut with `options`, with the AAC frames of the tracks
    /// `sounds` (for fragmented MP4 each published as the rendition named beside it, with its
    /// language; in transport stream segments the first alone, muxed).
    init(rendition: String, options: MediaSegmenter.Options, lowLatency: Bool, sounds: [(track: TrackID, rendition: String, language: String?)]) throws(StreamingError) {
        self.rendition = rendition
        self.options = options
        let isFMP4 = options.format == .fragmentedMP4
        let carried = isFMP4 ? sounds : Array(sounds.prefix(1))
        self.sounds = carried.map(\.track)
        do { segmenter = try MediaSegmenter(options: options) } catch { throw .output(error) }
        gathering = SegmentGathering(lowLatency: lowLatency, rendition: rendition)
        if isFMP4 {
            for sound in carried {
                var soundOptions = MediaSegmenter.Options(format: .fragmentedMP4, segmentDuration: options.segmentDuration, partDuration: options.partDuration)
                soundOptions.cutsOnlyAtCleanSyncSamples = false
                // (The track's description: its format comes with its first frame.)
                let track = TrackDescription(id: sound.track, format: .opaque(OpaqueFormatDescription(mediaType: .audio, codec: "mp4a", name: "AAC")))
                do {
                    soundRenditions.append(SoundRendition(track: sound.track, name: sound.rendition, language: sound.language,
                                                          segments: AlignedSoundSegments(track: track, name: sound.rendition, segmenter: try MediaSegmenter(options: soundOptions)),
                                                          gathering: SegmentGathering(lowLatency: lowLatency, rendition: sound.rendition)))
                } catch { throw .output(error) }
            }
        }
        started = carried.isEmpty
    }

    /// Takes the next sample (entered at `entered`, seconds since 1970) and publishes what it
    /// completes into `store`.
    mutating func append(_ sample: SampleBuffer, entered: Double, store: OriginStore) throws(StreamingError) {
        let isPicture = sample.formatDescription.video != nil
        let isSound = !isPicture && sounds.contains(sample.trackID) && sample.audioFormatDescription?.isAAC == true
        guard isPicture || isSound else {
            samplesLeftOut += 1
            return
        }
        guard started else {
            held.append(sample)
            if options.format == .transportStream {
                // The tables list the picture first: the sound waits for it.
                if isPicture { try start(entered: entered, store: store) } else if held.count > Self.heldLimit {
                    held.removeFirst()
                    samplesLeftOut += 1
                }
                return
            }
            // (Once the picture and every sound have begun.)
            let begun = Set(held.map { $0.formatDescription.video != nil ? nil : $0.trackID })
            let span = held.last!.decodeTime - held.first!.decodeTime
            if begun.count == sounds.count + 1 || held.count >= Self.heldLimit || (span.isNumeric && span >= Self.heldSpan) {
                try start(entered: entered, store: store)
            }
            return
        }
        try route(sample, entered: entered, store: store)
    }

    /// Ends the stream: the last segments of the picture and the sound.
    mutating func finish(store: OriginStore) throws(StreamingError) {
        let now = WallClock.seconds
        if !started, !held.isEmpty { try start(entered: now, store: store) }
        let last: MediaSegmenter.Output
        do { last = try segmenter.finish() } catch { throw .output(error) }
        takePicture(last, entered: now, decodeTime: nil, store: store)
        try drainSound(final: true, entered: now, store: store)
    }

    /// The held samples handed on, the timeline's origin taken from them.
    private mutating func start(entered: Double, store: OriginStore) throws(StreamingError) {
        started = true
        if options.format == .transportStream {
            // The tables list the picture first, then the sound (added when it comes, if later).
            if !sounds.isEmpty, let picture = held.first(where: { $0.formatDescription.video != nil }) {
                do {
                    try segmenter.declare(TrackDescription(id: picture.trackID, format: picture.formatDescription))
                    if let frame = held.first(where: { $0.formatDescription.video == nil }) {
                        try segmenter.declare(TrackDescription(id: frame.trackID, format: frame.formatDescription))
                    }
                } catch { throw .output(error) }
            }
        } else if !soundRenditions.isEmpty {
            origin = held.filter(\.decodeTime.isNumeric).map(\.decodeTime).min(by: <)
            var withOrigin = options
            withOrigin.timeOrigin = origin
            do { segmenter = try MediaSegmenter(options: withOrigin) } catch { throw .output(error) }
            var soundOptions = MediaSegmenter.Options(format: .fragmentedMP4, segmentDuration: options.segmentDuration, partDuration: options.partDuration)
            soundOptions.timeOrigin = origin
            for index in soundRenditions.indices {
                do { soundRenditions[index].segments.segmenter = try MediaSegmenter(options: soundOptions) } catch { throw .output(error) }
            }
        }
        let handed = held
        held = []
        for sample in handed { try route(sample, entered: entered, store: store) }
    }

    private mutating func route(_ sample: SampleBuffer, entered: Double, store: OriginStore) throws(StreamingError) {
        if !soundFormatNoted, options.format == .transportStream, let format = sample.audioFormatDescription {
            soundFormatNoted = true
            store.noteMuxedSound(rendition, format: format)
        }
        if sample.formatDescription.video == nil, let index = soundRenditions.firstIndex(where: { $0.track == sample.trackID }) {
            if !soundRenditions[index].listed {
                let sound = soundRenditions[index]
                guard store.beginPublishing(sound.name, sound: (sound.track, sound.language)) else {
                    throw .invalidOption("rendition \(sound.name) (the sound of \(rendition)) is being published, or has ended")
                }
                soundRenditions[index].listed = true
            }
            soundRenditions[index].segments.enqueue(sample)
            try drainSound(final: false, entered: entered, store: store)
            return
        }
        let made: MediaSegmenter.Output
        do { made = try segmenter.append(sample) } catch { throw .output(error) }
        if pictureDelay == nil, sample.formatDescription.video != nil, sample.presentationTime.isNumeric, sample.decodeTime.isNumeric {
            pictureDelay = sample.presentationTime - sample.decodeTime
        }
        takePicture(made, entered: entered, decodeTime: sample.decodeTime, store: store)
        if !soundRenditions.isEmpty, sample.formatDescription.video != nil, let origin, sample.decodeTime.isNumeric {
            pictureDecoded = sample.decodeTime - origin
            try drainSound(final: false, entered: entered, store: store)
        }
    }

    private mutating func takePicture(_ made: MediaSegmenter.Output, entered: Double, decodeTime: MediaTime?, store: OriginStore) {
        gathering.take(made, from: segmenter, sampleEntered: entered, decodeTime: decodeTime, into: store)
        for report in made.completed { boundaries.append(report.earliestPresentationTime + report.duration) }
    }

    /// The sound frames whose segment is known, published (dated on the picture's mapping).
    private mutating func drainSound(final: Bool, entered: Double, store: OriginStore) throws(StreamingError) {
        guard let origin else { return }
        for index in soundRenditions.indices {
            let made: [(output: MediaSegmenter.Output, decodeTime: MediaTime?)]
            // A picture that stalls while its sound goes on: the waiting frames go into the
            // segment being made (memory: at most waitingSoundLimit frames a sound).
            var horizon = pictureDecoded
            if soundRenditions[index].segments.waitingCount > Self.waitingSoundLimit, let last = soundRenditions[index].segments.waiting.last {
                horizon = last.presentationTime - origin + MediaTime(value: 1, timescale: 1)
            }
            do { made = try soundRenditions[index].segments.drain(boundaries: boundaries, origin: origin, final: final, horizon: horizon) } catch { throw .output(error) }
            for piece in made {
                let date = piece.decodeTime.flatMap { $0.isNumeric ? gathering.date(ofMediaTime: ($0 - (pictureDelay ?? .zero)).seconds) : nil }
                soundRenditions[index].gathering.take(piece.output, from: soundRenditions[index].segments.segmenter, sampleEntered: entered,
                                                      decodeTime: piece.decodeTime, date: date, into: store)
            }
            samplesLeftOut += soundRenditions[index].segments.framesBeforeOrigin
            soundRenditions[index].segments.framesBeforeOrigin = 0
        }
        // (Memory: the picture's boundaries the sound has passed are kept, 16 bytes a segment.)
    }
}
