public import MediaCore
import H264Bitstream
import MPEG4Audio

/// Writes samples as an MPEG-2 transport stream (ISO/IEC 13818-1), as a state machine: samples
/// in, packets out, no I/O (``TransportStreamWriter`` puts them in a file or a pipe).
///
/// One program. Each track gets a PID as its first sample comes (or as ``addStream(for:)``
/// declares it): H.264 on ``Options/videoPID`` (stream type 0x1B), carrying the program's
/// clock; AAC from ``Options/audioPID`` on (0x0F, ADTS: a 7-byte header before each frame,
/// frames gathered into a PES packet until ``Options/audioPESPayload`` bytes or
/// ``Options/audioPESDuration``, as FFmpeg does), with the track's language as an
/// ISO 639 descriptor; a stream read from a transport stream and carried as it is, with its own
/// stream type, descriptors and stream ID, a PES packet per sample. A program of audio alone
/// carries its clock on its first PID. A stream added after the first tables were written
/// makes a new version of the PMT. The PAT and the
/// PMT go first, again at least every ``Options/tableInterval`` and before every sync sample
/// (so a segment cut at a sync sample starts with them). Each sample is one PES packet with
/// its PTS (and its DTS when they differ), starting with an access unit delimiter and with the
/// format description's SPS and PPS before every IDR picture that lacks them (what FFmpeg's
/// `h264_mp4toannexb` and its muxer do). Continuity counters count on; the last packet of a
/// PES packet is filled with adaptation field stuffing.
///
/// The clock: each sample's bytes leave between its decoding time less ``Options/muxDelay``
/// and that time plus its duration, evenly; a program clock reference goes in the first packet
/// ``Options/clockReferenceInterval`` (20 ms) or more after the last, and in the first packet
/// of every sync sample; where the next packet would come more than 30 ms after the last
/// reference (a gap between small pictures), a packet of adaptation field only carries one. Timestamps are the samples' times plus
/// ``Options/timestampOffset`` (FFmpeg's 1.4 s unless given), modulo 2^33.
public struct TransportStreamMuxer: Sendable {
    /// The stream's layout, PIDs and clock.
    public struct Options: Sendable, Hashable {
        /// 188-byte packets, or 192-byte M2TS packets with their arrival times (204 is not written).
        public var layout: TransportPacketLayout
        /// `transport_stream_id` in the PAT.
        public var transportStreamID: UInt16
        /// The program's number.
        public var programNumber: UInt16
        /// The PID of the PMT: 0x1000, FFmpeg's.
        public var programMapPID: UInt16
        /// The PID of the video: 0x100, FFmpeg's.
        public var videoPID: UInt16
        /// The PID of the first audio stream, and of the other streams after it: 0x101, FFmpeg's.
        public var audioPID: UInt16 = 0x0101
        /// The most bytes of AAC frames (ADTS headers included) gathered into one PES packet:
        /// 2930, FFmpeg's `pes_payload_size`.
        public var audioPESPayload = 2930
        /// The most time one audio PES packet spans: 0.35 s, as FFmpeg flushes one.
        public var audioPESDuration = MediaTime(value: 7, timescale: 20)
        /// The most time between two copies of the PAT and PMT: 100 ms.
        public var tableInterval: MediaTime
        /// The time between program clock references: 20 ms (at most 100 ms; the standard
        /// allows 100, 40 is DVB's).
        public var clockReferenceInterval: MediaTime
        /// How far the clock runs ahead of the decoding times: 0.7 s, FFmpeg's `muxdelay`.
        public var muxDelay: MediaTime
        /// Added to every sample time; nil: what makes the first decoding time twice
        /// ``muxDelay`` when it is negative (a B-frame stream's), else twice ``muxDelay`` (1.4 s)
        /// on top of the samples' times, as FFmpeg's output has it.
        public var timestampOffset: MediaTime?
        /// The PAT and PMT before every sync sample as well as every ``tableInterval``.
        public var tablesBeforeSyncSamples: Bool

