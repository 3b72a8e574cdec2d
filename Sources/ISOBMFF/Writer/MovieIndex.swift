import H264Bitstream
import MediaCore
import MPEG4Audio

/// Builds the index boxes of a movie from what was written: ISO/IEC 14496-12 (MP4) and the
/// QuickTime File Format (MOV), with the differences FFmpeg's mov muxer and Apple's tools
/// agree on. Every box goes through its type in the box model.
struct MovieIndex {
    let options: MovieWriter.Options
    let tracks: [WrittenTrack]
    /// Where the movie starts on the sources' common timeline.
    let origin: MediaTime
    var isMOV: Bool { options.fileType == .mov }
    var isFragmented: Bool { if case .fragmented = options.layout { true } else { false } }

    init(options: MovieWriter.Options, tracks: [WrittenTrack]) {
        self.options = options
        if case .fragmented = options.layout {
            // The header names the tracks with samples in the first fragment, under their IDs.
            self.tracks = tracks.filter { $0.timeline.sampleCount > 0 }
        } else {
            // A declared track that got no sample is left out; the others are numbered from 1.
            var written = tracks.filter { $0.timeline.sampleCount > 0 }
            for index in written.indices { written[index].fileTrackID = UInt32(index + 1) }
            self.tracks = written
        }
        origin = options.startTime ?? tracks.movieStart(keepingStartTime: options.keepsStartTime)
    }

    static func fileType(_ options: MovieWriter.Options, hasVideo: Bool = true) -> FileTypeBox {
        var extra: [FourCharCode] = options.negativeCompositionOffsets ? ["iso4"] : []
        switch (options.fileType, options.layout) {
        case (.mov, _):
            return FileTypeBox(majorBrand: "qt  ", minorVersion: 0x200, compatibleBrands: ["qt  "])
        case (.mp4, .fragmented):
            extra = ["iso5", "iso6", "mp41"] + extra
            return FileTypeBox(majorBrand: "iso5", minorVersion: 0x200, compatibleBrands: extra)
        case (.mp4, _):
            return FileTypeBox(majorBrand: "isom", minorVersion: 0x200, compatibleBrands: ["isom", "iso2"] + (hasVideo ? ["avc1"] : []) + ["mp41"] + extra)
        }
    }

    /// The first video track (the one the others' times are measured against, and the one a
    /// timecode track belongs to), else the first track.
    var primary: WrittenTrack? { tracks.first { $0.timeline.kind == .video } ?? tracks.first }

    /// The movie timescale: the first video track's (no rounding of its edit), else 1000.
    var movieTimescale: Int32 {
        if let video = tracks.first(where: { $0.timeline.kind == .video }) { return video.timeline.timescale }
        return 1000
    }

    /// A time in the movie timescale, rounded.
    func movieTicks(_ time: MediaTime) -> UInt64 {
        let value = time.converted(toTimescale: movieTimescale).value
        return value > 0 ? UInt64(value) : 0
    }

    /// The track's empty edit: how far after the movie's start its presentation starts.
    func startOffset(_ track: WrittenTrack) -> UInt64 {
        guard let start = track.timeline.presentationStartTime else { return 0 }
        return movieTicks(start - origin)
    }

    /// The track's presentation length in the movie timescale.
    func presentationLength(_ track: WrittenTrack) -> UInt64 {
        movieTicks(MediaTime(value: track.timeline.presentationDuration, timescale: track.timeline.timescale))
    }

    // MARK: The plain movie

