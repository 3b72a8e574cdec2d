import Bitstream
public import H264Bitstream
public import MediaCore
import SystemIO
public import SystemPackage

/// Reads the H.264 stream of an MPEG-2 transport stream (ISO/IEC 13818-1), and with
/// ``Options/tracks`` its program's other streams, as sample buffers, as `MovieReader` reads a
/// movie's tracks: from a file, a pipe or standard input (read in chunks of
/// ``Options/chunkSize``, never seeking), or bytes in memory. Each sample carries its stream's
/// PID as its track ID; samples of several streams come in the order their PES packets do.
/// AAC (in ADTS or LATM) is cut into frames, one sample each, timed in the sample rate's clock
/// from the PTS of the PES packet the frame begins in (`ElementaryStreamReading`; a frame
/// stamped at or before the previous one's start follows it instead, and ``warnings`` says so); the
/// program's other streams (AC-3, subtitles, data) come a sample per PES packet with what their
/// PMT entry says, for a transport stream writer to carry as they are.
///
/// The packet layout (188, 192 or 204 bytes) is found by content. The
/// ``TransportStreamDemuxer`` picks the program and gathers the H.264 PID's PES packets; their
/// payloads are split into NAL units and gathered into access units (`AccessUnitAssembler`:
/// one sample per picture, parameter sets into the format description, sync samples from IDR
/// pictures and recovery points), and each access unit takes the timestamps of the PES packet
/// its first byte came in (what FFmpeg's parser does). Timestamps are unwrapped past the 33-bit
/// wrap into one rising line (PTS and DTS each, wherever they cross it); a discontinuity
/// indicator, or a jump of more than ``Options/discontinuityThreshold``, starts the new time
/// base one frame after the old one. A sample lasts until the next one's decoding time.
///
/// Damage is counted and said (``warnings``, ``damagedPictures``): the pictures of a PES packet
/// that lost transport packets (a continuity counter jump), had the transport error indicator or
/// ended short are kept as they arrived, for a decoder to conceal, as `ffmpeg -c copy` keeps
/// them and as `MediaSource/Options/decoding` reads them; with
/// ``Options/keepsDamagedPESPackets`` false they are left out instead (the access unit the
/// packet belonged to). Sync lost is found again at the next run of sync bytes. Memory: the chunk being read, the
/// PES packet being gathered and the few access units waiting for their successor.
public final class TransportStreamReader {
    /// Which of the program's streams are read.
    public enum TrackSelection: Sendable, Hashable {
        /// The H.264 stream alone.
        case firstVideo
        /// Every stream of the program.
        case all
        /// Every stream but those of these kinds.
        case allExcept(Set<MediaType>)
        /// The streams on these PIDs.
        case pids([UInt16])
    }

    /// How to read the stream.
    public struct Options: Sendable, Hashable {
        /// Which program or PID to read.
        public var selection: TransportStreamDemuxer.Selection
        /// Which of the program's streams to read: the H.264 one by default.
        public var tracks: TrackSelection = .firstVideo
        /// How access units are framed into samples (NAL length size, parameter sets in band).
        public var assembler: AccessUnitAssembler.Options
        /// Leave out the samples before the first sync sample (they cannot be decoded).
        public var startsAtSyncSample: Bool
        /// Keep the access units of damaged PES packets (the default, what `ffmpeg -c copy`
        /// does: a decoder conceals them), each listed in ``TransportStreamReader/damagedPictures``;
        /// false leaves them out, counted.
        public var keepsDamagedPESPackets: Bool
        /// Where the samples' times start.
        public var timeOrigin: TimeOrigin
        /// A jump in decoding times larger than this (either way) is a discontinuity, as if
        /// flagged: 10 s, FFmpeg's `dts_delta_threshold` for a transport stream.
        public var discontinuityThreshold: MediaTime
        /// Caps for untrusted input.
        public var limits: TransportStreamDemuxer.Limits
        /// Bytes read at a time: 256 KiB, which stay in a core's cache while they are demuxed
        /// (measured against mapping the file and against 1 MiB reads: a tenth less CPU, and a
        /// steadier kernel time, on a 618 MB broadcast capture).
        public var chunkSize: Int

        /// Options: the first H.264 program, 4-byte lengths and parameter sets out of band,
        /// starting at the first sync sample, damaged pictures kept, times from the first
        /// sample's presentation time.
        public init(selection: TransportStreamDemuxer.Selection = .firstH264, assembler: AccessUnitAssembler.Options = .init(),
                    startsAtSyncSample: Bool = true, keepsDamagedPESPackets: Bool = true, timeOrigin: TimeOrigin = .firstPresentation,
                    discontinuityThreshold: MediaTime = MediaTime(value: 10, timescale: 1), limits: TransportStreamDemuxer.Limits = .init(),
                    chunkSize: Int = 256 << 10) {
            self.selection = selection
            self.assembler = assembler
            self.startsAtSyncSample = startsAtSyncSample
            self.keepsDamagedPESPackets = keepsDamagedPESPackets
            self.timeOrigin = timeOrigin
            self.discontinuityThreshold = discontinuityThreshold
            self.limits = limits
            self.chunkSize = chunkSize
        }
    }

