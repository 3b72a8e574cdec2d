import Bitstream
import MediaCore
import MPEG4Audio

/// One elementary stream of a transport stream other than its H.264 one, as
/// ``TransportStreamReader`` reads it: AAC in ADTS (`stream_type` 0x0F) or in LATM (0x11) cut
/// into frames, each a sample; anything else a sample per PES packet, carried as it is with its
/// stream type and descriptors. Frames are timed as FFmpeg times them: the first frame that
/// begins in a PES packet takes that packet's PTS, the frames after it follow one frame length
/// apart (1024 samples), in the sample rate's clock (a PTS that is within a tick of where the
/// frames already are is rounding, and the frames keep their step; a PTS at or before the
/// previous frame's start is an overlap, counted and said, and the frame follows that one).
struct ElementaryStreamReading {
    let stream: ProgramMapTable.ElementaryStream
    let trackID: TrackID

    enum Framing {
        case adts(ADTSFrameSplitter)
        case latm(LOASFrameSplitter)
        case pes
    }

    private var framing: Framing
    private var timeline = Timeline()
    /// The PTS of each PES packet (unwrapped, 90 kHz) by the stream offset its payload starts at.
    /// `restarted`: the stamp began a new time base (``Timeline``), placed one PES packet's
    /// duration after the old one rather than where the frames are.
    private var stamps: [(offset: Int, pts: Int64, used: Bool, restarted: Bool)] = []
    private var streamOffset = 0
    /// The AAC format, once the first frame is read; the carried format otherwise.
    private(set) var format: FormatDescription?
    /// The AAC format (``format``'s), kept apart so that a frame does not take it out of the case.
    private var audioFormat: AudioFormatDescription?
    /// The AAC format's clock and frame length: read once, not through a copy of the format
    /// for every frame.
    private var audioClock = (rate: Int64(1), step: Int64(1024))
    /// The next frame's time in the sample rate's clock, from the origin.
    private var nextTicks: Int64?
    /// A carried PES packet waiting for the next one's time (its duration).
    private var waiting: (data: BlockBuffer, pts: Int64, dts: Int64)?
    private var lastDuration: Int64 = 3000
    private(set) var sampleCount = 0
    private(set) var droppedPESPackets = 0
    private var otherFormatFrames = 0
    /// The header of the ADTS frame that gave the format.
    private var firstHeader: ADTSHeader?
    /// The last LATM configuration seen, and whether it is the first one's (once compared).
    private var lastConfiguration: (config: StreamMuxConfig, same: Bool?)?
    private var untimedFrames = 0
    /// Stream bytes that came from damaged PES packets (kept), not yet behind the frames made.
    private var damagedRanges: [Range<Int>] = []
    /// Frames (or carried packets) handed out with bytes of a damaged PES packet.
    private(set) var damagedSamples = 0
    /// Times a frame was stamped at or before the previous frame's start (placed after that
    /// frame instead).
    private(set) var overlaps = 0
    /// The largest such overlap, in the sample rate's clock.
    private var largestOverlap: Int64 = 0
    /// How far the last stamped frame was placed after its stamp (0 when it kept it).
    private var lastLag: Int64 = 0

    init(stream: ProgramMapTable.ElementaryStream) {
        self.stream = stream
        trackID = TrackID(rawValue: UInt32(stream.pid))
        switch stream.streamType {
        case .aacADTS: framing = .adts(ADTSFrameSplitter())
        case .aacLATM: framing = .latm(LOASFrameSplitter())
        default:
            framing = .pes
            format = .opaque(Self.carried(stream))
        }
    }

    /// What a stream H264Kit does not read is, to a transport stream writer: its PMT entry.
    static func carried(_ stream: ProgramMapTable.ElementaryStream) -> OpaqueFormatDescription {
        let hex = String(stream.streamType.rawValue, radix: 16, uppercase: true)
        let code = FourCharCode("TS" + (hex.count < 2 ? "0" + hex : hex)) ?? "TS??"
        let streamID: UInt8 = switch stream.mediaType {
        case .audio where [.mpeg1Audio, .mpeg2Audio, .aacADTS, .aacLATM].contains(stream.streamType): 0xC0
        case .video: 0xE0
        default: 0xBD  // private_stream_1: AC-3, subtitles, data
        }
        return OpaqueFormatDescription(mediaType: stream.mediaType, codec: code, name: stream.codecName,
                                       transportStream: .init(streamType: stream.streamType.rawValue, descriptors: stream.descriptors.flatMap(\.encoded), streamID: streamID))
    }

