import H264Bitstream
import MediaCore

/// A sample placed on its track's media timeline: what every layout writes.
struct PlacedSample {
    /// The bytes to store (parameter sets put in band in front when the layout needs them).
    var data: BlockBuffer
    /// 1-based sample description.
    var descriptionIndex: Int
    /// Decode time and duration, media ticks.
    var decodeTime: Int64
    var duration: Int64
    /// Presentation minus decode time (minus the initial delay with signed offsets), ticks.
    var compositionOffset: Int64
    var isSync: Bool
    var attachments: SampleAttachments
    /// How much the previous sample's duration changes so that it lasts until this one is
    /// decoded, ticks: positive closes a gap, negative ends an overlap (a movie's sample lasts
    /// from its decode time to the next sample's, as FFmpeg's muxer writes it, whatever
    /// presentation duration the sample buffer carried: with reordering and a variable rate the
    /// two differ).
    var gapBefore: Int64
}

/// One track as it is written: its kind, its timescale, the timing of the samples so far, and
/// its sample descriptions. Turns sample buffers into ``PlacedSample``s, checking everything
/// the container needs before a byte is written.
///
/// Video (H.264): the timescale is fine enough for the first sample's duration (doubled up to
/// 10000 or more, as FFmpeg picks one), every time must be a whole number of ticks, and
/// parameter sets go into sample entries or in band. Audio (AAC): the timescale is the sample
/// rate and times are rounded to it (a transport stream's 90 kHz times of 44.1 kHz audio are
/// not whole samples). Carried samples keep their first sample's timescale and sample entry.
struct TrackTimeline {
    enum Descriptions {
        /// A sample entry per distinct description (`avc1`).
        case perChange
        /// One sample entry; a sample whose parameter sets differ from the previous sample's
        /// carries them in band (`avc3`, and the fragments of a fragmented `avc1` file).
        case single
    }

    /// The kind of track, from its first sample.
    enum Kind: Equatable {
        case video, audio, opaque
    }

    let path: String
    let descriptionPolicy: Descriptions
    let signedOffsets: Bool
    private(set) var kind: Kind?
    private(set) var mediaType: MediaType?
    private(set) var descriptions: [FormatDescription] = []
    /// The description of the previous sample (for in-band parameter sets).
    private var previousDescription: FormatDescription?
    /// The previous sample's description index (the answer again for the same description).
    private var previousIndex: Int?
    private(set) var timescale: Int32 = 0
    private(set) var firstDecodeTime: MediaTime?
    private(set) var nextDecodeTime: Int64 = 0
    /// The previous sample's duration, ticks.
    private var previousDuration: Int64 = 0
    /// The previous sample's decode time, ticks.
    private var previousDecodeTime: Int64 = 0
    /// The first sample's composition offset (the B-frame reorder delay), ticks.
    private(set) var initialDelay: Int64 = 0
    /// The earliest presentation time and the latest presentation end of every sample, ticks.
    private(set) var minimumPresentation: Int64 = .max
    private(set) var maximumPresentationEnd: Int64 = .min
    /// The same of what is to be shown (samples not marked `doNotDisplay`, less their trims), ticks.
    private var shownMinimum: Int64 = .max
    private var shownMaximumEnd: Int64 = .min
    private(set) var sampleCount = 0
    private(set) var largestSample = 0
    private(set) var totalBytes: UInt64 = 0

    /// The most sample descriptions one track gets before in-band parameter sets are the way.
    static let maximumDescriptions = 1000

    /// The timescale to use whatever the first sample's (CMAF's fixed one), if any.
    let fixedTimescale: Int32?

    init(path: String, descriptions: Descriptions, signedOffsets: Bool, fixedTimescale: Int32? = nil) {
        self.path = path
        descriptionPolicy = descriptions
        self.signedOffsets = signedOffsets
        self.fixedTimescale = fixedTimescale
    }

    /// Where the presentation (the edit) starts, ticks: the first frame to be shown; samples
    /// marked `doNotDisplay` before it (a cut's pre-roll, an encoder's priming) are decoded but
    /// left out of the edit, as is the trimmed start of an audio packet. With no sample to be
    /// shown, every sample's.
    var presentationStart: Int64 { shownMinimum == .max ? minimumPresentation : shownMinimum }

    /// The presentation's length, from the first shown frame to the end of the last, ticks.
    var presentationDuration: Int64 {
        sampleCount == 0 ? 0 : (shownMinimum == .max ? maximumPresentationEnd : shownMaximumEnd) - presentationStart
    }

    /// Where the presentation starts on the sources' common timeline (the first decode time
    /// plus ``presentationStart``), nil before the first sample.
    var presentationStartTime: MediaTime? {
        firstDecodeTime.map { $0 + MediaTime(value: presentationStart, timescale: timescale) }
    }

    /// The first description's video format, for a video track.
    var firstVideoFormat: VideoFormatDescription? { descriptions.first?.video }