    /// Where the samples' times start.
    public enum TimeOrigin: Sendable, Hashable {
        /// The first sample's presentation time is 0 (what `ffmpeg` does without `-copyts`);
        /// decoding times before it are negative.
        case firstPresentation
        /// The stream's own 90 kHz times, unwrapped (`-copyts`).
        case stream
    }

    /// What the reader counted beyond the demuxer's counts.
    public struct Statistics: Sendable, Hashable {
        /// The demuxer's counts: packets, continuity errors, duplicates, damaged PES packets.
        public var demuxer: TransportStreamDemuxer.Statistics
        /// Times the sync byte was missing where a packet was due.
        public var syncLosses: Int
        /// Bytes skipped looking for sync (leading bytes included).
        public var skippedBytes: Int
        /// Bytes of a last packet cut off by the end of the input.
        public var truncatedBytes: Int
        /// Access units left out because their PES packet was damaged (or the one they
        /// continued in).
        public var droppedAccessUnits: Int
        /// Samples handed out with bytes from a damaged PES packet (kept by
        /// ``Options/keepsDamagedPESPackets``).
        public var damagedSamples: Int
        /// Access units whose PES packet gave them no timestamp (timed one frame after the one
        /// before).
        public var accessUnitsWithoutTimestamps: Int
        /// Times the time base restarted (an indicator, or a jump past the threshold).
        public var timestampDiscontinuities: Int
        /// Decoding times that did not rise (moved one tick past the one before), or
        /// presentation times before their decoding time (moved to it).
        public var timestampsCorrected: Int
        /// Samples left out before the first sync sample.
        public var skippedLeadingSamples: Int
        /// Bytes of PES payload before the first start code, with nothing to continue.
        public var bytesBeforeStartCode: Int
        /// The largest gap between program clock references on the program's PCR PID.
        public var largestClockReferenceInterval: MediaTime?
        /// Program clock references on the program's PCR PID.
        public var clockReferences: Int
    }

    /// The input's name in messages ("stdin" for standard input).
    public let name: String
    /// How the stream is read.
    public let options: Options
    /// The packet layout, found from the first bytes.
    public private(set) var layout: TransportPacketLayout?
    /// The size of the input when known (a file).
    public let totalBytes: Int?
    /// Bytes read so far.
    public private(set) var bytesRead = 0
    /// Samples returned so far.
    public private(set) var sampleCount = 0

    /// A sample handed out with bytes of a damaged PES packet: which, and why.
    public struct DamagedPicture: Sendable, Hashable, CustomStringConvertible {
        /// The sample's number in decoding order, from 0 (among the samples handed out).
        public var sampleIndex: Int
        /// Its presentation time.
        public var presentationTime: MediaTime
        /// The offset in the input of the transport packet the damaged PES packet started in.
        public var byteOffset: Int
        /// What was wrong with the PES packet.
        public var damage: PESPacket.Damage

        /// "picture 12 (shown at 0.4 s): PES packet at byte 123456, transport packets lost inside it".
        public var description: String {
            "picture \(sampleIndex) (shown at \(presentationTime.seconds) s): PES packet at byte \(byteOffset), \(damage)"
        }
    }

    /// The damaged samples handed out so far, the first ``maximumDamagedPicturesListed``
    /// (``Statistics/damagedSamples`` counts them all).
    public private(set) var damagedPictures: [DamagedPicture] = []

    /// How many damaged samples ``damagedPictures`` lists at most.
    public static let maximumDamagedPicturesListed = 1000

    // The reader is used by one caller at a time (it is not Sendable) and its methods never
    // re-enter one another while a property is being modified: the dynamic exclusivity checks
    // on these, made for every 188-byte packet and NAL unit, are left out (measured: 4% of a
    // TS -> MP4 remux's CPU).
    private var input: Input
    @exclusivity(unchecked) private var framer: TransportPacketFramer?
    @exclusivity(unchecked) private var demuxer: TransportStreamDemuxer
    @exclusivity(unchecked) private var assembler: AccessUnitAssembler
    private var ended = false
    private var inputEnded = false
    /// Samples made, waiting to be handed out from `readyStart` (each taken out, not copied).
    @exclusivity(unchecked) private var ready: [SampleBuffer?] = []
    private var readyStart = 0
    /// The sample whose duration waits for the next one's decoding time.
    private var waiting: (unit: AccessUnitAssembler.AccessUnit, pts: Int64, dts: Int64)?
    /// Timestamps of the PES packets fed, by the elementary stream offset they start at.
    @exclusivity(unchecked) private var stamps: [Stamp] = []
    private var elementaryOffset = 0
    /// The last NAL unit of the last PES packet: it may continue in the next one.
    @exclusivity(unchecked) private var held: (bytes: BlockBuffer, startCodeOffset: Int, startCodeLength: Int, payloadStart: Int)?
    @exclusivity(unchecked) private var timeline = Timeline()
    private var sawSync = false
    private var origin: Int64?
    private var skippedLeading = 0
    private var droppedUnits = 0
    private var withoutTimestamps = 0
    private var discontinuities = 0
    private var corrected = 0
    private var orphanBytes = 0
    private var truncated = 0
    private var lastClock: (ticks: UInt64, pid: UInt16)?
    private var largestClockGap: UInt64?
    private var clockCount = 0
    private var fallbackDuration: Int64 = 3600
    /// The elementary stream bytes of damaged PES packets kept, not yet behind every sample
    /// handed out: where, from which packet, why.
    @exclusivity(unchecked) private var damagedPayloads: [(range: Range<Int>, byteOffset: Int, damage: PESPacket.Damage)] = []
    private var damagedSamples = 0
    /// Samples made (handed out or waiting in ``ready``).
    private var samplesMade = 0
    /// The program's other streams being read, by PID.
    private var others: [ElementaryStreamReading] = []