        /// FFmpeg's layout: plain packets, program 1, PMT on 0x1000, video on 0x100.
        public init(layout: TransportPacketLayout = .plain, transportStreamID: UInt16 = 1, programNumber: UInt16 = 1, programMapPID: UInt16 = 0x1000,
                    videoPID: UInt16 = 0x0100, tableInterval: MediaTime = MediaTime(value: 1, timescale: 10),
                    clockReferenceInterval: MediaTime = MediaTime(value: 1, timescale: 50), muxDelay: MediaTime = MediaTime(value: 7, timescale: 10),
                    timestampOffset: MediaTime? = nil, tablesBeforeSyncSamples: Bool = true) {
            self.layout = layout
            self.transportStreamID = transportStreamID
            self.programNumber = programNumber
            self.programMapPID = programMapPID
            self.videoPID = videoPID
            self.tableInterval = tableInterval
            self.clockReferenceInterval = clockReferenceInterval
            self.muxDelay = muxDelay
            self.timestampOffset = timestampOffset
            self.tablesBeforeSyncSamples = tablesBeforeSyncSamples
        }
    }

    /// The stream's layout, PIDs and clock.
    public let options: Options
    /// Transport packets written.
    public private(set) var packetCount = 0
    /// Samples written.
    public private(set) var sampleCount = 0
    /// Program clock references written.
    public private(set) var clockReferenceCount = 0
    /// Parameter sets put before IDR pictures that lacked them.
    public var insertedParameterSetCount: Int { annexB.insertedParameterSetCount }
    /// The offset added to every sample time, 90 kHz ticks (known from the first sample on).
    public private(set) var timestampOffset: Int64?

    /// One stream of the program: its PID and what the PMT says of it.
    public struct Stream: Sendable, Hashable {
        /// The track whose samples it carries.
        public var trackID: TrackID
        /// Its PID.
        public var pid: UInt16
        /// Its PMT entry: stream type and descriptors.
        public var entry: ProgramMapTable.ElementaryStream
        /// Its PES packets' `stream_id`.
        public var streamID: UInt8
    }

    private enum Kind: Sendable { case h264, aac(AudioSpecificConfig), carried }

    /// A stream and what writing it holds: its continuity counter, an audio PES being gathered.
    private struct Muxed: Sendable {
        var stream: Stream
        var kind: Kind
        var counter: UInt8 = 0x0F
        var pending: [UInt8] = []
        /// The pending PES packet's PTS (offset applied) and the clock its bytes may leave at.
        var pendingPTS: Int64 = 0
        var pendingStart: Int64 = 0
        var pendingEnd: Int64 = 0
    }

    /// The program's streams, in the order they were added.
    public var streams: [Stream] { muxed.map(\.stream) }

    private var annexB = AnnexBWriter()
    private var staging = PacketStaging()
    private var muxed: [Muxed] = []
    /// Whether the streams came from declarations or samples (before, the PMT names the one
    /// H.264 stream a muxer of video has always had).
    private var declared = false
    private var mapVersion: UInt8 = 0
    private var associationCounter: UInt8 = 0x0F
    private var mapCounter: UInt8 = 0x0F
    /// The PAT and PMT packets' payloads: a pointer field, the section, stuffing.
    private var tables: (association: [UInt8], map: [UInt8])
    private var lastClock: Int64?
    private var lastTables: Int64?
    /// The clock (27 MHz) at which the last written byte left.
    private var clock: Int64 = 0
    private var buffer: [UInt8] = []
    private let tableInterval: Int64
    private let clockInterval: Int64
    private let delay: Int64
    /// The longest gap between references before a packet of its own carries one: twice the
    /// interval, at most 30 ms (DVB's 40 less a margin), at least the interval.
    private let forcedClockGap: Int64
    /// When the tables go again: early by twice the longest clock gap, since a receiver times
    /// a packet by the references around it (bytes between them arrive evenly), which can put
    /// each of two tables up to a gap off the time it was sent at.
    private let tablesDue: Int64