    /// The `moov` of a plain or faststart file; `mediaOffset` is added to every chunk offset.
    func movieBox(timecode: TimecodeSamples?, mediaOffset: UInt64, largeOffsets: Bool) -> MovieBox {
        let total = tracks.map { startOffset($0) + presentationLength($0) }.max() ?? 0
        var moov = MovieBox()
        let timecodeID = UInt32(tracks.count + 1)
        moov.append(MovieHeaderBox(timescale: UInt32(movieTimescale), duration: total, nextTrackID: timecode == nil ? timecodeID : timecodeID + 1))
        for track in tracks {
            let refersToTimecode = timecode != nil && track.fileTrackID == primary?.fileTrackID && track.timeline.kind == .video
            moov.append(trackBox(track, timecodeID: refersToTimecode ? timecodeID : nil, sampleTable: sampleTable(track, mediaOffset: mediaOffset, largeOffsets: largeOffsets)))
        }
        if let timecode, let format = options.timecode?.format, let primary {
            moov.append(timecodeTrack(format, timecode, id: timecodeID, video: primary, mediaOffset: mediaOffset, largeOffsets: largeOffsets))
        }
        for box in MetadataItem.boxes(options.metadata, fileType: options.fileType) { moov.children.append(box) }
        return moov
    }

    private func displaySize(_ track: WrittenTrack) -> (width: Double, height: Double) {
        guard let format = track.timeline.firstVideoFormat else { return (0, 0) }
        var width = Double(format.width)
        if let sar = format.sampleAspectRatio, sar.width > 0, sar.height > 0 { width = width * Double(sar.width) / Double(sar.height) }
        return (width, Double(format.height))
    }

    private func trackHeader(_ track: WrittenTrack, duration: UInt64) -> TrackHeaderBox {
        // The first track of each kind of media is enabled; later ones are alternatives.
        let firstOfItsKind = tracks.first { $0.mediaType == track.mediaType }?.fileTrackID == track.fileTrackID
        let size = displaySize(track)
        var header = TrackHeaderBox(trackID: track.fileTrackID, duration: duration, flags: (firstOfItsKind ? TrackHeaderBox.enabled : 0) | TrackHeaderBox.inMovie,
                                    width: size.width, height: size.height)
        switch track.timeline.kind {
        case .video:
            header.matrix = options.transform
        case .audio:
            header.volume = 0x0100
            if tracks.filter({ $0.mediaType == .audio }).count > 1 { header.alternateGroup = 1 }
        default:
            if track.mediaType == .audio { header.volume = 0x0100 }
        }
        return header
    }

    /// The track's edit list: an empty edit for a later start, then the whole presentation
    /// from its first shown sample's composition time (the reorder delay, an encoder's priming).
    private func editList(_ track: WrittenTrack, duration: UInt64) -> EditListBox {
        let timeline = track.timeline
        let start = options.negativeCompositionOffsets && timeline.kind == .video ? timeline.presentationStart - timeline.initialDelay : timeline.presentationStart
        let empty = startOffset(track)
        return EditListBox(entries: (empty > 0 ? [EditListBox.Entry(segmentDuration: empty, mediaTime: -1)] : [])
                           + [EditListBox.Entry(segmentDuration: duration, mediaTime: start)])
    }

    private func trackBox(_ track: WrittenTrack, timecodeID: UInt32?, sampleTable: SampleTableBox) -> TrackBox {
        let duration = presentationLength(track)
        var trak = TrackBox()
        trak.append(trackHeader(track, duration: duration + startOffset(track)))
        trak.append(EditBox(children: [AnyBox(editList(track, duration: duration))]))
        if let timecodeID { trak.append(TrackReferenceBox(children: [AnyBox(TrackReferenceTypeBox(type: "tmcd", trackIDs: [timecodeID]))])) }
        trak.append(media(track, duration: UInt64(track.timeline.nextDecodeTime), sampleTable: sampleTable))
        return trak
    }