    private struct Stamp {
        var offset: Int
        var pts: Int64?
        var dts: Int64?
        var used = false
    }

    private enum Input {
        case chunked(ChunkedInput, buffer: UnsafeMutableRawBufferPointer)
        case memory([UInt8], position: Int)
        case finished
    }

    /// The 90 kHz timescale of transport stream timestamps.
    public static let timescale: Int32 = 90_000

    /// Opens `path` ("-" for standard input) and reads it in chunks.
    public convenience init(path: String, options: Options = Options()) throws(ContainerError) {
        let name = path == "-" ? "stdin" : path
        let status: FileStatus?
        do { status = path == "-" ? nil : try FileStatus.of(path: path) } catch { throw Self.ioError(error, name) }
        if path != "-" && status == nil { throw Self.ioError(SystemError(.open, path: path, errno: .noSuchFileOrDirectory), name) }
        if let status, status.kind == .regular, status.size == 0 { throw ContainerError(.truncated, "the file is empty", path: name) }
        let input: Input
        do { input = .chunked(try ChunkedInput(path: path), buffer: .allocate(byteCount: max(options.chunkSize, 4096), alignment: 16)) } catch {
            throw Self.ioError(error, name)
        }
        self.init(name: name, options: options, input: input, prefix: [], totalBytes: status.flatMap { $0.kind == .regular ? Int($0.size) : nil })
    }

    /// Reads an open descriptor in chunks (the caller keeps it open and closes it), after the
    /// bytes of `prefix` (read from it already, to tell what it holds).
    public convenience init(fileDescriptor: FileDescriptor, name: String, prefix: [UInt8] = [], options: Options = Options()) {
        let input = ChunkedInput(descriptor: fileDescriptor, name: name)
        self.init(name: name, options: options, input: .chunked(input, buffer: .allocate(byteCount: max(options.chunkSize, 4096), alignment: 16)), prefix: prefix,
                  totalBytes: nil)
    }

    /// Reads a stream held in memory.
    public convenience init(bytes: [UInt8], name: String = "bytes", options: Options = Options()) {
        self.init(name: name, options: options, input: .memory(bytes, position: 0), prefix: [], totalBytes: bytes.count)
    }

    private init(name: String, options: Options, input: Input, prefix: [UInt8], totalBytes: Int?) {
        self.name = name
        self.options = options
        self.input = input
        let gathers: TransportStreamDemuxer.Gathered = switch options.tracks {
        case .firstVideo: .video
        case .all: .all
        case .allExcept(let kinds): .allExcept(kinds)
        case .pids(let pids): .pids(Set(pids))
        }
        demuxer = TransportStreamDemuxer(selection: options.selection, gathers: gathers, limits: options.limits)
        // Slices before the first parameter sets (a stream joined in the middle, an IDR
        // picture lost) cannot be placed: they go, never glued to the next picture.
        var framing = options.assembler
        framing.dropsSlicesWithoutParameterSets = true
        assembler = AccessUnitAssembler(options: framing, retainingPictures: 256)
        self.totalBytes = totalBytes
        pendingPrefix = prefix
    }

    private var pendingPrefix: [UInt8]

    deinit {
        if case .chunked(_, let buffer) = input { buffer.deallocate() }
    }

    /// Whether `prefix` (a file's first bytes, 1 KB or so) looks like a transport stream: a run
    /// of sync bytes 188, 192 or 204 bytes apart.
    public static func looksLikeTransportStream(prefix: [UInt8]) -> Bool {
        prefix.count >= TransportPacketHeader.packetSize && TransportPacketLayout.detect(in: prefix) != nil
    }

    /// Whether the file at `path` looks like a transport stream (see
    /// ``looksLikeTransportStream(prefix:)``); false when it cannot be read.
    public static func looksLikeTransportStream(path: String) -> Bool {
        guard let prefix = try? filePrefix(path, count: TransportPacketLayout.syncRun * TransportPacketLayout.withParity.stride) else { return false }
        return looksLikeTransportStream(prefix: prefix)
    }

    // MARK: Reading

    /// The next sample in decoding order, or nil at the end.
    public func next() throws(ContainerError) -> SampleBuffer? {
        while true {
            if readyStart < ready.count {
                let sample = ready[readyStart].take()
                readyStart += 1
                if readyStart == ready.count { ready.removeAll(keepingCapacity: true); readyStart = 0 }
                guard let sample else { continue }  // (never: only samples go in)
                sampleCount += 1
                return sample
            }
            if ended { return nil }
            try readMore()
        }
    }

