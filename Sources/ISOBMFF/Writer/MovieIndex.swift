import H264Bitstream
import MediaCore

/// Builds the index boxes of a movie from what was written: ISO/IEC 14496-12 (MP4) and the
/// QuickTime File Format (MOV), with the differences FFmpeg's mov muxer and Apple's tools
/// agree on. Every box goes through its type in the box model.
struct MovieIndex {
    let options: MovieWriter.Options
    let track: VideoTrack
    var isMOV: Bool { options.fileType == .mov }
    var isFragmented: Bool { if case .fragmented = options.layout { true } else { false } }

    static func fileType(_ options: MovieWriter.Options) -> FileTypeBox {
        var extra: [FourCharCode] = options.negativeCompositionOffsets ? ["iso4"] : []
        switch (options.fileType, options.layout) {
        case (.mov, _):
            return FileTypeBox(majorBrand: "qt  ", minorVersion: 0x200, compatibleBrands: ["qt  "])
        case (.mp4, .fragmented):
            extra = ["iso5", "iso6", "mp41"] + extra
            return FileTypeBox(majorBrand: "iso5", minorVersion: 0x200, compatibleBrands: extra)
        case (.mp4, _):
            return FileTypeBox(majorBrand: "isom", minorVersion: 0x200, compatibleBrands: ["isom", "iso2", "avc1", "mp41"] + extra)
        }
    }

    // MARK: The plain movie

    /// The `moov` of a plain or faststart file; `mediaOffset` is added to every chunk offset.
    func movieBox(tables: SampleTables, timecode: TimecodeSamples?, mediaOffset: UInt64, largeOffsets: Bool) -> MovieBox {
        let duration = UInt64(track.presentationDuration)
        let total = duration + startOffset
        var moov = MovieBox()
        moov.append(MovieHeaderBox(timescale: UInt32(track.timescale), duration: total, nextTrackID: timecode == nil ? 2 : 3))
        var trak = TrackBox()
        trak.append(trackHeader(duration: total))
        trak.append(EditBox(children: [AnyBox(editList(duration: duration))]))
        if timecode != nil { trak.append(TrackReferenceBox(children: [AnyBox(TrackReferenceTypeBox(type: "tmcd", trackIDs: [2]))])) }
        trak.append(media(duration: UInt64(track.nextDecodeTime), sampleTable: sampleTable(tables, mediaOffset: mediaOffset, largeOffsets: largeOffsets)))
        moov.append(trak)
        if let timecode, let format = options.timecode?.format {
            moov.append(timecodeTrack(format, timecode, mediaOffset: mediaOffset, largeOffsets: largeOffsets))
        }
        for box in MetadataItem.boxes(options.metadata, fileType: options.fileType) { moov.children.append(box) }
        return moov
    }

    private var displaySize: (width: Double, height: Double) {
        guard let format = track.descriptions.first else { return (0, 0) }
        var width = Double(format.width)
        if let sar = format.sampleAspectRatio, sar.width > 0, sar.height > 0 { width = width * Double(sar.width) / Double(sar.height) }
        return (width, Double(format.height))
    }

    private func trackHeader(duration: UInt64) -> TrackHeaderBox {
        var header = TrackHeaderBox(trackID: 1, duration: duration, flags: TrackHeaderBox.enabled | TrackHeaderBox.inMovie,
                                    width: displaySize.width, height: displaySize.height)
        header.matrix = options.transform
        return header
    }

    /// One edit: the whole presentation, from the first shown sample's composition time (the
    /// reorder delay), so the first frame shows at time 0.
    private func editList(duration: UInt64) -> EditListBox {
        let start = options.negativeCompositionOffsets ? track.presentationStart - track.initialDelay : track.presentationStart
        return EditListBox(entries: emptyEdit + [EditListBox.Entry(segmentDuration: duration, mediaTime: start)])
    }

    /// With ``MovieWriter/Options/keepsStartTime``: the first shown frame's presentation time,
    /// ticks of the movie timescale (the track's), when it is after 0; else 0.
    var startOffset: UInt64 {
        guard options.keepsStartTime, track.sampleCount > 0, let first = track.firstDecodeTime else { return 0 }
        let start = first.converted(toTimescale: track.timescale).value.addingReportingOverflow(track.presentationStart)
        return start.overflow || start.partialValue <= 0 ? 0 : UInt64(start.partialValue)
    }

    /// The empty edit that keeps the start time, if any.
    private var emptyEdit: [EditListBox.Entry] {
        startOffset == 0 ? [] : [EditListBox.Entry(segmentDuration: startOffset, mediaTime: -1)]
    }

    private func media(duration: UInt64, sampleTable: SampleTableBox) -> MediaBox {
        var minf = MediaInformationBox()
        minf.append(VideoMediaHeaderBox())
        if isMOV { minf.append(HandlerBox(componentType: "dhlr", handlerType: "alis", name: "DataHandler", countedName: true)) }
        minf.append(DataInformationBox(children: [AnyBox(DataReferenceBox(selfReference: isMOV ? "alis" : "url "))]))
        minf.append(sampleTable)
        return MediaBox(children: [
            AnyBox(MediaHeaderBox(timescale: UInt32(track.timescale), duration: duration)),
            AnyBox(HandlerBox(componentType: isMOV ? "mhlr" : FourCharCode(rawValue: 0), handlerType: "vide", name: "VideoHandler", countedName: isMOV)),
            AnyBox(minf),
        ])
    }