    private func media(_ track: WrittenTrack, duration: UInt64, sampleTable: SampleTableBox) -> MediaBox {
        let mediaType = track.mediaType ?? .video
        var minf = MediaInformationBox()
        switch mediaType {
        case .video: minf.append(VideoMediaHeaderBox())
        case .audio: minf.append(SoundMediaHeaderBox())
        default: minf.append(NullMediaHeaderBox())
        }
        if isMOV { minf.append(HandlerBox(componentType: "dhlr", handlerType: "alis", name: "DataHandler", countedName: true)) }
        minf.append(DataInformationBox(children: [AnyBox(DataReferenceBox(selfReference: isMOV ? "alis" : "url "))]))
        minf.append(sampleTable)
        let (handler, name): (FourCharCode, String) = switch mediaType {
        case .video: ("vide", "VideoHandler")
        case .audio: ("soun", "SoundHandler")
        case .subtitle: ("sbtl", "SubtitleHandler")
        case .text: ("text", "TextHandler")
        default: (mediaType.rawValue, "DataHandler")
        }
        return MediaBox(children: [
            AnyBox(MediaHeaderBox(timescale: UInt32(track.timeline.timescale), duration: duration, language: MediaHeaderBox.packedLanguage(track.language))),
            AnyBox(HandlerBox(componentType: isMOV ? "mhlr" : FourCharCode(rawValue: 0), handlerType: handler, name: name, countedName: isMOV)),
            AnyBox(minf),
        ])
    }

    // MARK: Sample entries

    private func sampleDescriptions(_ track: WrittenTrack, bitRate: BitRateBox?) -> SampleDescriptionBox {
        SampleDescriptionBox(entries: track.timeline.descriptions.map { sampleEntry($0, track: track, bitRate: bitRate) })
    }

    private func sampleEntry(_ format: FormatDescription, track: WrittenTrack, bitRate: BitRateBox?) -> AnyBox {
        switch format {
        case .video(let video): return AnyBox(videoSampleEntry(video, bitRate: bitRate))
        case .audio(let audio): return AnyBox(audioSampleEntry(audio, track: track, bitRate: bitRate))
        case .timecode(let timecode): return AnyBox(TimecodeSampleEntry(timecode))
        case .opaque(let opaque):
            // As it came: the entry's bytes whole, parsed as nothing but a box.
            if let entry = opaque.sampleEntry, let box = try? AnyBox.parse(entry, table: BoxTable([:])) { return box }
            return AnyBox(UnknownBox(type: opaque.codec, payload: [0, 0, 0, 0, 0, 0, 0, 1]))
        }
    }

    private func videoSampleEntry(_ format: VideoFormatDescription, bitRate: BitRateBox?) -> VisualSampleEntry {
        var children = [AnyBox(AVCConfigurationBox(record: format.avcC))]
        if let sar = format.sampleAspectRatio, sar.width > 0, sar.height > 0 {
            children.append(AnyBox(PixelAspectRatioBox(horizontalSpacing: UInt32(sar.width), verticalSpacing: UInt32(sar.height))))
        }
        if let colour = format.colour {
            children.append(AnyBox(ColourInformationBox(ColourDescription(primaries: colour.primaries, transfer: colour.transfer, matrix: colour.matrix,
                                                                          fullRange: colour.fullRange), quickTime: isMOV)))
        }
        if let bitRate { children.append(AnyBox(bitRate)) }
        return VisualSampleEntry(type: options.parameterSets == .inBand ? "avc3" : "avc1", width: format.width, height: format.height, children: children)
    }

