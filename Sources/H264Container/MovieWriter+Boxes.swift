import H264Bitstream
import MediaCore

// The boxes of the index: ISO/IEC 14496-12 (MP4) and the QuickTime File Format (MOV), with
// the differences FFmpeg's mov muxer and Apple's tools agree on.
extension MovieWriter {
    static func fileTypeBox(_ options: Options, fragmented: Bool) -> [UInt8] {
        var w = BoxWriter()
        w.box("ftyp") { w in
            switch options.fileType {
            case .mov:
                w.fourCC("qt  "); w.u32(0x200); w.fourCC("qt  ")
            case .mp4 where fragmented:
                w.fourCC("iso5"); w.u32(0x200)
                for brand: FourCharCode in ["iso5", "iso6", "mp41"] { w.fourCC(brand) }
                if options.negativeCompositionOffsets { w.fourCC("iso4") }
            case .mp4:
                w.fourCC("isom"); w.u32(0x200)
                for brand: FourCharCode in ["isom", "iso2", "avc1", "mp41"] { w.fourCC(brand) }
                if options.negativeCompositionOffsets { w.fourCC("iso4") }
            }
        }
        return w.bytes
    }

    private var trackDuration: Int64 { sampleCount == 0 ? 0 : maximumPresentationEnd - minimumPresentation }
    private var mediaDuration: Int64 { nextDecodeTime }

    /// The `moov` of a plain or faststart file. `mediaOffset` is added to every chunk offset.
    func movieBox(mediaOffset: UInt64, largeOffsets: Bool) -> [UInt8] {
        var w = BoxWriter()
        w.box("moov") { w in
            movieHeader(&w, duration: trackDuration)
            w.box("trak") { w in
                trackHeader(&w, duration: trackDuration)
                w.box("edts") { w in
                    editList(&w, duration: trackDuration)
                }
                if options.timecode != nil {
                    w.box("tref") { w in w.box("tmcd") { w in w.u32(2) } }
                }
                media(&w, duration: mediaDuration) { w in
                    sampleTable(&w, mediaOffset: mediaOffset, largeOffsets: largeOffsets)
                }
            }
            if let timecode = options.timecode {
                timecodeTrack(&w, timecode.format, mediaOffset: mediaOffset, largeOffsets: largeOffsets)
            }
            MetadataItem.write(options.metadata, fileType: options.fileType, into: &w)
        }
        return w.bytes
    }