    private func error(_ reason: String) -> ContainerError { ContainerError(.invalidInput, "sample \(sampleCount): \(reason)", path: path) }

    /// Checks a sample and places it on the timeline.
    mutating func place(_ sample: SampleBuffer) throws(ContainerError) -> PlacedSample {
        let timing = sample.timing
        guard timing.decodeTime.isNumeric, timing.presentationTime.isNumeric, timing.duration.isNumeric else {
            throw error("no numeric timing (\(sample)); a movie needs decode and presentation times and a duration")
        }
        if firstDecodeTime == nil { try start(with: sample) }
        let description = try descriptionIndex(for: sample.formatDescription)
        var data = sample.data
        if description.inBand, let video = sample.videoFormatDescription { data = try Self.prependingParameterSets(of: video, to: data, path: path) }
        let decode = try ticks(timing.decodeTime - firstDecodeTime!, "decode time")
        let presentation = try ticks(timing.presentationTime - firstDecodeTime!, "presentation time")
        var duration = try ticks(timing.duration, "duration")
        if kind != .video && duration == 0 { duration = 1 }  // a rounded duration of a carried sample
        guard decode > previousDecodeTime || sampleCount == 0 else {
            throw error("decode time \(timing.decodeTime) is not after the previous sample's; samples go in in decoding order")
        }
        guard duration > 0, duration <= Int64(UInt32.max) else { throw error("duration \(timing.duration) is not positive, or too long for a movie") }
        var offset = presentation - decode
        if signedOffsets { offset -= initialDelay }
        guard offset >= Int64(Int32.min), offset <= Int64(Int32.max) else { throw error("composition offset \(offset) is out of range") }
        guard signedOffsets || offset >= 0 else {
            throw error("presented before it is decoded (\(sample)); write signed composition offsets instead")
        }
        guard data.count <= Int(UInt32.max) else { throw error("over 4 GiB") }
        let gap = sampleCount > 0 ? decode - nextDecodeTime : 0
        // The previous sample is lengthened or shortened to meet this one; its duration must still fit.
        guard gap <= Int64(UInt32.max) - previousDuration, previousDuration + gap > 0 || sampleCount == 0 else {
            throw error("a gap of \(gap) ticks before it makes the previous sample too long for a movie, or nothing")
        }
        previousDuration = duration
        previousDecodeTime = decode
        nextDecodeTime = decode + duration
        minimumPresentation = min(minimumPresentation, presentation)
        maximumPresentationEnd = max(maximumPresentationEnd, presentation + duration)
        if !sample.attachments.doNotDisplay {
            // (Most samples trim nothing: no conversion for them.)
            let trims = (start: sample.attachments.trimDurationAtStart, end: sample.attachments.trimDurationAtEnd)
            let trimStart = kind == .video || trims.start.value == 0 ? 0 : (try? ticks(trims.start, "trim")) ?? 0
            let trimEnd = kind == .video || trims.end.value == 0 ? 0 : (try? ticks(trims.end, "trim")) ?? 0
            shownMinimum = min(shownMinimum, presentation + max(0, min(trimStart, duration)))
            shownMaximumEnd = max(shownMaximumEnd, presentation + duration - max(0, min(trimEnd, duration)))
        }
        largestSample = max(largestSample, data.count)
        totalBytes += UInt64(data.count)
        sampleCount += 1
        return PlacedSample(data: data, descriptionIndex: description.index, decodeTime: decode, duration: duration, compositionOffset: offset,
                            isSync: sample.isSync, attachments: sample.attachments, gapBefore: gap)
    }

    /// The kind and timescale, from the first sample: video, the first duration's timescale
    /// doubled up to at least 10000 (room for the other samples' times), as FFmpeg picks a fine
    /// one; AAC, its sample rate; a carried sample, its duration's timescale.
    private mutating func start(with sample: SampleBuffer) throws(ContainerError) {
        firstDecodeTime = sample.decodeTime
        mediaType = sample.mediaType
        switch sample.formatDescription {
        case .video:
            kind = .video
            var scale = sample.duration.timescale
            while scale < 10000 && scale <= Int32.max / 2 { scale *= 2 }
            timescale = fixedTimescale ?? scale
        case .audio(let audio):
            kind = .audio
            timescale = fixedTimescale ?? Int32(clamping: audio.sampleRate)
        case .timecode, .opaque:
            kind = .opaque
            timescale = fixedTimescale ?? sample.duration.timescale
        }
        guard timescale > 0 else { throw error("no timescale for its track (rate \(sample.duration.timescale))") }
        initialDelay = try ticks(sample.presentationTime - sample.decodeTime, "composition offset")
    }

    private func ticks(_ time: MediaTime, _ what: String) throws(ContainerError) -> Int64 {
        let converted = time.converted(toTimescale: timescale)
        guard converted.isNumeric, kind != .video || !converted.flags.contains(.hasBeenRounded) else {
            throw error("\(what) \(time) is not a whole number of 1/\(timescale) s (the track's timescale, from its first sample)")
        }
        // Within ±2^62 ticks, sums and differences of two times cannot overflow.
        guard converted.value.magnitude <= 1 << 62 else { throw error("\(what) \(time) is too far from the first sample's decode time") }
        return converted.value
    }