    /// 27 MHz ticks in one 90 kHz tick.
    private static let ticksPer90kHz: Int64 = 300
    private static let payloadSize = TransportPacketHeader.packetSize - 4

    /// A muxer with `options`; throws when the PIDs collide or are reserved, or the intervals
    /// are out of range.
    public init(options: Options = Options()) throws(TransportStreamError) {
        guard options.layout != .withParity else { throw TransportStreamError(.invalidInput, "204-byte packets are read, not written") }
        for (name, pid) in [("programMapPID", options.programMapPID), ("videoPID", options.videoPID)] {
            guard pid >= 0x0010, pid < TransportPacketHeader.nullPID else {
                throw TransportStreamError(.invalidInput, "\(name) 0x\(String(pid, radix: 16)): PIDs 0x0000-0x000F and 0x1FFF are reserved")
            }
        }
        guard options.programMapPID != options.videoPID, options.programMapPID != options.audioPID, options.videoPID != options.audioPID else {
            throw TransportStreamError(.invalidInput, "the PMT, the video and the audio on PIDs 0x\(String(options.programMapPID, radix: 16)), 0x\(String(options.videoPID, radix: 16)), 0x\(String(options.audioPID, radix: 16)): two are one")
        }
        guard options.audioPID >= 0x0010, options.audioPID < TransportPacketHeader.nullPID - 16 else {
            throw TransportStreamError(.invalidInput, "audioPID 0x\(String(options.audioPID, radix: 16)): PIDs 0x0000-0x000F and 0x1FFF are reserved (and 15 after it are used)")
        }
        guard (188...65_000).contains(options.audioPESPayload), options.audioPESDuration.isNumeric, options.audioPESDuration > .zero else {
            throw TransportStreamError(.invalidInput, "an audio PES payload of \(options.audioPESPayload) bytes (188 to 65000) or duration of \(options.audioPESDuration.seconds) s")
        }
        guard options.programNumber != 0 else { throw TransportStreamError(.invalidInput, "program number 0 is the network PID's") }
        func ticks(_ time: MediaTime) -> Int64 { time.converted(toTimescale: 27_000_000).value }
        guard time(options.clockReferenceInterval, in: 1...2_700_000) else {
            throw TransportStreamError(.invalidInput, "a clock reference interval of \(options.clockReferenceInterval.seconds) s (0 to 0.1 s)")
        }
        guard time(options.tableInterval, in: 1...(27_000_000 * 10)), time(options.muxDelay, in: 0...(27_000_000 * 10)) else {
            throw TransportStreamError(.invalidInput, "a table interval of \(options.tableInterval.seconds) s or mux delay of \(options.muxDelay.seconds) s (0 to 10 s)")
        }
        self.options = options
        tableInterval = ticks(options.tableInterval)
        clockInterval = ticks(options.clockReferenceInterval)
        delay = ticks(options.muxDelay)
        forcedClockGap = max(clockInterval, min(2 * clockInterval, 27_000 * 30))
        tables = ([], [])
        tablesDue = max(tableInterval / 4, tableInterval - 2 * forcedClockGap)
        func time(_ time: MediaTime, in range: ClosedRange<Int64>) -> Bool { time.isNumeric && range.contains(ticks(time)) }
        makeTables()
    }

    /// The PAT and the PMT of the streams so far (the one H.264 stream before any was added).
    private mutating func makeTables() {
        let association = ProgramAssociationTable(transportStreamID: options.transportStreamID,
                                                  programs: [.init(programNumber: options.programNumber, programMapPID: options.programMapPID)])
        let entries = muxed.isEmpty ? [ProgramMapTable.ElementaryStream(streamType: .h264, pid: options.videoPID)] : muxed.map(\.stream.entry)
        let map = ProgramMapTable(programNumber: options.programNumber, versionNumber: mapVersion, pcrPID: clockPID, streams: entries)
        func payload(_ section: ProgramSpecificSection) -> [UInt8] {
            let bytes = [0] + section.encoded
            return bytes + [UInt8](repeating: 0xFF, count: max(0, Self.payloadSize - bytes.count))
        }
        tables = (payload(association.section), payload(map.section))
    }