    /// The timecode track (TN2310; QuickTime File Format "Timecode media"): a `tmcd` or `tc64`
    /// sample entry, one sample per run, all in one chunk after the video's media. MOVs get
    /// the QuickTime base media header (`gmhd` with `tmcd`/`tcmi`), MP4s a null media header,
    /// as FFmpeg writes them.
    private func timecodeTrack(_ w: inout BoxWriter, _ format: TimecodeFormatDescription, mediaOffset: UInt64, largeOffsets: Bool) {
        let mov = options.fileType == .mov
        let mediaDuration = timecodeSamples.reduce(0) { $0 + $1.duration }
        w.box("trak") { w in
            let long = trackDuration > Int64(UInt32.max)
            w.fullBox("tkhd", version: long ? 1 : 0, flags: 2) { w in  // in the movie, not enabled for display
                if long { w.u64(0); w.u64(0); w.u32(2); w.u32(0); w.u64(UInt64(trackDuration)) }
                else { w.u32(0); w.u32(0); w.u32(2); w.u32(0); w.u32(UInt32(trackDuration)) }
                w.zeros(8); w.u16(0); w.u16(0); w.u16(0); w.u16(0)
                w.unityMatrix()
                w.u32(0); w.u32(0)
            }
            w.box("edts") { w in
                w.fullBox("elst", version: long ? 1 : 0) { w in
                    w.u32(1)
                    if long { w.u64(UInt64(trackDuration)); w.u64(0) } else { w.u32(UInt32(trackDuration)); w.u32(0) }
                    w.u16(1); w.u16(0)
                }
            }
            w.box("mdia") { w in
                let longMedia = mediaDuration > Int64(UInt32.max)
                w.fullBox("mdhd", version: longMedia ? 1 : 0) { w in
                    let scale = UInt32(format.frameDuration.timescale)
                    if longMedia { w.u64(0); w.u64(0); w.u32(scale); w.u64(UInt64(mediaDuration)) }
                    else { w.u32(0); w.u32(0); w.u32(scale); w.u32(UInt32(mediaDuration)) }
                    w.u16(0)  // language: 0, English (what FFmpeg and Apple write)
                    w.u16(0)
                }
                handler(&w, component: "mhlr", type: "tmcd", name: "TimeCodeHandler")
                w.box("minf") { w in
                    if mov {
                        w.box("gmhd") { w in
                            w.fullBox("gmin") { w in
                                w.u16(0x40)  // graphics mode: dither copy
                                w.u16(0x8000); w.u16(0x8000); w.u16(0x8000)  // opcolor
                                w.u16(0); w.u16(0)  // balance, reserved
                            }
                            w.box("tmcd") { w in
                                w.fullBox("tcmi") { w in
                                    w.u16(0); w.u16(0)  // text font, face
                                    w.u16(12)  // text size
                                    w.u16(0)
                                    w.zeros(6)  // text colour: black
                                    w.u16(0xFFFF); w.u16(0xFFFF); w.u16(0xFFFF)  // background: white
                                    let font = Array("Lucida Grande".utf8)
                                    w.u8(UInt8(font.count)); w.append(font)
                                }
                            }
                        }
                        handler(&w, component: "dhlr", type: "alis", name: "DataHandler")
                    } else {
                        w.fullBox("nmhd") { _ in }
                    }
                    w.box("dinf") { w in
                        w.fullBox("dref") { w in
                            w.u32(1)
                            w.fullBox(mov ? "alis" : "url ", flags: 1) { _ in }
                        }
                    }
                    w.box("stbl") { w in
                        w.fullBox("stsd") { w in
                            w.u32(1)
                            timecodeSampleEntry(&w, format)
                        }
                        w.fullBox("stts") { w in
                            var runs: [(count: UInt32, delta: UInt32)] = []
                            for sample in timecodeSamples { Self.appendRun(&runs, UInt32(clamping: sample.duration)) }
                            w.u32(UInt32(runs.count))
                            for run in runs { w.u32(run.count); w.u32(run.delta) }
                        }
                        w.fullBox("stsc") { w in w.u32(1); w.u32(1); w.u32(UInt32(timecodeSamples.count)); w.u32(1) }
                        w.fullBox("stsz") { w in w.u32(UInt32(format.sampleFormat.sampleSize)); w.u32(UInt32(timecodeSamples.count)) }
                        if largeOffsets {
                            w.fullBox("co64") { w in w.u32(1); w.u64(timecodeOffset + mediaOffset) }
                        } else {
                            w.fullBox("stco") { w in w.u32(1); w.u32(UInt32(timecodeOffset + mediaOffset)) }
                        }
                    }
                }
            }
        }
    }

    /// The `tmcd`/`tc64` sample entry: flags, timescale, frame duration, frame quanta, and the
    /// source reference in a `name` box (counted string, language code).
    private func timecodeSampleEntry(_ w: inout BoxWriter, _ format: TimecodeFormatDescription) {
        w.box(format.sampleFormat.fourCC) { w in
            w.zeros(6)
            w.u16(1)  // data_reference_index
            w.u32(0)
            w.u32(format.flags.rawValue)
            w.u32(UInt32(format.frameDuration.timescale))
            w.u32(UInt32(clamping: format.frameDuration.value))
            w.u8(UInt8(format.frameQuanta))
            w.u8(0)
            if let source = format.sourceReference {
                let name = Array(source.name.utf8.prefix(Int(UInt16.max)))
                w.box("name") { w in w.u16(UInt16(name.count)); w.u16(source.languageCode); w.append(name) }
            }
        }
    }