    /// The track as a source describes it, once its format is known.
    var track: TrackDescription? {
        format.map { TrackDescription(id: trackID, format: $0, language: stream.language, timescale: $0.audio.map { Int32(clamping: $0.sampleRate) } ?? 90_000) }
    }

    /// Takes a PES packet of the stream; appends the samples it completes to `samples`.
    /// `origin` is the reader's time origin (90 kHz), set by the first sample of any stream.
    mutating func take(_ packet: PESPacket, keepsDamaged: Bool, origin: inout Int64?, threshold: Int64, into samples: inout [SampleBuffer?]) {
        if packet.damage != nil && !keepsDamaged {
            droppedPESPackets += 1
            resynchronize()
            return
        }
        var pts90: Int64?
        if let pts = packet.header.presentationTimestamp {
            let dts = packet.header.decodingTimestamp ?? pts
            pts90 = timeline.place(pts: pts, dts: dts, discontinuity: packet.discontinuityIndicator, threshold: threshold, step: lastDuration).pts
        }
        let payloadCount = packet.payloadRange.count
        if packet.damage != nil {
            if case .pes = framing { damagedSamples += 1 } else { damagedRanges.append(streamOffset..<(streamOffset + payloadCount)) }
        }
        switch framing {
        case .pes:
            for sample in takeCarried(packet.withPayload { Array($0) }, packet: packet, pts: pts90, origin: &origin) { samples.append(sample) }
        case .adts(var splitter):
            if let pts90 { stamps.append((streamOffset, pts90, false, timeline.restarted)) }
            framing = .pes  // (the splitter is taken out while it works: no copy of its buffer)
            // The frames wholly inside a packet of ordinary size are slices of its bytes (one
            // storage for them all, no copy); one begun in the packet before is gathered. A
            // larger packet's frames are copied: a slice keeps the whole packet (and its spare
            // capacity) while the sample lives.
            let packetBytes = packet.bytes.count <= Self.largestPacketSliced ? BlockBuffer(packet.bytes) : nil
            let base = packet.payloadRange.lowerBound
            packet.withPayload { payload in
                splitter.append(payload) { (frame: ADTSFrameSplitter.FrameView) in
                    let data = packetBytes.flatMap { bytes in frame.rangeInAppendedBytes.map { bytes[(base + $0.lowerBound)..<(base + $0.upperBound)] } }
                        ?? BlockBuffer(Array(frame.payload.bindMemory(to: UInt8.self)))
                    let sample = aacSample(data, offset: frame.offset, length: frame.header.frameLength, config: { () -> AudioSpecificConfig? in
                        frame.header.audioSpecificConfig(programConfigElement: frame.header.channelConfiguration == 0
                                                         ? ProgramConfigElement.leading(Array(frame.payload.bindMemory(to: UInt8.self))) : nil)
                    }, sameAsFirst: sameStream(frame.header), origin: &origin)
                    if let sample { samples.append(sample) }
                }
            }
            streamOffset += payloadCount
            framing = .adts(splitter)
        case .latm(var splitter):
            if let pts90 { stamps.append((streamOffset, pts90, false, timeline.restarted)) }
            framing = .pes
            let frames = packet.withPayload { splitter.append($0) }
            streamOffset += payloadCount
            framing = .latm(splitter)
            for frame in frames {
                let sample = aacSample(BlockBuffer(frame.payload), offset: frame.offset, length: frame.payload.count + 3, config: { frame.config.audioSpecificConfig },
                                       sameAsFirst: sameConfiguration(frame.config), origin: &origin)
                if let sample { samples.append(sample) }
            }
        }
    }

    /// Whether an ADTS frame's header says the first frame's stream (nil for the first): the
    /// header's fields, not a description made for every frame.
    private mutating func sameStream(_ header: ADTSHeader) -> Bool? {
        guard let first = firstHeader else {
            firstHeader = header
            return nil
        }
        return header.isSameStream(as: first)
    }

    /// Whether a LATM frame's configuration is the first one's (nil for the first, or a
    /// configuration not compared yet: its description is compared then).
    private mutating func sameConfiguration(_ config: StreamMuxConfig) -> Bool? {
        if let known = lastConfiguration, known.config == config { return known.same }
        lastConfiguration = (config, nil)
        return nil
    }