    /// The PID carrying the program's clock: the first video stream's, else the first stream's.
    private var clockPID: UInt16 { muxed.first { if case .h264 = $0.kind { true } else { false } }?.stream.pid ?? muxed.first?.stream.pid ?? options.videoPID }

    /// The index of the stream carrying the clock.
    private var clockIndex: Int? { muxed.firstIndex { $0.stream.pid == clockPID } }

    /// Adds the stream of `track` to the program (its PID, its PMT entry): H.264, AAC, or a
    /// stream carried from a transport stream (an opaque format with a transport stream
    /// carriage). Declaring every track before the first sample puts them all in the first
    /// PMT. Anything else cannot go in a transport stream here: an error naming it.
    @discardableResult
    public mutating func addStream(for track: TrackDescription) throws(TransportStreamError) -> Stream {
        if let existing = muxed.first(where: { $0.stream.trackID == track.id }) { return existing.stream }
        var descriptors: [Descriptor] = []
        if let language = track.language, language.utf8.count == 3 { descriptors.append(Descriptor(tag: 0x0A, data: Array(language.utf8) + [0])) }
        let used = Set(muxed.map(\.stream.pid))
        func nextPID() -> UInt16 {
            var pid = options.audioPID
            while used.contains(pid) || pid == options.videoPID || pid == options.programMapPID { pid += 1 }
            return pid
        }
        let added: Muxed
        switch track.format {
        case .video:
            let pid = used.contains(options.videoPID) ? nextPID() : options.videoPID
            added = Muxed(stream: Stream(trackID: track.id, pid: pid, entry: .init(streamType: .h264, pid: pid, descriptors: descriptors), streamID: 0xE0), kind: .h264)
        case .audio(let audio):
            guard let config = audio.audioSpecificConfig, ADTSHeader(config: config, payloadSize: 0) != nil else {
                throw TransportStreamError(.invalidInput, "track \(track.id): \(audio.codecString) at \(audio.sampleRate) Hz cannot be written as ADTS (AAC Main, LC, SSR or LTP, 7 channels or fewer)")
            }
            let pid = nextPID()
            added = Muxed(stream: Stream(trackID: track.id, pid: pid, entry: .init(streamType: .aacADTS, pid: pid, descriptors: descriptors), streamID: 0xC0),
                          kind: .aac(config))
        case .opaque(let opaque):
            guard let carriage = opaque.transportStream else {
                throw TransportStreamError(.invalidInput, "track \(track.id) (\(opaque.name)): a transport stream carries it only as it came from one")
            }
            let pid = nextPID()
            var entryDescriptors: [Descriptor] = []
            if let list = try? Descriptor.list(in: carriage.descriptors[...]) { entryDescriptors = list }
            if !descriptors.isEmpty, !entryDescriptors.contains(where: { $0.tag == 0x0A }) { entryDescriptors += descriptors }
            added = Muxed(stream: Stream(trackID: track.id, pid: pid, entry: .init(streamType: StreamType(rawValue: carriage.streamType), pid: pid, descriptors: entryDescriptors),
                                         streamID: carriage.streamID), kind: .carried)
        case .timecode:
            throw TransportStreamError(.invalidInput, "track \(track.id): a timecode track has no place in a transport stream")
        }
        if !muxed.isEmpty || declared || lastTables != nil { mapVersion = (mapVersion + 1) & 31 }
        declared = true
        muxed.append(added)
        makeTables()
        if lastTables != nil { lastTables = Int64.min / 2 }  // the new PMT goes before the stream's first packet
        return added.stream
    }

    /// The packets of the PAT and the PMT, now (a segmenter starting a segment calls this).
    public mutating func writeTables(to output: inout [UInt8]) {
        ownStaging()
        stageTables()
        moveStaged(to: &output)
    }