    private func movieHeader(_ w: inout BoxWriter, duration: Int64) {
        let long = duration > Int64(UInt32.max)
        w.fullBox("mvhd", version: long ? 1 : 0) { w in
            if long { w.u64(0); w.u64(0); w.u32(UInt32(timescale)); w.u64(UInt64(duration)) }
            else { w.u32(0); w.u32(0); w.u32(UInt32(timescale)); w.u32(UInt32(duration)) }
            w.u32(0x0001_0000)  // rate 1.0
            w.u16(0x0100)  // volume 1.0
            w.zeros(10)
            w.unityMatrix()
            w.zeros(24)  // pre_defined (QuickTime: preview, poster, selection, current time)
            w.u32(options.timecode == nil ? 2 : 3)  // next_track_ID
        }
    }

    private var displaySize: (width: Double, height: Double) {
        let format = descriptions.first!
        var width = Double(format.width)
        if let sar = format.sampleAspectRatio, sar.width > 0, sar.height > 0 { width = width * Double(sar.width) / Double(sar.height) }
        return (width, Double(format.height))
    }

    private func trackHeader(_ w: inout BoxWriter, duration: Int64) {
        let long = duration > Int64(UInt32.max)
        w.fullBox("tkhd", version: long ? 1 : 0, flags: 3) { w in
            if long { w.u64(0); w.u64(0); w.u32(1); w.u32(0); w.u64(UInt64(duration)) }
            else { w.u32(0); w.u32(0); w.u32(1); w.u32(0); w.u32(UInt32(duration)) }
            w.zeros(8)
            w.u16(0)  // layer
            w.u16(0)  // alternate_group
            w.u16(0)  // volume: 0 for video
            w.u16(0)
            w.unityMatrix()
            w.fixed16(displaySize.width)
            w.fixed16(displaySize.height)
        }
    }

    /// One edit: the whole presentation, starting at the first shown sample's composition
    /// time (the reorder delay), so the first frame shows at time 0.
    private func editList(_ w: inout BoxWriter, duration: Int64) {
        let start = options.negativeCompositionOffsets ? minimumPresentation - initialDelay : minimumPresentation
        let long = duration > Int64(UInt32.max) || start > Int64(Int32.max)
        w.fullBox("elst", version: long ? 1 : 0) { w in
            w.u32(1)
            if long { w.u64(UInt64(duration)); w.u64(UInt64(start)) } else { w.u32(UInt32(duration)); w.u32(UInt32(start)) }
            w.u16(1); w.u16(0)  // media_rate 1.0
        }
    }

    private func media(_ w: inout BoxWriter, duration: Int64, sampleTable: (inout BoxWriter) -> Void) {
        w.box("mdia") { w in
            let long = duration > Int64(UInt32.max)
            w.fullBox("mdhd", version: long ? 1 : 0) { w in
                if long { w.u64(0); w.u64(0); w.u32(UInt32(timescale)); w.u64(UInt64(duration)) }
                else { w.u32(0); w.u32(0); w.u32(UInt32(timescale)); w.u32(UInt32(duration)) }
                w.u16(0x55C4)  // "und"
                w.u16(0)
            }
            handler(&w, component: "mhlr", type: "vide", name: "VideoHandler")
            w.box("minf") { w in
                w.fullBox("vmhd", flags: 1) { w in w.zeros(8) }
                if options.fileType == .mov { handler(&w, component: "dhlr", type: "alis", name: "DataHandler") }
                w.box("dinf") { w in
                    w.fullBox("dref") { w in
                        w.u32(1)
                        w.fullBox(options.fileType == .mov ? "alis" : "url ", flags: 1) { _ in }
                    }
                }
                w.box("stbl") { w in sampleTable(&w) }
            }
        }
    }