    /// The description a sample uses, and whether its parameter sets must go in band.
    private mutating func descriptionIndex(for description: FormatDescription) throws(ContainerError) -> (index: Int, inBand: Bool) {
        // Most samples have the previous one's description: no search, no copy.
        if let index = previousIndex, previousDescription == description { return (index, false) }
        let found = try findDescription(description)
        previousDescription = description
        previousIndex = found.index
        return found
    }

    private mutating func findDescription(_ description: FormatDescription) throws(ContainerError) -> (index: Int, inBand: Bool) {
        if let first = descriptions.first, first.mediaType != description.mediaType {
            throw error("a \(description.mediaType) sample in a \(first.mediaType) track; a track holds one kind of media")
        }
        if case .video(let video) = description, let first = descriptions.first?.video, video.nalUnitLengthSize != first.nalUnitLengthSize {
            throw error("\(video.nalUnitLengthSize)-byte NAL lengths after \(first.nalUnitLengthSize)-byte ones; a track has one length size")
        }
        if kind == .video && descriptionPolicy == .single {
            if descriptions.isEmpty { descriptions.append(description) }
            let changed = previousDescription.map { $0 != description } ?? false
            return (1, changed)
        }
        if let index = descriptions.firstIndex(of: description) { return (index + 1, false) }
        guard descriptions.count < Self.maximumDescriptions else {
            throw error("over \(Self.maximumDescriptions) format changes; keep the parameter sets in band (avc3)")
        }
        descriptions.append(description)
        return (descriptions.count, false)
    }

    /// The sample with its description's SPS and PPS in front, unless it starts with an SPS
    /// already (a stream that keeps them in band).
    static func prependingParameterSets(of description: VideoFormatDescription, to data: BlockBuffer, path: String) throws(ContainerError) -> BlockBuffer {
        let lengthSize = description.nalUnitLengthSize
        var hasSPS = false
        data.withUnsafeBytes { raw in
            _ = try? AVCC.forEachNALUnit(in: raw.bindMemory(to: UInt8.self).span, lengthSize: lengthSize) { range in
                if raw[range.lowerBound] & 0x1F == 7 { hasSPS = true }
            }
        }
        guard !hasSPS else { return data }
        var prefix: [UInt8] = []
        for nal in description.sequenceParameterSets + description.pictureParameterSets {
            do { try AVCC.append(nalUnit: nal.span, lengthSize: lengthSize, to: &prefix) } catch {
                throw ContainerError(.invalidInput, "a \(nal.count)-byte parameter set does not fit \(lengthSize)-byte NAL lengths", path: path)
            }
        }
        return BlockBuffer(chaining: [BlockBuffer(prefix), data])
    }
}

/// The sample tables of a plain or faststart movie's track, built as samples are written.
struct SampleTables {
    var sizes: [UInt32] = []
    var timeToSample: [SampleRun<UInt32>] = []
    var compositionOffsets: [SampleRun<Int32>] = []
    var syncSamples: [UInt32] = []
    var dependencies: [UInt8] = []
    var chunks: [(offset: UInt64, samples: UInt32, description: UInt32)] = []
    private var chunkBytes = 0
    private var chunkStart: Int64 = 0

    /// A chunk ends at a description change, at 1 MB, after a second of media, or where
    /// another track's samples were written (`continuesChunk` false).
    mutating func append(_ sample: PlacedSample, at offset: UInt64, timescale: Int32, continuesChunk: Bool = true) {
        if sample.gapBefore != 0, let last = timeToSample.indices.last {
            // The previous sample lasts until this one is decoded.
            let value = UInt32(Int64(timeToSample[last].value) + sample.gapBefore)
            if timeToSample[last].count == 1 {
                timeToSample[last].value = value
            } else {
                timeToSample[last].count -= 1
                timeToSample.append(SampleRun(count: 1, value: value))
            }
        }
        let description = UInt32(sample.descriptionIndex)
        if chunks.isEmpty || !continuesChunk || chunks[chunks.count - 1].description != description || chunkBytes >= 1 << 20
            || sample.decodeTime - chunkStart >= Int64(timescale) {
            chunks.append((offset, 0, description))
            chunkBytes = 0
            chunkStart = sample.decodeTime
        }
        chunks[chunks.count - 1].samples += 1
        chunkBytes += sample.data.count
        sizes.append(UInt32(sample.data.count))
        timeToSample.appendSample(UInt32(sample.duration))
        compositionOffsets.appendSample(Int32(sample.compositionOffset))
        if sample.isSync { syncSamples.append(UInt32(sizes.count)) }
        dependencies.append(SampleDependencyTypeBox.entry(sample.attachments))
    }
}