    /// Ends the stream: what its splitter or its waiting packet still holds.
    mutating func finish(origin: inout Int64?) -> [SampleBuffer] {
        switch framing {
        case .adts(var splitter):
            let frames = splitter.finish()
            framing = .adts(splitter)
            return frames.compactMap { frame in
                aacSample(BlockBuffer(frame.payload), offset: frame.offset, length: frame.header.frameLength, config: {
                    frame.header.audioSpecificConfig(programConfigElement: nil)
                }, sameAsFirst: sameStream(frame.header), origin: &origin)
            }
        case .latm(var splitter):
            let frames = splitter.finish()
            framing = .latm(splitter)
            return frames.compactMap { frame in
                aacSample(BlockBuffer(frame.payload), offset: frame.offset, length: frame.payload.count + 3, config: { frame.config.audioSpecificConfig },
                          sameAsFirst: sameConfiguration(frame.config), origin: &origin)
            }
        case .pes:
            guard let waiting else { return [] }
            self.waiting = nil
            return [carriedSample(waiting, duration: lastDuration, origin: origin ?? waiting.pts)]
        }
    }

    /// A damaged or dropped packet: a frame cut by it is not glued to the next packet's bytes.
    private mutating func resynchronize() {
        if case .adts(var splitter) = framing {
            resynchronize(&splitter)
            framing = .adts(splitter)
        }
    }

    private func resynchronize(_ splitter: inout ADTSFrameSplitter) {
        splitter.resynchronize()
    }

    /// The largest PES packet whose AAC frames are kept as slices of it (ffmpeg writes audio
    /// packets of about 3 KB; an AAC frame is at most 8 KB): 64 KiB.
    static let largestPacketSliced = 1 << 16

    /// An AAC frame as a sample, timed from the PES packet it began in or after the frame before.
    /// `sameAsFirst`: whether the frame is of the first frame's stream, when the caller knows
    /// (nil: its configuration's description is made and compared).
    private mutating func aacSample(_ payload: BlockBuffer, offset: Int, length: Int, config: () -> AudioSpecificConfig?, sameAsFirst: Bool?,
                                    origin: inout Int64?) -> SampleBuffer? {
        if format == nil {
            guard let asc = config(), let audio = try? AudioFormatDescription(aac: asc) else {
                otherFormatFrames += 1
                firstHeader = nil
                return nil
            }
            format = .audio(audio)
            audioFormat = audio
            audioClock = (Int64(audio.sampleRate), Int64(audio.framesPerPacket))
        }
        guard format != nil else { return nil }
        var same = sameAsFirst
        if same == nil {
            let other = config().flatMap { try? AudioFormatDescription(aac: $0) }
            same = other == audioFormat
            if let known = lastConfiguration, known.same == nil { lastConfiguration = (known.config, same) }
        }
        if same == false {
            otherFormatFrames += 1
            return nil
        }
        let (rate, step) = audioClock
        // The stamp of the PES packet the frame begins in, if the frame is its first.
        var stamped: Int64?
        var restarted = false
        if let index = stamps.lastIndex(where: { $0.offset <= offset }) {
            if !stamps[index].used {
                stamped = stamps[index].pts
                restarted = stamps[index].restarted
                stamps[index].used = true
            }
            stamps.removeFirst(index)
        }
        if origin == nil, let stamped { origin = stamped }
        var ticks: Int64
        if let stamped, let base = origin {
            ticks = Self.ticks(stamped - base, rate: rate)
            if let predicted = nextTicks {
                let lag = predicted - ticks, tolerance = max(1, rate / 45_000)
                if abs(lag) <= tolerance {
                    ticks = predicted  // rounding
                    lastLag = 0
                } else if lag > 0 && (lag >= step || restarted) {
                    // Stamped at or before the previous frame's start (a splice, an encoder's
                    // slip), or on a new time base: decoding order cannot go back (a movie writer
                    // refuses it), so the frame follows that one, as FFmpeg places it past 0.1 s.
                    // The frames after it keep the lag while their stamps do; a new, larger lag
                    // is a new overlap. A new time base starts one PES packet's duration on
                    // (``Timeline``), not where the frames are: no overlap, only its lag kept.
                    if !restarted && lag - lastLag > tolerance {
                        overlaps += 1
                        largestOverlap = max(largestOverlap, lag)
                    }
                    lastLag = lag
                    ticks = predicted
                } else {
                    // Ahead (a gap: frames lost), or behind by less than a frame (the previous
                    // frame is shortened to meet it, as FFmpeg keeps such a stamp): the stamp holds.
                    lastLag = 0
                }
            }
        } else if let predicted = nextTicks {
            ticks = predicted
        } else {
            untimedFrames += 1  // a frame before any timestamp: nothing to place it by
            return nil
        }
        nextTicks = ticks + step
        lastDuration = step * 90_000 / max(rate, 1)
        sampleCount += 1
        if !damagedRanges.isEmpty {
            // A frame's bytes: from its header (its sync word) on.
            let bytes = offset..<(offset + max(1, length))
            if damagedRanges.contains(where: { $0.overlaps(bytes) }) { damagedSamples += 1 }
            damagedRanges.removeAll { $0.upperBound <= bytes.upperBound }
        }
        let time = MediaTime(value: ticks, timescale: Int32(clamping: rate))
        guard let format else { return nil }
        return SampleBuffer(data: payload, formatDescription: format,  // (one reference for every frame)
                            timing: SampleTiming(presentationTime: time, decodeTime: time, duration: MediaTime(value: step, timescale: Int32(clamping: rate))),
                            attachments: SampleAttachments(isSync: true), trackID: trackID)
    }