    /// `hdlr`: QuickTime names the component type and writes a counted name; MP4 a C string.
    private func handler(_ w: inout BoxWriter, component: FourCharCode, type: FourCharCode, name: String) {
        w.fullBox("hdlr") { w in
            w.u32(options.fileType == .mov ? component.rawValue : 0)
            w.fourCC(type)
            w.zeros(12)
            let bytes = Array(name.utf8)
            if options.fileType == .mov { w.u8(UInt8(bytes.count)); w.append(bytes) } else { w.append(bytes); w.u8(0) }
        }
    }

    func sampleDescriptions(_ w: inout BoxWriter) {
        w.fullBox("stsd") { w in
            w.u32(UInt32(descriptions.count))
            for description in descriptions { sampleEntry(&w, description) }
        }
    }

    private func sampleEntry(_ w: inout BoxWriter, _ format: VideoFormatDescription) {
        w.box(options.inBandParameterSets ? "avc3" : "avc1") { w in
            w.zeros(6)
            w.u16(1)  // data_reference_index
            w.u16(0); w.u16(0)  // pre_defined, reserved (QuickTime: version, revision)
            w.zeros(12)  // pre_defined (QuickTime: vendor, temporal and spatial quality)
            w.u16(UInt16(clamping: format.width))
            w.u16(UInt16(clamping: format.height))
            w.u32(0x0048_0000); w.u32(0x0048_0000)  // 72 dpi
            w.u32(0)
            w.u16(1)  // frame_count
            w.zeros(32)  // compressorname
            w.u16(0x0018)  // depth
            w.i16(-1)
            w.box("avcC") { w in w.append(format.avcC) }
            if let sar = format.sampleAspectRatio, sar.width > 0, sar.height > 0 {
                w.box("pasp") { w in w.u32(UInt32(sar.width)); w.u32(UInt32(sar.height)) }
            }
            if let colour = format.colour {
                w.box("colr") { w in
                    w.fourCC(options.fileType == .mov ? "nclc" : "nclx")
                    w.u16(UInt16(colour.primaries)); w.u16(UInt16(colour.transfer)); w.u16(UInt16(colour.matrix))
                    if options.fileType == .mp4 { w.u8(colour.fullRange ? 0x80 : 0) }
                }
            }
            if !isFragmented { bitRateBox(&w) }
        }
    }

    /// `btrt`: decoding buffer size, the peak bit rate over any one-second window of decode
    /// times, and the average.
    private func bitRateBox(_ w: inout BoxWriter) {
        var peak: UInt64 = 0
        var windowBits: UInt64 = 0
        var windowStart = 0
        var times: [Int64] = []
        times.reserveCapacity(sizes.count)
        var t: Int64 = 0
        for run in timeToSample { for _ in 0..<run.count { times.append(t); t += Int64(run.delta) } }
        for i in sizes.indices {
            windowBits += UInt64(sizes[i]) * 8
            while times[i] - times[windowStart] >= Int64(timescale) {
                windowBits -= UInt64(sizes[windowStart]) * 8
                windowStart += 1
            }
            peak = max(peak, windowBits)
        }
        let seconds = Double(max(mediaDuration, 1)) / Double(timescale)
        let average = UInt64(Double(totalBytes * 8) / seconds)
        w.box("btrt") { w in
            w.u32(UInt32(clamping: largestSample))
            w.u32(UInt32(clamping: max(peak, average)))
            w.u32(UInt32(clamping: average))
        }
    }

