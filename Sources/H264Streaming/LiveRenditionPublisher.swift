import MediaCore
import SampleFlow
import SystemIO

/// One live rendition's publishing: its picture cut into segments (and parts) as samples
/// come, and the sound chosen to go with it: in transport stream segments muxed beside the
/// picture, in fragmented MP4 a rendition of its own (`EXT-X-MEDIA`) whose segments end where
/// the picture's do (`AlignedSoundSegments`, each frame released once the picture's decoding
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
    /// The sound's rendition (fragmented MP4 with sound).
    let soundRendition: String?
    /// The track of the sound published with the picture (its AAC frames; others are left out).
    let sound: TrackID?
    private let options: MediaSegmenter.Options
    private var segmenter: MediaSegmenter
    private var gathering: SegmentGathering
    private var soundSegments: AlignedSoundSegments?
    private var soundGathering: SegmentGathering?
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
    /// The sound's language (ISO 639-2), for its rendition's NAME and LANGUAGE.
    private let soundLanguage: String?
    /// Whether the sound's rendition is listed in the store (fragmented MP4: at its first frame).
    private(set) var soundListed = false
    /// The most sound frames that wait for the picture's decoding to pass them (a picture that
    /// stalls while its sound goes on): past it they go to the segment being made.
    static let waitingSoundLimit = 1024

    /// A publisher of `rendition` cut with `options`, with the AAC frames of track `sound`
    /// (for fragmented MP4 published as `soundRendition`).
    init(rendition: String, options: MediaSegmenter.Options, lowLatency: Bool, sound: TrackID?, soundRendition: String?,
         soundLanguage: String? = nil) throws(StreamingError) {
        self.rendition = rendition
        self.soundLanguage = soundLanguage
        self.sound = sound
        self.options = options
        let isFMP4 = options.format == .fragmentedMP4
        self.soundRendition = isFMP4 && sound != nil ? soundRendition : nil
        do { segmenter = try MediaSegmenter(options: options) } catch { throw .output(error) }
        gathering = SegmentGathering(lowLatency: lowLatency, rendition: rendition)
        if isFMP4, let sound, let soundRendition {
            soundGathering = SegmentGathering(lowLatency: lowLatency, rendition: soundRendition)
            var soundOptions = MediaSegmenter.Options(format: .fragmentedMP4, segmentDuration: options.segmentDuration, partDuration: options.partDuration)
            soundOptions.cutsOnlyAtCleanSyncSamples = false
            // (The track's description: its format comes with its first frame.)
            let track = TrackDescription(id: sound, format: .opaque(OpaqueFormatDescription(mediaType: .audio, codec: "mp4a", name: "AAC")))
            do { soundSegments = AlignedSoundSegments(track: track, name: soundRendition, segmenter: try MediaSegmenter(options: soundOptions)) } catch {
                throw .output(error)
            }
        }
        started = sound == nil
    }

    /// Takes the next sample (entered at `entered`, seconds since 1970) and publishes what it
    /// completes into `store`.
    mutating func append(_ sample: SampleBuffer, entered: Double, store: OriginStore) throws(StreamingError) {
        let isPicture = sample.formatDescription.video != nil
        let isSound = !isPicture && sound == sample.trackID && sample.audioFormatDescription?.isAAC == true
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
            let kinds = Set(held.map { $0.formatDescription.video != nil })
            let span = held.last!.decodeTime - held.first!.decodeTime
            if kinds.count == 2 || held.count >= Self.heldLimit || (span.isNumeric && span >= Self.heldSpan) { try start(entered: entered, store: store) }
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
            if sound != nil, let picture = held.first(where: { $0.formatDescription.video != nil }) {
                do {
                    try segmenter.declare(TrackDescription(id: picture.trackID, format: picture.formatDescription))
                    if let frame = held.first(where: { $0.formatDescription.video == nil }) {
                        try segmenter.declare(TrackDescription(id: frame.trackID, format: frame.formatDescription))
                    }
                } catch { throw .output(error) }
            }
        } else if soundSegments != nil {
            origin = held.filter(\.decodeTime.isNumeric).map(\.decodeTime).min(by: <)
            var withOrigin = options
            withOrigin.timeOrigin = origin
            do { segmenter = try MediaSegmenter(options: withOrigin) } catch { throw .output(error) }
            var soundOptions = MediaSegmenter.Options(format: .fragmentedMP4, segmentDuration: options.segmentDuration, partDuration: options.partDuration)
            soundOptions.timeOrigin = origin
            do { soundSegments!.segmenter = try MediaSegmenter(options: soundOptions) } catch { throw .output(error) }
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
        if soundSegments != nil, sample.formatDescription.video == nil {
            if !soundListed, let soundRendition, let sound {
                guard store.beginPublishing(soundRendition, sound: (sound, soundLanguage)) else {
                    throw .invalidOption("rendition \(soundRendition) (the sound of \(rendition)) is being published, or has ended")
                }
                soundListed = true
            }
            soundSegments!.enqueue(sample)
            try drainSound(final: false, entered: entered, store: store)
            return
        }
        let made: MediaSegmenter.Output
        do { made = try segmenter.append(sample) } catch { throw .output(error) }
        if pictureDelay == nil, sample.formatDescription.video != nil, sample.presentationTime.isNumeric, sample.decodeTime.isNumeric {
            pictureDelay = sample.presentationTime - sample.decodeTime
        }
        takePicture(made, entered: entered, decodeTime: sample.decodeTime, store: store)
        if soundSegments != nil, sample.formatDescription.video != nil, let origin, sample.decodeTime.isNumeric {
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
        guard soundSegments != nil, let origin else { return }
        let made: [(output: MediaSegmenter.Output, decodeTime: MediaTime?)]
        // A picture that stalls while its sound goes on: the waiting frames go into the segment
        // being made (memory: at most waitingSoundLimit frames).
        var horizon = pictureDecoded
        if soundSegments!.waitingCount > Self.waitingSoundLimit, let last = soundSegments!.waiting.last {
            horizon = last.presentationTime - origin + MediaTime(value: 1, timescale: 1)
        }
        do { made = try soundSegments!.drain(boundaries: boundaries, origin: origin, final: final, horizon: horizon) } catch { throw .output(error) }
        for piece in made {
            let date = piece.decodeTime.flatMap { $0.isNumeric ? gathering.date(ofMediaTime: ($0 - (pictureDelay ?? .zero)).seconds) : nil }
            soundGathering!.take(piece.output, from: soundSegments!.segmenter, sampleEntered: entered, decodeTime: piece.decodeTime, date: date, into: store)
        }
        samplesLeftOut += soundSegments!.framesBeforeOrigin
        soundSegments!.framesBeforeOrigin = 0
        // (Memory: the picture's boundaries the sound has passed are kept, 16 bytes a segment.)
    }
}