    /// 90 kHz ticks in the sample rate's clock, rounded to the nearest.
    static func ticks(_ value: Int64, rate: Int64) -> Int64 {
        let scaled = value * rate
        return scaled >= 0 ? (scaled + 45_000) / 90_000 : -((-scaled + 45_000) / 90_000)
    }

    /// A carried PES packet: it waits for the next one, whose time ends it.
    private mutating func takeCarried(_ payload: [UInt8], packet: PESPacket, pts: Int64?, origin: inout Int64?) -> [SampleBuffer] {
        guard let time = pts ?? waiting.map({ $0.dts + lastDuration }) else {
            untimedFrames += 1
            return []
        }
        if origin == nil { origin = time }
        var made: [SampleBuffer] = []
        if let waiting {
            let duration = max(1, time - waiting.dts)
            if duration < 90_000 * 10 { lastDuration = duration }
            made.append(carriedSample(waiting, duration: duration, origin: origin!))
        }
        waiting = (BlockBuffer(payload), pts ?? time, time)
        return made
    }

    private mutating func carriedSample(_ packet: (data: BlockBuffer, pts: Int64, dts: Int64), duration: Int64, origin: Int64) -> SampleBuffer {
        sampleCount += 1
        return SampleBuffer(data: packet.data, formatDescription: format!,
                            timing: SampleTiming(presentationTime: MediaTime(value: packet.pts - origin, timescale: 90_000),
                                                 decodeTime: MediaTime(value: packet.dts - origin, timescale: 90_000),
                                                 duration: MediaTime(value: duration, timescale: 90_000)),
                            attachments: SampleAttachments(isSync: true), trackID: trackID)
    }

    /// Its counts.
    var statistics: TransportStreamReader.StreamStatistics {
        var result = TransportStreamReader.StreamStatistics(pid: stream.pid, samples: sampleCount, damagedSamples: damagedSamples, droppedPESPackets: droppedPESPackets,
                                                            samplesLeftOut: otherFormatFrames + untimedFrames)
        switch framing {
        case .adts(let splitter):
            result.samplesLeftOut += splitter.statistics.framesLeftOut
            result.skippedBytes = splitter.statistics.skippedBytes
        case .latm, .pes: break
        }
        return result
    }

    /// What was wrong with the stream, as sentences, each naming it.
    var warnings: [String] {
        let name = "PID \(stream.pid) (\(stream.codecName)\(stream.language.map { ", \($0)" } ?? ""))"
        var lines: [String] = []
        switch framing {
        case .adts(let splitter):
            for problem in splitter.problems { lines.append("\(name): \(problem)") }
            if splitter.statistics.framesLeftOut > 0 || splitter.statistics.skippedBytes > 0 {
                lines.append("\(name): \(splitter.statistics.framesLeftOut) frame(s) left out, \(splitter.statistics.skippedBytes) byte(s) skipped")
            }
        case .latm(let splitter):
            for problem in splitter.problems { lines.append("\(name): \(problem)") }
        case .pes:
            break
        }
        if droppedPESPackets > 0 { lines.append("\(name): \(droppedPESPackets) damaged PES packet(s) left out") }
        if damagedSamples > 0 {
            lines.append("\(name): \(damagedSamples) \(format?.mediaType == .audio ? "frame(s)" : "sample(s)") with bytes of a damaged PES packet, kept (a decoder conceals them)")
        }
        if otherFormatFrames > 0 { lines.append("\(name): \(otherFormatFrames) frame(s) of another configuration than the first, left out") }
        if untimedFrames > 0 { lines.append("\(name): \(untimedFrames) frame(s) before the first timestamp, left out") }
        if overlaps > 0, let rate = format?.audio?.sampleRate, rate > 0 {
            let milliseconds = (largestOverlap * 1000 + Int64(rate) - 1) / Int64(rate)
            lines.append("\(name): \(overlaps) time(s) a frame was stamped at or before the previous frame's start (by up to \(milliseconds) ms): "
                         + "placed after it, and the frames after it as much later")
        }
        return lines
    }
}