    /// Every remaining sample (for small inputs and tests).
    public func readAll() throws(ContainerError) -> [SampleBuffer] {
        var samples: [SampleBuffer] = []
        while let sample = try next() { samples.append(sample) }
        return samples
    }

    /// Reads the next chunk and takes what it completes; at the end, finishes.
    private func readMore() throws(ContainerError) {
        if inputEnded {
            try finishStream()
            return
        }
        switch input {
        case .chunked(let reader, let buffer):
            if !pendingPrefix.isEmpty {
                let prefix = pendingPrefix
                pendingPrefix = []
                try prefix.withTypedBytes { (raw) throws(ContainerError) in try consume(raw) }
                return
            }
            let count: Int
            do { count = try reader.read(into: buffer) } catch { throw Self.ioError(error, name) }
            if count == 0 {
                inputEnded = true
            } else {
                try consume(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            }
        case .memory(let bytes, let position):
            let end = min(bytes.count, position + options.chunkSize)
            try bytes.withTypedBytes { (raw) throws(ContainerError) in try consume(UnsafeRawBufferPointer(rebasing: raw[position..<end])) }
            input = .memory(bytes, position: end)
            if end == bytes.count { inputEnded = true }
        case .finished:
            inputEnded = true
        }
    }

    /// Bytes held before the layout is known.
    private var detectionBuffer: [UInt8] = []

    private func consume(_ chunk: UnsafeRawBufferPointer) throws(ContainerError) {
        bytesRead += chunk.count
        if framer == nil {
            detectionBuffer.append(contentsOf: chunk.assumingMemoryBound(to: UInt8.self))
            let wanted = TransportPacketLayout.syncRun * TransportPacketLayout.withParity.stride + TransportPacketLayout.withParity.stride
            guard detectionBuffer.count >= wanted else { return }
            try startFraming()
            return
        }
        try frame(chunk)
    }

    private func startFraming() throws(ContainerError) {
        guard let (found, _) = TransportPacketLayout.detect(in: detectionBuffer) else {
            throw ContainerError(.unsupported, "\(TransportStreamError.Code.notTransportStream): no run of sync bytes (0x47) 188, 192 or 204 bytes apart in the first \(detectionBuffer.count) bytes", path: name, byteOffset: 0)
        }
        layout = found
        framer = TransportPacketFramer(layout: found)
        let buffered = detectionBuffer
        detectionBuffer = []
        try buffered.withTypedBytes { (raw) throws(ContainerError) in try frame(raw) }
    }

    private func frame(_ chunk: UnsafeRawBufferPointer) throws(ContainerError) {
        framer!.append(chunk) { packet, offset, _ in demuxer.consume(packet: packet, at: offset) }
        try drainEvents()
    }

    private func finishStream() throws(ContainerError) {
        if framer == nil {
            if detectionBuffer.isEmpty { throw ContainerError(.truncated, "the input is empty", path: name) }
            try startFraming()
        }
        truncated = framer!.finish { packet, offset, _ in demuxer.consume(packet: packet, at: offset) }
        // A last packet cut off: the PES packet it belonged to ends short (its picture damaged).
        demuxer.finish(cutOff: truncated > 0 ? (framer!.layout.stride - truncated, framer!.cutOffPID) : nil)
        try drainEvents()
        guard demuxer.selected != nil else {
            let programs = demuxer.programMaps.values.sorted { $0.programNumber < $1.programNumber }
                .map { "program \($0.programNumber): " + $0.streams.map { "\($0.streamType) on PID \($0.pid)" }.joined(separator: ", ") }
            let asked: String
            switch options.selection {
            case .program(let number): asked = "program \(number) carries no H.264 stream"
            case .pid(let pid): asked = "nothing arrived on PID \(pid)"
            case .firstH264: asked = "no program carries an H.264 stream"
            }
            let reason = demuxer.programAssociation == nil ? "no program association table in \(demuxer.statistics.packets) packets"
                : programs.isEmpty ? "no program map table arrived" : "\(asked) (\(programs.joined(separator: "; ")))"
            throw ContainerError(.unsupported, reason, path: name, cause: TransportStreamError(.noVideo, reason))
        }
        // The last NAL unit, the last access unit and the last sample.
        try flushHeld()
        let last: AccessUnitAssembler.AccessUnit?
        do { last = try assembler.finish() } catch { throw bitstreamError(error) }
        if let last { take(last) }
        if let waiting { release(waiting.unit, pts: waiting.pts, dts: waiting.dts, duration: fallbackDuration, end: elementaryOffset) }
        waiting = nil
        for index in others.indices { for sample in others[index].finish(origin: &origin) { ready.append(sample) } }
        ended = true
    }

    private func drainEvents() throws(ContainerError) {
        while let event = demuxer.nextEvent() {
            switch event {
            case .pesPacket(let packet):
                try take(packet)
            case .clockReference(let clock, let pid, _, let discontinuity):
                noteClock(clock, pid: pid, discontinuity: discontinuity)
            case .programAssociation, .programMap, .selected:
                break
            }
        }
    }

    private func noteClock(_ clock: ProgramClockReference, pid: UInt16, discontinuity: Bool) {
        guard let program = demuxer.selected?.program, let map = demuxer.programMaps[program], map.pcrPID == pid else { return }
        clockCount += 1
        let ticks = clock.ticks27MHz
        if let last = lastClock, last.pid == pid, !discontinuity {
            let gap = (ticks &+ ProgramClockReference.period &- last.ticks) % ProgramClockReference.period
            if gap < 27_000_000 * 10 { largestClockGap = max(largestClockGap ?? 0, gap) }
        }
        lastClock = (ticks, pid)
    }

    // MARK: PES packets to NAL units

    /// The H.264 stream's PID, when it is read.
    private var videoPID: UInt16? {
        guard let stream = demuxer.gatheredStreams.first, stream.streamType == .h264 else {
            if case .pid(let pid) = options.selection { return pid }
            return nil
        }
        if case .pids(let pids) = options.tracks, !pids.contains(stream.pid) { return nil }
        return stream.pid
    }

    /// A PES packet of one of the program's other streams.
    private func takeOther(_ packet: PESPacket) {
        let threshold = Int64(options.discontinuityThreshold.converted(toTimescale: Self.timescale).value)
        if let index = others.firstIndex(where: { $0.stream.pid == packet.pid }) {
            others[index].take(packet, keepsDamaged: options.keepsDamagedPESPackets, origin: &origin, threshold: threshold, into: &ready)
        } else if let stream = demuxer.gatheredStreams.first(where: { $0.pid == packet.pid }) {
            others.append(ElementaryStreamReading(stream: stream))
            others[others.count - 1].take(packet, keepsDamaged: options.keepsDamagedPESPackets, origin: &origin, threshold: threshold, into: &ready)
        }
    }

    private func take(_ packet: PESPacket) throws(ContainerError) {
        if packet.pid != videoPID {
            takeOther(packet)
            return
        }
        if packet.damage != nil && !options.keepsDamagedPESPackets {
            dropDamaged(packet)
            return
        }
        let pts = packet.header.presentationTimestamp
        let dts = packet.header.decodingTimestamp ?? pts
        if let pts, let dts {
            let (unwrappedPTS, unwrappedDTS) = timeline.place(pts: pts, dts: dts, discontinuity: packet.discontinuityIndicator,
                                                              threshold: Int64(options.discontinuityThreshold.converted(toTimescale: Self.timescale).value),
                                                              step: fallbackDuration)
            if timeline.restarted { discontinuities += 1 }
            stamps.append(Stamp(offset: elementaryOffset, pts: unwrappedPTS, dts: unwrappedDTS))
        } else {
            stamps.append(Stamp(offset: elementaryOffset, pts: nil, dts: nil))
        }
        let payload = BlockBuffer(packet.bytes)[packet.payloadRange]
        if let damage = packet.damage {
            damagedPayloads.append((elementaryOffset..<(elementaryOffset + payload.count), packet.byteOffset, damage))
        }
        try split(payload)
        elementaryOffset += payload.count
    }

    /// Leaves out a damaged PES packet: what came before it is whole if it starts a new
    /// access unit; if it continues one, that one is left out too.
    private func dropDamaged(_ packet: PESPacket) {
        droppedUnits += 1
        let startsUnit = packet.withPayload { Self.startsAccessUnit($0) }
        if startsUnit {
            // The held NAL unit ended where this packet began.
            try? flushHeld()
        } else {
            held = nil
            assembler.discardPending()
            droppedUnits += 1
        }
    }

    /// Whether a PES payload starts a new access unit: a start code, then an access unit
    /// delimiter, SEI, SPS or PPS, or a slice whose first_mb_in_slice is 0.
    static func startsAccessUnit(_ payload: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < payload.count && payload[index] == 0 { index += 1 }
        guard index >= 2, index + 1 < payload.count, payload[index] == 1 else { return false }
        let type = payload[index + 1] & 0x1F
        switch type {
        case 6, 7, 8, 9: return true
        case 1, 5: return index + 2 < payload.count && payload[index + 2] & 0x80 != 0
        default: return false
        }
    }

    /// Splits a PES payload into NAL units for the assembler; its last unit is held, as it may
    /// continue in the next PES packet.
    private func split(_ payload: BlockBuffer) throws(ContainerError) {
        var units: [AnnexBNALUnit] = []
        payload.withUnsafeBytes { raw in AnnexB.forEachNALUnit(in: raw) { units.append($0) } }
        let firstStart = units.first?.startCodeOffset ?? payload.count
        if firstStart > 0 {
            // Bytes before the first start code continue the held unit (or are stray).
            if let current = held {
                let joined = BlockBuffer(chaining: [current.bytes, payload[0..<firstStart]])
                held = (joined, current.startCodeOffset, current.startCodeLength, current.payloadStart)
            } else {
                orphanBytes += firstStart
            }
        }
        if !units.isEmpty { try flushHeld() }
        for (index, unit) in units.enumerated() {
            let isLast = index == units.count - 1
            // The last unit runs to the payload's end for now (its trailing zeros may belong to it).
            let end = isLast ? payload.count : unit.payload.upperBound
            let bytes = payload[unit.payload.lowerBound..<end]
            if isLast {
                held = (bytes, elementaryOffset + unit.startCodeOffset, unit.startCodeLength, elementaryOffset + unit.payload.lowerBound)
            } else {
                try append(bytes, AnnexBNALUnit(startCodeOffset: elementaryOffset + unit.startCodeOffset, startCodeLength: unit.startCodeLength,
                                                payload: (elementaryOffset + unit.payload.lowerBound)..<(elementaryOffset + unit.payload.upperBound)))
            }
        }
    }

    /// The held NAL unit is complete: its trailing zeros go, and it goes to the assembler.
    private func flushHeld() throws(ContainerError) {
        guard let current = held else { return }
        held = nil
        var count = current.bytes.count
        current.bytes.withUnsafeBytes { raw in while count > 0 && raw[count - 1] == 0 { count -= 1 } }
        guard count > 0 else { return }
        try append(current.bytes[0..<count], AnnexBNALUnit(startCodeOffset: current.startCodeOffset, startCodeLength: current.startCodeLength,
                                                          payload: current.payloadStart..<(current.payloadStart + count)))
    }

    private func append(_ nal: BlockBuffer, _ location: AnnexBNALUnit) throws(ContainerError) {
        let closed: AccessUnitAssembler.AccessUnit?
        do { closed = try assembler.append(nalUnit: nal, at: location) } catch { throw bitstreamError(error) }
        if let closed { take(closed) }
    }

    private func bitstreamError(_ error: BitstreamError) -> ContainerError {
        ContainerError(.invalidInput, "the H.264 stream", path: name, cause: error)
    }

    // MARK: Access units to samples

    /// Times an access unit from the PES packet its first byte came in.
    private func take(_ unit: AccessUnitAssembler.AccessUnit) {
        var found: Int?
        for index in stamps.indices.reversed() where stamps[index].offset <= unit.firstByteOffset {
            found = index
            break
        }
        var pts: Int64?
        var dts: Int64?
        if let found, !stamps[found].used, let stampPTS = stamps[found].pts, let stampDTS = stamps[found].dts {
            pts = stampPTS
            dts = stampDTS
            stamps[found].used = true
        }
        if let found, found > 0 { stamps.removeFirst(found) }
        if pts == nil || dts == nil {
            guard let waiting else {
                // No time to go on from: a unit before any timestamp is left out.
                droppedUnits += 1
                return
            }
            withoutTimestamps += 1
            dts = waiting.dts + fallbackDuration
            pts = dts
        }
        guard var pts, var dts else { return }
        if options.startsAtSyncSample && !sawSync {
            guard unit.picture.isSync else {
                skippedLeading += 1
                return
            }
        }
        sawSync = true
        if let waiting {
            if dts <= waiting.dts {
                dts = waiting.dts + 1
                corrected += 1
            }
            let duration = dts - waiting.dts
            release(waiting.unit, pts: waiting.pts, dts: waiting.dts, duration: duration, end: unit.firstByteOffset)
            if duration > 0 && duration < 90_000 * 10 { fallbackDuration = duration }
        }
        if pts < dts {
            pts = dts
            corrected += 1
        }
        waiting = (unit, pts, dts)
    }

    /// Hands out `unit`, whose bytes run from its first byte's offset to `end` in the
    /// elementary stream.
    private func release(_ unit: AccessUnitAssembler.AccessUnit, pts: Int64, dts: Int64, duration: Int64, end: Int) {
        if origin == nil { origin = options.timeOrigin == .firstPresentation ? pts : 0 }
        let base = origin ?? 0
        // Damage behind this unit concerns no later one; damage inside it marks it.
        let bytes = unit.firstByteOffset..<max(unit.firstByteOffset + 1, end)
        if let hit = damagedPayloads.first(where: { $0.range.overlaps(bytes) }) {
            damagedSamples += 1
            if damagedPictures.count < Self.maximumDamagedPicturesListed {
                damagedPictures.append(DamagedPicture(sampleIndex: samplesMade, presentationTime: MediaTime(value: pts - base, timescale: Self.timescale),
                                                      byteOffset: hit.byteOffset, damage: hit.damage))
            }
        }
        damagedPayloads.removeAll { $0.range.upperBound <= bytes.upperBound }
        samplesMade += 1
        if firstFormatDescription == nil { firstFormatDescription = unit.formatDescription }
        let picture = unit.picture
        let intraOnly = picture.sliceTypes.allSatisfy { $0 == .i || $0 == .si }
        ready.append(SampleBuffer(
            data: unit.data, formatDescription: unit.formatDescription,
            timing: SampleTiming(presentationTime: MediaTime(value: pts - base, timescale: Self.timescale),
                                 decodeTime: MediaTime(value: dts - base, timescale: Self.timescale),
                                 duration: MediaTime(value: max(1, duration), timescale: Self.timescale)),
            attachments: SampleAttachments(isSync: picture.isSync, dependsOnOthers: !intraOnly, isDependedOnByOthers: picture.isReference,
                                           earlierDisplayTimesAllowed: picture.isSync && !picture.isIDR),
            trackID: videoPID.map { TrackID(rawValue: UInt32($0)) } ?? .first))
    }

    // MARK: What was read

    /// The demuxer: the tables in force, the PIDs, the counts, the first problems.
    public var transportStream: TransportStreamDemuxer { demuxer }

    /// Bytes of the H.264 elementary stream taken from the PES packets so far.
    public var elementaryStreamBytes: Int { elementaryOffset }

    /// The H.264 parser underneath: parameter sets, diagnostics, counts.
    public var parser: H264StreamParser { assembler.parser }
    /// How many diagnostics the parser has kept, without a copy of it (checked per sample).
    public var diagnosticCount: Int { assembler.parser.diagnostics.count }

    /// The counts of what was read, damaged, dropped and corrected.
    public var statistics: Statistics {
        Statistics(demuxer: demuxer.statistics, syncLosses: framer?.syncLosses ?? 0, skippedBytes: framer?.skippedBytes ?? 0, truncatedBytes: truncated,
                   droppedAccessUnits: droppedUnits, damagedSamples: damagedSamples, accessUnitsWithoutTimestamps: withoutTimestamps, timestampDiscontinuities: discontinuities,
                   timestampsCorrected: corrected, skippedLeadingSamples: skippedLeading, bytesBeforeStartCode: orphanBytes,
                   largestClockReferenceInterval: largestClockGap.map { MediaTime(value: Int64($0), timescale: 27_000_000) }, clockReferences: clockCount)
    }

    /// The counts of one stream read besides the H.264 one (an AAC or carried stream).
    public struct StreamStatistics: Sendable, Hashable {
        /// Its PID.
        public var pid: UInt16
        /// Samples handed out: AAC frames, or PES packets of a carried stream.
        public var samples: Int
        /// Samples handed out with bytes of a damaged PES packet (kept by
        /// ``Options/keepsDamagedPESPackets``).
        public var damagedSamples: Int
        /// Damaged PES packets left out (``Options/keepsDamagedPESPackets`` false).
        public var droppedPESPackets: Int
        /// Frames left out: cut, of another configuration than the first, or before any
        /// timestamp.
        public var samplesLeftOut: Int
        /// Bytes skipped looking for a frame's sync word.
        public var skippedBytes: Int = 0
    }

    /// The counts of the streams read besides the H.264 one, in the order they were met.
    public var streamStatistics: [StreamStatistics] { others.map(\.statistics) }

    /// The streams read, as tracks (ID: the PID), in the PMT's order, each once its format is
    /// known: the H.264 stream's from its first picture, AAC's from its first frame, a carried
    /// stream's from its PMT entry.
    public var tracks: [TrackDescription] {
        var result: [TrackDescription] = []
        for stream in demuxer.gatheredStreams {
            if stream.pid == videoPID {
                if let format = formatDescription { result.append(TrackDescription(id: TrackID(rawValue: UInt32(stream.pid)), format: .video(format), timescale: Self.timescale)) }
            } else if let track = others.first(where: { $0.stream.pid == stream.pid })?.track {
                result.append(track)
            }
        }
        return result
    }

    /// The streams of the transport stream's programs not read, with what their PMT entries
    /// say of them (an opaque description each), for saying what was left out.
    public var unselectedTracks: [TrackDescription] {
        let read = Set(demuxer.gatheredStreams.map(\.pid))
        var result: [TrackDescription] = []
        for map in demuxer.programMaps.values.sorted(by: { $0.programNumber < $1.programNumber }) {
            for stream in map.streams where !read.contains(stream.pid) && stream.streamType.carriesPES && !result.contains(where: { $0.id.rawValue == UInt32(stream.pid) }) {
                result.append(TrackDescription(id: TrackID(rawValue: UInt32(stream.pid)), format: .opaque(ElementaryStreamReading.carried(stream)),
                                               language: stream.language, timescale: Self.timescale))
            }
        }
        return result
    }

    /// The format description of the first sample, from the moment the reader has made it
    /// (which may be before ``next()`` hands the sample out: a sample waits for the next one's
    /// decoding time) and for good after, also once reading has ended. A stream whose parameter
    /// sets change later gives its samples other descriptions: each sample carries its own.
    public var formatDescription: VideoFormatDescription? { firstFormatDescription ?? ready.lazy.compactMap({ $0?.videoFormatDescription }).first ?? waiting?.unit.formatDescription }

    private var firstFormatDescription: VideoFormatDescription?

    /// The stream's frame rate: its VUI timing, else the first samples' spacing; nil until known.
    public var frameRate: FrameRate? {
        if let rate = parser.firstPictureSPS?.frameRate { return rate }
        guard sampleCount > 0 || waiting != nil else { return nil }
        return FrameRate(UInt64(Self.timescale), UInt64(max(1, fallbackDuration)))
    }

    /// What was wrong with the stream, as sentences: damage, lost sync, corrected times.
    /// Final once ``next()`` has returned nil.
    public var warnings: [String] {
        let stats = statistics
        var lines: [String] = []
        let demux = stats.demuxer
        if demux.continuityErrors > 0 { lines.append("\(demux.continuityErrors) continuity counter error(s): transport packets lost") }
        if demux.transportErrors > 0 { lines.append("\(demux.transportErrors) packet(s) with the transport error indicator, left out") }
        if demux.scrambledPackets > 0 { lines.append("\(demux.scrambledPackets) scrambled packet(s), left out") }
        if demux.duplicatePackets > 0 { lines.append("\(demux.duplicatePackets) duplicate packet(s) dropped") }
        if demux.invalidPackets > 0 { lines.append("\(demux.invalidPackets) invalid packet(s)") }
        if demux.sectionErrors > 0 { lines.append("\(demux.sectionErrors) broken table section(s) (PAT/PMT), ignored") }
        if demux.pesHeaderErrors > 0 { lines.append("\(demux.pesHeaderErrors) PES packet(s) with a broken header, left out") }
        if demux.oversizedPESPackets > 0 { lines.append("\(demux.oversizedPESPackets) PES packet(s) over \(options.limits.maximumPESPacketSize) bytes, left out") }
        if stats.syncLosses > 0 { lines.append("sync lost \(stats.syncLosses) time(s); \(stats.skippedBytes) byte(s) skipped to find it again") }
        else if stats.skippedBytes > 0 { lines.append("\(stats.skippedBytes) byte(s) before the first packet skipped") }
        if stats.truncatedBytes > 0 { lines.append("the input ends \(stats.truncatedBytes) byte(s) into a packet") }
        if demux.damagedPESPackets > 0 {
            if options.keepsDamagedPESPackets {
                let first = damagedPictures.first.map { "; the first: \($0)" } ?? ""
                lines.append("\(demux.damagedPESPackets) damaged PES packet(s): \(stats.damagedSamples) damaged picture(s) kept as they arrived, for a decoder to conceal\(first)")
            } else {
                lines.append("\(demux.damagedPESPackets) damaged PES packet(s): \(stats.droppedAccessUnits) picture(s) left out")
            }
        } else if stats.droppedAccessUnits > 0 {
            lines.append("\(stats.droppedAccessUnits) picture(s) left out (no timestamp to place them)")
        }
        if stats.accessUnitsWithoutTimestamps > 0 { lines.append("\(stats.accessUnitsWithoutTimestamps) picture(s) without a timestamp, timed one frame after the one before") }
        if stats.timestampDiscontinuities > 0 { lines.append("the time base restarted \(stats.timestampDiscontinuities) time(s); the times continue one frame on") }
        if stats.timestampsCorrected > 0 { lines.append("\(stats.timestampsCorrected) timestamp(s) out of order, moved") }
        if stats.skippedLeadingSamples > 0 { lines.append("the stream does not start with an IDR picture or recovery point; the \(stats.skippedLeadingSamples) picture(s) before the first one cannot be decoded and were left out") }
        if stats.bytesBeforeStartCode > 0 { lines.append("\(stats.bytesBeforeStartCode) byte(s) of the video stream before a start code, skipped") }
        for other in others { lines += other.warnings }
        return lines
    }

    private static func ioError(_ error: SystemError, _ name: String) -> ContainerError {
        ContainerError(error, while: "reading", path: name)
    }
}

/// One stream's timestamps unwrapped past the 33-bit wrap into a rising line, restarted one
/// step on at a discontinuity.
struct Timeline {
    private var lastDTS: Int64?
    private var offset: Int64 = 0
    /// Whether the last ``place(pts:dts:discontinuity:threshold:step:)`` restarted the line.
    private(set) var restarted = false