    private func sampleTable(_ w: inout BoxWriter, mediaOffset: UInt64, largeOffsets: Bool) {
        sampleDescriptions(&w)
        w.fullBox("stts") { w in
            w.u32(UInt32(timeToSample.count))
            for run in timeToSample { w.u32(run.count); w.u32(run.delta) }
        }
        if compositionOffsets.count > 1 || compositionOffsets.first?.offset != 0 {
            w.fullBox("ctts", version: options.negativeCompositionOffsets ? 1 : 0) { w in
                w.u32(UInt32(compositionOffsets.count))
                for run in compositionOffsets { w.u32(run.count); w.i32(run.offset) }
            }
            if options.negativeCompositionOffsets { compositionShift(&w) }
        }
        if syncSamples.count < sampleCount {
            w.fullBox("stss") { w in
                w.u32(UInt32(syncSamples.count))
                for index in syncSamples { w.u32(index) }
            }
        }
        w.fullBox("sdtp") { w in w.append(dependencyFlags) }
        w.fullBox("stsc") { w in
            var runs: [(first: UInt32, samples: UInt32, description: UInt32)] = []
            for (index, chunk) in chunks.enumerated() where runs.last.map({ $0.samples != chunk.samples || $0.description != chunk.description }) ?? true {
                runs.append((UInt32(index + 1), chunk.samples, chunk.description))
            }
            w.u32(UInt32(runs.count))
            for run in runs { w.u32(run.first); w.u32(run.samples); w.u32(run.description) }
        }
        w.fullBox("stsz") { w in
            w.u32(0)
            w.u32(UInt32(sizes.count))
            for size in sizes { w.u32(size) }
        }
        if largeOffsets {
            w.fullBox("co64") { w in
                w.u32(UInt32(chunks.count))
                for chunk in chunks { w.u64(chunk.offset + mediaOffset) }
            }
        } else {
            w.fullBox("stco") { w in
                w.u32(UInt32(chunks.count))
                for chunk in chunks { w.u32(UInt32(chunk.offset + mediaOffset)) }
            }
        }
    }

    /// `cslg` for version 1 composition offsets (ISO/IEC 14496-12 §8.6.1.4).
    private func compositionShift(_ w: inout BoxWriter) {
        var least = Int32.max, greatest = Int32.min
        for run in compositionOffsets { least = min(least, run.offset); greatest = max(greatest, run.offset) }
        w.fullBox("cslg") { w in
            w.i32(max(0, -least))
            w.i32(least)
            w.i32(greatest)
            w.i32(Int32(clamping: minimumPresentation - initialDelay))
            w.i32(Int32(clamping: maximumPresentationEnd - initialDelay))
        }
    }

    // MARK: Fragments

    /// The `moov` of a fragmented file: sample entries and defaults, no samples; `mehd` is
    /// filled in at the end when the output can seek.
    func fragmentedMovieBox() -> (bytes: [UInt8], mehdValueOffset: Int) {
        var w = BoxWriter()
        var mehdValue = 0
        w.box("moov") { w in
            movieHeader(&w, duration: 0)
            w.box("trak") { w in
                trackHeader(&w, duration: 0)
                w.box("edts") { w in
                    w.fullBox("elst") { w in
                        w.u32(1)
                        w.u32(0)
                        w.u32(UInt32(options.negativeCompositionOffsets ? 0 : initialDelay))
                        w.u16(1); w.u16(0)
                    }
                }
                media(&w, duration: 0) { w in
                    sampleDescriptions(&w)
                    w.fullBox("stts") { w in w.u32(0) }
                    w.fullBox("stsc") { w in w.u32(0) }
                    w.fullBox("stsz") { w in w.u32(0); w.u32(0) }
                    w.fullBox("stco") { w in w.u32(0) }
                }
            }
            w.box("mvex") { w in
                w.fullBox("mehd", version: 1) { w in
                    mehdValue = w.count
                    w.u64(0)
                }
                w.fullBox("trex") { w in
                    w.u32(1)  // track_ID
                    w.u32(1)  // default_sample_description_index
                    w.u32(0); w.u32(0); w.u32(0)
                }
            }
            MetadataItem.write(options.metadata, fileType: options.fileType, into: &w)
        }
        return (w.bytes, mehdValue)
    }