    /// Writes one sample (in decoding order) as a PES packet, with the tables and clock
    /// references due before and in it.
    public mutating func append(_ sample: SampleBuffer, to output: inout [UInt8]) throws(TransportStreamError) {
        try write(sample)
        moveStaged(to: &output)
    }

    /// Writes one sample (in decoding order) as a PES packet into the muxer's own buffer,
    /// with the tables and clock references due before and in it; ``drain(_:)`` hands the
    /// bytes on. (``append(_:to:)`` in one call, without the copy into an array.)
    public mutating func write(_ sample: SampleBuffer) throws(TransportStreamError) {
        ownStaging()
        guard sample.decodeTime.isNumeric, sample.presentationTime.isNumeric else {
            throw TransportStreamError(.invalidInput, "sample \(sampleCount) has no decoding or presentation time")
        }
        var index = muxed.firstIndex { $0.stream.trackID == sample.trackID }
        if index == nil {
            try addStream(for: TrackDescription(id: sample.trackID, format: sample.formatDescription))
            index = muxed.count - 1
        }
        switch muxed[index!].kind {
        case .h264: try writeVideo(sample, stream: index!)
        case .aac(let config): try writeAudio(sample, config: config, stream: index!)
        case .carried: try writeCarried(sample, stream: index!)
        }
        sampleCount += 1
    }

    /// The offset added to every time (set by the first sample), and the sample's times with it.
    private mutating func offsetTimes(_ sample: SampleBuffer) -> (pts: Int64, dts: Int64) {
        let dts90 = sample.decodeTime.converted(toTimescale: 90_000).value
        let pts90 = sample.presentationTime.converted(toTimescale: 90_000).value
        if timestampOffset == nil {
            if let given = options.timestampOffset {
                timestampOffset = given.converted(toTimescale: 90_000).value
            } else {
                // FFmpeg's: decoding times made non-negative, then twice the mux delay on top.
                timestampOffset = 2 * delay / Self.ticksPer90kHz - min(0, dts90)
            }
        }
        return (pts90 + timestampOffset!, dts90 + timestampOffset!)
    }

    /// An AAC frame: its ADTS header and bytes join the PES packet being gathered, which goes
    /// out first when it is full or long enough.
    private mutating func writeAudio(_ sample: SampleBuffer, config: AudioSpecificConfig, stream index: Int) throws(TransportStreamError) {
        guard let header = ADTSHeader(config: config, payloadSize: sample.size) else {
            throw TransportStreamError(.invalidInput, "sample \(sampleCount): a \(sample.size)-byte AAC frame is too long for ADTS")
        }
        let (pts, _) = offsetTimes(sample)
        let frameLength = header.frameLength
        let longEnough = pts - muxed[index].pendingPTS >= options.audioPESDuration.converted(toTimescale: 90_000).value
        if !muxed[index].pending.isEmpty && (muxed[index].pending.count + frameLength > options.audioPESPayload || longEnough) { flushAudio(index) }
        if muxed[index].pending.isEmpty {
            muxed[index].pendingPTS = pts
            muxed[index].pendingStart = pts * Self.ticksPer90kHz - delay
        }
        muxed[index].pending += header.bytes
        sample.data.forEachSegment { muxed[index].pending.append(contentsOf: $0) }
        let duration = sample.duration.isNumeric ? sample.duration.converted(toTimescale: 90_000).value : 1920
        muxed[index].pendingEnd = (pts + duration) * Self.ticksPer90kHz - delay
    }

    /// Writes the audio PES packet stream `index` has gathered, if any.
    private mutating func flushAudio(_ index: Int) {
        guard !muxed[index].pending.isEmpty else { return }
        let header = PESPacketHeader(streamID: muxed[index].stream.streamID, presentationTimestamp: UInt64(truncatingIfNeeded: muxed[index].pendingPTS),
                                     dataAlignmentIndicator: false)
        var pes: [UInt8] = []
        pes.reserveCapacity(muxed[index].pending.count + 14)
        header.write(payloadLength: muxed[index].pending.count, to: &pes)
        pes += muxed[index].pending
        muxed[index].pending.removeAll(keepingCapacity: true)
        stagePES(pes, stream: index, start: muxed[index].pendingStart, duration: max(1, muxed[index].pendingEnd - muxed[index].pendingStart), isSync: false)
    }