    private static let period = PESPacketHeader.timestampPeriod

    /// The value of `raw` (33 bits) nearest to `reference` on the unwrapped line.
    static func unwrap(_ raw: UInt64, near reference: Int64) -> Int64 {
        let value = Int64(raw)
        let base = reference - reference.modulo(period)
        var best = base + value
        for candidate in [best - period, best + period] where abs(candidate - reference) < abs(best - reference) { best = candidate }
        return best
    }

    /// The unwrapped times of a PES packet's timestamps.
    mutating func place(pts: UInt64, dts: UInt64, discontinuity: Bool, threshold: Int64, step: Int64) -> (pts: Int64, dts: Int64) {
        restarted = false
        guard let last = lastDTS else {
            let first = Int64(dts)
            lastDTS = first
            return (Self.unwrap(pts, near: first), first)
        }
        var unwrappedDTS = Self.unwrap(dts, near: last - offset) + offset
        if discontinuity || abs(unwrappedDTS - last) > threshold {
            // A new time base: it goes on one step after the old one.
            let raw = Self.unwrap(dts, near: last - offset)
            offset = last + step - raw
            unwrappedDTS = raw + offset
            restarted = true
        }
        lastDTS = unwrappedDTS
        let unwrappedPTS = Self.unwrap(pts, near: unwrappedDTS - offset) + offset
        return (unwrappedPTS, unwrappedDTS)
    }
}

extension Int64 {
    /// The remainder of a division by `divisor`, never negative.
    fileprivate func modulo(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