    private func sampleDescriptions(bitRate: BitRateBox?) -> SampleDescriptionBox {
        SampleDescriptionBox(entries: track.descriptions.map { AnyBox(sampleEntry($0, bitRate: bitRate)) })
    }

    private func sampleEntry(_ format: VideoFormatDescription, bitRate: BitRateBox?) -> VisualSampleEntry {
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

    /// `btrt`: the largest sample, the peak bit rate over any one-second window of decode
    /// times, and the average.
    private func bitRate(_ tables: SampleTables) -> BitRateBox {
        var peak: UInt64 = 0, windowBits: UInt64 = 0, windowStart = 0
        var times: [Int64] = []
        times.reserveCapacity(tables.sizes.count)
        var t: Int64 = 0
        for run in tables.timeToSample { for _ in 0..<run.count { times.append(t); t += Int64(run.value) } }
        for i in tables.sizes.indices {
            windowBits += UInt64(tables.sizes[i]) * 8
            while times[i] - times[windowStart] >= Int64(track.timescale) {
                windowBits -= UInt64(tables.sizes[windowStart]) * 8
                windowStart += 1
            }
            peak = max(peak, windowBits)
        }
        let seconds = Double(max(track.nextDecodeTime, 1)) / Double(track.timescale)
        let average = UInt64(Double(track.totalBytes * 8) / seconds)
        return BitRateBox(bufferSizeDB: UInt32(clamping: track.largestSample), maxBitrate: UInt32(clamping: max(peak, average)), avgBitrate: UInt32(clamping: average))
    }

    private func sampleTable(_ tables: SampleTables, mediaOffset: UInt64, largeOffsets: Bool) -> SampleTableBox {
        var stbl = SampleTableBox()
        stbl.append(sampleDescriptions(bitRate: bitRate(tables)))
        stbl.append(TimeToSampleBox(entries: tables.timeToSample))
        if tables.compositionOffsets.count > 1 || tables.compositionOffsets.first?.value != 0 {
            stbl.append(CompositionOffsetBox(entries: tables.compositionOffsets, signed: options.negativeCompositionOffsets))
            if options.negativeCompositionOffsets {
                // cslg (§8.6.1.4) for signed offsets.
                var least = Int32.max, greatest = Int32.min
                for run in tables.compositionOffsets { least = min(least, run.value); greatest = max(greatest, run.value) }
                var shift = CompositionToDecodeBox(
                    compositionToDTSShift: Int64(max(0, -least)), leastDecodeToDisplayDelta: Int64(least), greatestDecodeToDisplayDelta: Int64(greatest),
                    compositionStartTime: Int64(Int32(clamping: track.minimumPresentation - track.initialDelay)),
                    compositionEndTime: Int64(Int32(clamping: track.maximumPresentationEnd - track.initialDelay)))
                shift.version = 0
                stbl.append(shift)
            }
        }
        if tables.syncSamples.count < tables.sizes.count { stbl.append(SyncSampleBox(sampleNumbers: tables.syncSamples)) }
        stbl.append(SampleDependencyTypeBox(entries: tables.dependencies))
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
        return stbl
    }

    // MARK: Timecode

    /// The timecode track (TN2310; QuickTime File Format "Timecode media"): a `tmcd` or `tc64`
    /// sample entry, one sample per run, all in one chunk after the video's media. MOVs get
    /// the QuickTime base media header (`gmhd` with `tmcd`/`tcmi`), MP4s a null media header,
    /// as FFmpeg writes them.
    private func timecodeTrack(_ format: TimecodeFormatDescription, _ samples: TimecodeSamples, mediaOffset: UInt64, largeOffsets: Bool) -> TrackBox {
        let duration = UInt64(track.presentationDuration)
        let mediaDuration = samples.samples.reduce(0) { $0 + UInt64($1.duration) }
        var trak = TrackBox()
        trak.append(TrackHeaderBox(trackID: 2, duration: duration + startOffset, flags: TrackHeaderBox.inMovie))  // not enabled for display
        trak.append(EditBox(children: [AnyBox(EditListBox(entries: emptyEdit + [EditListBox.Entry(segmentDuration: duration, mediaTime: 0)]))]))
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
        moov.append(MovieHeaderBox(timescale: UInt32(track.timescale), duration: 0, nextTrackID: 2))
        var trak = TrackBox()
        trak.append(trackHeader(duration: 0))
        let start = options.negativeCompositionOffsets ? 0 : track.initialDelay
        var edits = EditListBox(entries: [EditListBox.Entry(segmentDuration: 0, mediaTime: start)])
        edits.version = 0
        trak.append(EditBox(children: [AnyBox(edits)]))
        var stbl = SampleTableBox()
        stbl.append(sampleDescriptions(bitRate: nil))
        stbl.append(TimeToSampleBox(entries: []))
        stbl.append(SampleToChunkBox(entries: []))
        stbl.append(SampleSizeBox(sizes: []))
        stbl.append(ChunkOffsetBox(offsets: []))
        trak.append(media(duration: 0, sampleTable: stbl))
        moov.append(trak)
        moov.append(MovieExtendsBox(children: [AnyBox(MovieExtendsHeaderBox(fragmentDuration: 0)), AnyBox(TrackExtendsBox(trackID: 1))]))
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