    /// An AAC entry: in an MP4 an ISO AudioSampleEntry with `esds` and `btrt`; in a MOV a
    /// QuickTime sound description of version 1 (1024 samples a packet, packets of any size)
    /// with the `esds` in a `wave` box and a `chan` box for mono and stereo, as FFmpeg writes.
    private func audioSampleEntry(_ format: AudioFormatDescription, track: WrittenTrack, bitRate: BitRateBox?) -> AudioSampleEntry {
        // G.711 (`ulaw`, `alaw`): a plain entry (in a MOV a sound description of version 0,
        // 16-bit, uncompressed ID, as FFmpeg writes it), its samples a byte each.
        guard format.codec == "mp4a" else { return AudioSampleEntry(type: format.codec, channelCount: format.channelCount, sampleRate: format.sampleRate, children: []) }
        let config = ElementaryStreamDescriptor.DecoderConfigDescriptor(
            objectTypeIndication: ElementaryStreamDescriptor.mpeg4Audio, bufferSize: bitRate?.bufferSizeDB ?? 0,
            maxBitrate: bitRate?.maxBitrate ?? 0, averageBitrate: bitRate?.avgBitrate ?? 0, decoderSpecificInfo: format.magicCookie)
        let esds = ElementaryStreamDescriptorBox(ElementaryStreamDescriptor(decoderConfig: config, esID: UInt16(clamping: track.fileTrackID)))
        guard isMOV else {
            var children = [AnyBox(esds)]
            if let bitRate { children.append(AnyBox(bitRate)) }
            return AudioSampleEntry(type: format.codec, channelCount: format.channelCount, sampleRate: format.sampleRate, children: children)
        }
        var wave = SoundInformationBox(children: [AnyBox(FormatBox(dataFormat: format.codec)), AnyBox(UnknownBox(type: format.codec, payload: [0, 0, 0, 0])),
                                                  AnyBox(esds)])
        wave.children.append(AnyBox(UnknownBox(type: FourCharCode(rawValue: 0), payload: [])))
        var children = [AnyBox(wave)]
        // `chan`: kAudioChannelLayoutTag_Mono (100 << 16 | 1) or _Stereo (101 << 16 | 2).
        if format.channelCount <= 2 {
            let tag: UInt32 = format.channelCount == 1 ? 0x0064_0001 : 0x0065_0002
            var payload: [UInt8] = [0, 0, 0, 0]
            for value in [tag, 0, 0] { payload += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
            children.append(AnyBox(UnknownBox(type: "chan", payload: payload)))
        }
        var entry = AudioSampleEntry(type: format.codec, channelCount: format.channelCount, sampleRate: format.sampleRate, children: children)
        entry.version = 1
        entry.compressionID = -2
        entry.version1 = .init(samplesPerPacket: UInt32(format.framesPerPacket), bytesPerPacket: 0, bytesPerFrame: 0, bytesPerSample: 2)
        return entry
    }

    /// `btrt`: the largest sample, the peak bit rate over any one-second window of decode
    /// times, and the average.
    private func bitRate(_ track: WrittenTrack) -> BitRateBox {
        let tables = track.tables
        let timescale = track.timeline.timescale
        var peak: UInt64 = 0, windowBits: UInt64 = 0, windowStart = 0
        var times: [Int64] = []
        times.reserveCapacity(tables.sizes.count)
        var t: Int64 = 0
        for run in tables.timeToSample { for _ in 0..<run.count { times.append(t); t += Int64(run.value) } }
        for i in tables.sizes.indices where i < times.count {
            windowBits += UInt64(tables.sizes[i]) * 8
            while times[i] - times[windowStart] >= Int64(timescale) {
                windowBits -= UInt64(tables.sizes[windowStart]) * 8
                windowStart += 1
            }
            peak = max(peak, windowBits)
        }
        let seconds = Double(max(track.timeline.nextDecodeTime, 1)) / Double(timescale)
        let average = UInt64(Double(track.timeline.totalBytes * 8) / seconds)
        return BitRateBox(bufferSizeDB: UInt32(clamping: track.timeline.largestSample), maxBitrate: UInt32(clamping: max(peak, average)), avgBitrate: UInt32(clamping: average))
    }

    private func sampleTable(_ track: WrittenTrack, mediaOffset: UInt64, largeOffsets: Bool) -> SampleTableBox {
        let tables = track.tables
        var stbl = SampleTableBox()
        stbl.append(sampleDescriptions(track, bitRate: bitRate(track)))
        stbl.append(TimeToSampleBox(entries: tables.timeToSample))
        if tables.compositionOffsets.count > 1 || tables.compositionOffsets.first?.value != 0 {
            stbl.append(CompositionOffsetBox(entries: tables.compositionOffsets, signed: options.negativeCompositionOffsets))
            if options.negativeCompositionOffsets {
                // cslg (§8.6.1.4) for signed offsets.
                var least = Int32.max, greatest = Int32.min
                for run in tables.compositionOffsets { least = min(least, run.value); greatest = max(greatest, run.value) }
                let timeline = track.timeline
                var shift = CompositionToDecodeBox(
                    compositionToDTSShift: Int64(max(0, -least)), leastDecodeToDisplayDelta: Int64(least), greatestDecodeToDisplayDelta: Int64(greatest),
                    compositionStartTime: Int64(Int32(clamping: timeline.minimumPresentation - timeline.initialDelay)),
                    compositionEndTime: Int64(Int32(clamping: timeline.maximumPresentationEnd - timeline.initialDelay)))
                shift.version = 0
                stbl.append(shift)
            }
        }
        if tables.syncSamples.count < tables.sizes.count { stbl.append(SyncSampleBox(sampleNumbers: tables.syncSamples)) }
        if track.timeline.kind == .video { stbl.append(SampleDependencyTypeBox(entries: tables.dependencies)) }
        var runs: [SampleToChunkBox.Entry] = []
        for (index, chunk) in tables.chunks.enumerated()
        where runs.last.map({ $0.samplesPerChunk != chunk.samples || $0.sampleDescriptionIndex != chunk.description }) ?? true {
            runs.append(SampleToChunkBox.Entry(firstChunk: UInt32(index + 1), samplesPerChunk: chunk.samples, sampleDescriptionIndex: chunk.description))
        }
        stbl.append(SampleToChunkBox(entries: runs))
        stbl.append(SampleSizeBox(sizes: tables.sizes))
        if largeOffsets {
            stbl.append(ChunkLargeOffsetBox(offsets: tables.chunks.map { $0.offset + mediaOffset }))
        } else {
            stbl.append(ChunkOffsetBox(offsets: tables.chunks.map { UInt32(truncatingIfNeeded: $0.offset + mediaOffset) }))
        }
        appendRollGroup(track, count: tables.sizes.count, to: &stbl)
        return stbl
    }

    /// AAC's pre-roll: every sample needs the one before it decoded (`roll` distance -1), as
    /// FFmpeg and Apple write it.
    private func appendRollGroup(_ track: WrittenTrack, count: Int, to stbl: inout SampleTableBox) {
        guard track.timeline.kind == .audio, track.timeline.descriptions.contains(where: { $0.audio?.isAAC == true }), count > 0 else { return }
        stbl.append(SampleGroupDescriptionBox(rollDistances: [-1]))
        stbl.append(SampleToGroupBox(groupingType: "roll", entries: [.init(sampleCount: UInt32(clamping: count), groupDescriptionIndex: 1)]))
    }

    // MARK: Timecode

    /// The timecode track (TN2310; QuickTime File Format "Timecode media"): a `tmcd` or `tc64`
    /// sample entry, one sample per run, all in one chunk after the media. MOVs get the
    /// QuickTime base media header (`gmhd` with `tmcd`/`tcmi`), MP4s a null media header, as
    /// FFmpeg writes them. It spans the video's presentation, from the video's start.
    private func timecodeTrack(_ format: TimecodeFormatDescription, _ samples: TimecodeSamples, id: UInt32, video: WrittenTrack,
                               mediaOffset: UInt64, largeOffsets: Bool) -> TrackBox {
        let duration = presentationLength(video)
        let empty = startOffset(video)
        let mediaDuration = samples.samples.reduce(0) { $0 + UInt64($1.duration) }
        var trak = TrackBox()
        trak.append(TrackHeaderBox(trackID: id, duration: duration + empty, flags: TrackHeaderBox.inMovie))  // not enabled for display
        trak.append(EditBox(children: [AnyBox(EditListBox(entries: (empty > 0 ? [EditListBox.Entry(segmentDuration: empty, mediaTime: -1)] : [])
                                                              + [EditListBox.Entry(segmentDuration: duration, mediaTime: 0)]))]))
        var minf = MediaInformationBox()
        if isMOV {
            minf.append(BaseMediaInformationHeaderBox(children: [
                AnyBox(BaseMediaInfoBox()), AnyBox(TimecodeMediaInformationBox(children: [AnyBox(TimecodeMediaInfoBox())])),
            ]))
            minf.append(HandlerBox(componentType: "dhlr", handlerType: "alis", name: "DataHandler", countedName: true))
        } else {
            minf.append(NullMediaHeaderBox())
        }
        minf.append(DataInformationBox(children: [AnyBox(DataReferenceBox(selfReference: isMOV ? "alis" : "url "))]))
        var stbl = SampleTableBox()
        stbl.append(SampleDescriptionBox(entries: [AnyBox(TimecodeSampleEntry(format))]))
        var runs: [SampleRun<UInt32>] = []
        for sample in samples.samples { runs.appendSample(UInt32(clamping: sample.duration)) }
        stbl.append(TimeToSampleBox(entries: runs))
        let count = UInt32(samples.samples.count)
        stbl.append(SampleToChunkBox(entries: [SampleToChunkBox.Entry(firstChunk: 1, samplesPerChunk: count, sampleDescriptionIndex: 1)]))
        stbl.append(SampleSizeBox(constantSize: UInt32(format.sampleFormat.sampleSize), count: count))
        if largeOffsets {
            stbl.append(ChunkLargeOffsetBox(offsets: [samples.offset + mediaOffset]))
        } else {
            stbl.append(ChunkOffsetBox(offsets: [UInt32(truncatingIfNeeded: samples.offset + mediaOffset)]))
        }
        minf.append(stbl)
        // Language 0: English, what FFmpeg and Apple write for a timecode track.
        trak.append(MediaBox(children: [
            AnyBox(MediaHeaderBox(timescale: UInt32(format.frameDuration.timescale), duration: mediaDuration, language: 0)),
            AnyBox(HandlerBox(componentType: isMOV ? "mhlr" : FourCharCode(rawValue: 0), handlerType: "tmcd", name: "TimeCodeHandler", countedName: isMOV)),
            AnyBox(minf),
        ]))
        return trak
    }

    // MARK: Fragments

    /// The `moov` of a fragmented file: sample entries and defaults, no samples. The `mehd`
    /// duration is filled in at the end when the output can seek: the returned offset is
    /// where its value sits in the box's bytes.
    func fragmentedMovieBox() -> (box: MovieBox, mehdValueOffset: Int) {
        var moov = MovieBox()
        moov.append(MovieHeaderBox(timescale: UInt32(movieTimescale), duration: 0, nextTrackID: (tracks.map(\.fileTrackID).max() ?? 0) + 1))
        for track in tracks {
            var trak = TrackBox()
            trak.append(trackHeader(track, duration: 0))
            let timeline = track.timeline
            let start: Int64 = switch timeline.kind {
            case .video: options.negativeCompositionOffsets ? 0 : timeline.initialDelay
            default: timeline.presentationStart
            }
            let empty = startOffset(track)
            var edits = EditListBox(entries: (empty > 0 ? [EditListBox.Entry(segmentDuration: empty, mediaTime: -1)] : [])
                                    + [EditListBox.Entry(segmentDuration: 0, mediaTime: start)])
            edits.version = 0
            trak.append(EditBox(children: [AnyBox(edits)]))
            var stbl = SampleTableBox()
            stbl.append(sampleDescriptions(track, bitRate: nil))
            stbl.append(TimeToSampleBox(entries: []))
            stbl.append(SampleToChunkBox(entries: []))
            stbl.append(SampleSizeBox(sizes: []))
            stbl.append(ChunkOffsetBox(offsets: []))
            trak.append(media(track, duration: 0, sampleTable: stbl))
            moov.append(trak)
        }
        moov.append(MovieExtendsBox(children: [AnyBox(MovieExtendsHeaderBox(fragmentDuration: 0))] + tracks.map { AnyBox(TrackExtendsBox(trackID: $0.fileTrackID)) }))
        for box in MetadataItem.boxes(options.metadata, fileType: options.fileType) { moov.children.append(box) }
        // The mehd value: after everything before mvex, mvex's header, and mehd's header,
        // version and flags.
        var before = BoxWriter()
        for child in moov.children.prefix(while: { $0.type != "mvex" }) { child.write(to: &before) }
        return (moov, 8 + before.count + 8 + 12)
    }
}

/// The timecode track's samples: one per run, with durations in the format's timescale, and
/// where their bytes were written.
struct TimecodeSamples {
    var samples: [(data: [UInt8], duration: Int64)]
    var offset: UInt64
}