    /// Writes every audio PES packet being gathered (at the end, or before a segment is cut).
    public mutating func flush() {
        ownStaging()
        for index in muxed.indices { flushAudio(index) }
    }

    /// A sample of a stream carried as it is: one PES packet of its stream ID.
    private mutating func writeCarried(_ sample: SampleBuffer, stream index: Int) throws(TransportStreamError) {
        let (pts, dts) = offsetTimes(sample)
        let header = PESPacketHeader(streamID: muxed[index].stream.streamID, presentationTimestamp: UInt64(truncatingIfNeeded: pts),
                                     decodingTimestamp: dts == pts ? nil : UInt64(truncatingIfNeeded: dts))
        var pes: [UInt8] = []
        header.write(payloadLength: sample.size, to: &pes)
        sample.data.forEachSegment { pes.append(contentsOf: $0) }
        let duration = sample.duration.isNumeric ? max(1, sample.duration.converted(toTimescale: 90_000).value) * Self.ticksPer90kHz : 27_000_000 / 25
        stagePES(pes, stream: index, start: dts * Self.ticksPer90kHz - delay, duration: duration, isSync: false)
    }

    /// Stages a whole PES packet on stream `index`'s PID, its bytes leaving evenly between
    /// `start` and `start + duration` on the clock.
    private mutating func stagePES(_ pes: [UInt8], stream index: Int, start: Int64, duration: Int64, isSync: Bool) {
        fillClock(before: start)
        clock = max(clock, start)
        if lastTables == nil || clock - lastTables! >= tablesDue { stageTables() }
        let pid = muxed[index].stream.pid
        let carriesClock = pid == clockPID
        pes.withUnsafeBytes { bytes in
            let total = bytes.count
            var sent = 0
            while sent < total {
                fillClock(before: start + duration * Int64(sent) / Int64(total))
                clock = max(clock, start + duration * Int64(sent) / Int64(total))
                stageTablesIfDue()
                let opening = sent == 0
                let needsClock = carriesClock && (lastClock == nil || clock - lastClock! >= clockInterval)
                if needsClock {
                    lastClock = clock
                    clockReferenceCount += 1
                }
                let fieldContent = needsClock ? 7 : 0
                let room = Self.payloadSize - (fieldContent > 0 ? 1 + fieldContent : 0)
                let take = min(room, total - sent)
                muxed[index].counter = (muxed[index].counter &+ 1) & 0x0F
                stagePacket(pid: pid, unitStart: opening, counter: muxed[index].counter, payload: UnsafeRawBufferPointer(rebasing: bytes[sent..<(sent + take)]),
                            clockReference: needsClock ? clock : nil)
                sent += take
            }
        }
    }

    private mutating func writeVideo(_ sample: SampleBuffer, stream index: Int) throws(TransportStreamError) {
        let dts90 = sample.decodeTime.converted(toTimescale: 90_000).value
        let pts90 = sample.presentationTime.converted(toTimescale: 90_000).value
        _ = offsetTimes(sample)
        let offset = timestampOffset!
        let start = (dts90 + offset) * Self.ticksPer90kHz - delay
        var duration = sample.duration.isNumeric ? sample.duration.converted(toTimescale: 90_000).value * Self.ticksPer90kHz : 0
        if duration <= 0 { duration = 27_000_000 / 25 }

        // The PES packet in one buffer: room for its header, an access unit delimiter, then
        // the sample in Annex-B form; the header goes in front once the length is known.
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: repeatElement(0, count: Self.maximumPESHeaderSize))
        if !Self.startsWithDelimiter(sample) { buffer += [0, 0, 0, 1, 0x09, 0xF0] }
        do { try annexB.append(sample, to: &buffer) } catch {
            throw TransportStreamError(.invalidInput, "sample \(sampleCount)", cause: error)
        }
        var header = PESPacketHeader(presentationTimestamp: UInt64(truncatingIfNeeded: pts90 + offset),
                                     decodingTimestamp: UInt64(truncatingIfNeeded: dts90 + offset))
        if pts90 == dts90 { header.decodingTimestamp = nil }
        var headerBytes: [UInt8] = []
        headerBytes.reserveCapacity(Self.maximumPESHeaderSize)
        header.write(payloadLength: buffer.count - Self.maximumPESHeaderSize, to: &headerBytes)
        let first = Self.maximumPESHeaderSize - headerBytes.count
        buffer.replaceSubrange(first..<Self.maximumPESHeaderSize, with: headerBytes)