    func appendToFragment(_ sample: SampleBuffer, data: BlockBuffer, decode: Int64, duration: Int64, offset: Int64) throws(ContainerError) {
        if !headerWritten {
            headerWritten = true
            let ftyp = Self.fileTypeBox(options, fragmented: true)
            let moov = fragmentedMovieBox()
            mehdOffset = output.position + UInt64(ftyp.count + moov.mehdValueOffset)
            try output.write(ftyp)
            try output.write(moov.bytes)
            try output.flush()
            fragmentStart = decode
        }
        if let limit = options.fragmentDuration, sample.isSync, !fragmentSamples.isEmpty,
           MediaTime(value: decode - fragmentStart, timescale: timescale) >= limit {
            try flushFragment()
            fragmentStart = decode
        }
        // sample_flags: depends_on (bits 24-25), is_depended_on (22-23), non-sync (16).
        let dependency = Self.dependencyByte(sample.attachments)
        var flags = UInt32(dependency >> 4 & 3) << 24 | UInt32(dependency >> 2 & 3) << 22
        if !sample.isSync { flags |= 0x0001_0000 }
        fragmentSamples.append((data, UInt32(duration), flags, Int32(offset)))
        fragmentBytes += data.count
    }

    /// Writes the pending samples as one `moof` + `mdat`, in one write where it fits, and
    /// flushes it to the file so a kill after this point keeps it.
    func flushFragment() throws(ContainerError) {
        guard !fragmentSamples.isEmpty else { return }
        fragmentCount += 1
        let moofOffset = output.position
        var w = BoxWriter()
        var dataOffsetPosition = 0
        w.box("moof") { w in
            w.fullBox("mfhd") { w in w.u32(UInt32(fragmentCount)) }
            w.box("traf") { w in
                w.fullBox("tfhd", flags: 0x02_0000) { w in w.u32(1) }  // default-base-is-moof
                w.fullBox("tfdt", version: 1) { w in w.u64(UInt64(fragmentStart)) }
                w.fullBox("trun", version: options.negativeCompositionOffsets ? 1 : 0, flags: 0x000F01) { w in
                    w.u32(UInt32(fragmentSamples.count))
                    dataOffsetPosition = w.count
                    w.u32(0)
                    for sample in fragmentSamples {
                        w.u32(sample.duration)
                        w.u32(UInt32(sample.data.count))
                        w.u32(sample.flags)
                        w.i32(sample.offset)
                    }
                }
            }
        }
        var moof = w.bytes
        let dataOffset = UInt32(moof.count + 8)
        for i in 0..<4 { moof[dataOffsetPosition + i] = UInt8(truncatingIfNeeded: dataOffset >> (24 - 8 * UInt32(i))) }
        fragmentIndex.append((UInt64(fragmentStart), moofOffset))
        try output.write(moof)
        try output.write(Self.mediaDataHeader(size: UInt64(fragmentBytes), large: false))
        for sample in fragmentSamples {
            try output.write(sample.data)
        }
        try output.flush()
        fragmentSamples.removeAll(keepingCapacity: true)
        fragmentBytes = 0
    }

    /// `mfra`: a random-access entry per fragment, then `mfro` giving its size.
    func writeFragmentIndex() throws(ContainerError) {
        var w = BoxWriter()
        w.box("mfra") { w in
            w.fullBox("tfra", version: 1) { w in
                w.u32(1)
                w.u32(0)  // 1-byte traf, trun and sample numbers
                w.u32(UInt32(fragmentIndex.count))
                for entry in fragmentIndex { w.u64(entry.time); w.u64(entry.offset); w.u8(1); w.u8(1); w.u8(1) }
            }
            w.fullBox("mfro") { w in w.u32(0) }
        }
        var bytes = w.bytes
        let size = UInt32(bytes.count)
        for i in 0..<4 { bytes[bytes.count - 4 + i] = UInt8(truncatingIfNeeded: size >> (24 - 8 * UInt32(i))) }
        try output.write(bytes)
    }
}