        // Keep the clock rising, filling a gap since the last sample with clock-only packets.
        fillClock(before: start)
        clock = max(clock, start)
        if lastTables == nil || clock - lastTables! >= tablesDue || (options.tablesBeforeSyncSamples && sample.isSync) {
            stageTables()
        }
        var pes: [UInt8] = []
        swap(&pes, &buffer)
        defer { swap(&pes, &buffer) }
        let total = pes.count - first
        let isSync = sample.isSync
        let pid = muxed[index].stream.pid
        let carriesClock = pid == clockPID
        pes.withUnsafeBytes { bytes in
            let source = bytes.baseAddress! + first
            var sent = 0
            while sent < total {
                let now = start + duration * Int64(sent) / Int64(total)
                // Packets of a few-packet picture are far apart: the clock goes between them.
                fillClock(before: now)
                clock = max(clock, now)
                stageTablesIfDue()
                let opening = sent == 0
                let needsClock = carriesClock && (lastClock == nil || clock - lastClock! >= clockInterval || (opening && isSync))
                if needsClock {
                    lastClock = clock
                    clockReferenceCount += 1
                }
                let fieldContent = needsClock ? 7 : (opening && isSync ? 1 : 0)  // flags (+ PCR)
                let room = Self.payloadSize - (fieldContent > 0 ? 1 + fieldContent : 0)
                let take = min(room, total - sent)
                muxed[index].counter = (muxed[index].counter &+ 1) & 0x0F
                stagePacket(pid: pid, unitStart: opening, counter: muxed[index].counter, payload: UnsafeRawBufferPointer(start: source + sent, count: take),
                            randomAccess: opening && isSync, clockReference: needsClock ? clock : nil)
                sent += take
            }
        }
    }

    /// Bytes written and not yet handed on by ``drain(_:)``.
    public var pendingByteCount: Int { staging.count }

    /// Hands the bytes written since the last drain to `body` (valid during the call), then
    /// forgets them.
    public mutating func drain<E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        ownStaging()
        defer { staging.reset() }
        try body(staging.bytes)
    }

    /// The most bytes of a PES header this muxer writes: 9 and a PTS and a DTS.
    private static let maximumPESHeaderSize = 19

    /// Whether the sample's first NAL unit is an access unit delimiter.
    private static func startsWithDelimiter(_ sample: SampleBuffer) -> Bool {
        var first: UInt8?
        try? sample.forEachNALUnit { nal in
            if first == nil { first = nal.first.map { $0 & 0x1F } }
        }
        return first == 9
    }

    // MARK: Packets

    /// Copies the staging area first when another copy of this muxer shares it.
    private mutating func ownStaging() {
        if !isKnownUniquelyReferenced(&staging) { staging = staging.copy() }
    }

    private mutating func moveStaged(to output: inout [UInt8]) {
        output.append(contentsOf: staging.bytes.assumingMemoryBound(to: UInt8.self))
        staging.reset()
    }

    /// Writes one packet into the staging area: the header, an adaptation field when there is
    /// a flag or a clock to carry or the payload does not fill the packet (stuffed with 0xFF),
    /// the payload.
    @inline(__always)
    private mutating func stagePacket(pid: UInt16, unitStart: Bool, counter: UInt8, payload: UnsafeRawBufferPointer,
                                      randomAccess: Bool = false, clockReference: Int64? = nil) {
        let prefix = options.layout.prefixSize
        let packet = staging.reserve(prefix + TransportPacketHeader.packetSize)
        var at = 0
        if prefix > 0 {
            let time = UInt32(truncatingIfNeeded: clock) & 0x3FFF_FFFF
            packet.storeBytes(of: time.bigEndian, as: UInt32.self)
            at = prefix
        }
        let fieldSize = Self.payloadSize - payload.count  // adaptation field bytes, its length byte included
        let control: UInt8 = fieldSize > 0 ? (payload.isEmpty ? 0x20 : 0x30) : 0x10
        packet.storeBytes(of: TransportPacketHeader.syncByte, toByteOffset: at, as: UInt8.self)
        packet.storeBytes(of: (unitStart ? 0x40 : 0) | UInt8(pid >> 8), toByteOffset: at + 1, as: UInt8.self)
        packet.storeBytes(of: UInt8(pid & 0xFF), toByteOffset: at + 2, as: UInt8.self)
        packet.storeBytes(of: control | counter, toByteOffset: at + 3, as: UInt8.self)
        at += 4
        if fieldSize > 0 {
            packet.storeBytes(of: UInt8(fieldSize - 1), toByteOffset: at, as: UInt8.self)
            at += 1
            if fieldSize > 1 {
                packet.storeBytes(of: (randomAccess ? 0x40 : 0) | (clockReference != nil ? 0x10 : 0), toByteOffset: at, as: UInt8.self)
                at += 1
                if let clockReference {
                    for (index, byte) in Self.clockReference(clockReference).encoded.enumerated() {
                        packet.storeBytes(of: byte, toByteOffset: at + index, as: UInt8.self)
                    }
                    at += 6
                }
                let stuffing = prefix + 4 + fieldSize - at
                if stuffing > 0 { (packet + at).initializeMemory(as: UInt8.self, repeating: 0xFF, count: stuffing) }
                at += stuffing
            }
        }
        if let source = payload.baseAddress, !payload.isEmpty { (packet + at).copyMemory(from: source, byteCount: payload.count) }
        staging.commit(prefix + TransportPacketHeader.packetSize)
        packetCount += 1
    }

    private mutating func stageTables() {
        for (pid, section) in [(TransportPacketHeader.programAssociationPID, tables.association), (options.programMapPID, tables.map)] {
            let counter: UInt8
            if pid == TransportPacketHeader.programAssociationPID {
                associationCounter = (associationCounter &+ 1) & 0x0F
                counter = associationCounter
            } else {
                mapCounter = (mapCounter &+ 1) & 0x0F
                counter = mapCounter
            }
            section.withUnsafeBytes { stagePacket(pid: pid, unitStart: true, counter: counter, payload: $0) }
        }
        lastTables = clock
    }

    /// The tables again when they are due, inside a long picture too.
    private mutating func stageTablesIfDue() {
        if let last = lastTables, clock - last >= tablesDue { stageTables() }
    }

    /// Packets of adaptation field only, carrying the clock, where the next packet at `time`
    /// would come more than ``forcedClockGap`` after the last reference.
    private mutating func fillClock(before time: Int64) {
        guard let last = lastClock else { return }
        var next = last + forcedClockGap
        while next < time {
            clock = max(clock, next)
            lastClock = clock
            clockReferenceCount += 1
            stagePacket(pid: clockPID, unitStart: false, counter: clockIndex.map { muxed[$0].counter } ?? 0, payload: UnsafeRawBufferPointer(start: nil, count: 0),
                        clockReference: clock)
            stageTablesIfDue()
            next += forcedClockGap
        }
    }

    /// The clock reference of a 27 MHz reading (modulo the clock's period, negative ones too).
    private static func clockReference(_ ticks: Int64) -> ProgramClockReference {
        let period = Int64(ProgramClockReference.period)
        return ProgramClockReference(ticks27MHz: UInt64((ticks % period + period) % period))
    }
}
