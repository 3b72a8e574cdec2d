public import MediaCore
import H264Bitstream

/// Writes H.264 samples as an MPEG-2 transport stream (ISO/IEC 13818-1), as a state machine:
/// samples in, packets out, no I/O (``TransportStreamWriter`` puts them in a file or a pipe).
///
/// One program, one PID of H.264 (stream type 0x1B) carrying its own clock. The PAT and the
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

    private var annexB = AnnexBWriter()
    private var counters: [UInt16: UInt8] = [:]
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
        guard options.programMapPID != options.videoPID else { throw TransportStreamError(.invalidInput, "the PMT and the video on one PID (0x\(String(options.videoPID, radix: 16)))") }
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
        tablesDue = max(tableInterval / 4, tableInterval - 2 * forcedClockGap)
        func time(_ time: MediaTime, in range: ClosedRange<Int64>) -> Bool { time.isNumeric && range.contains(ticks(time)) }
    }

    /// The packets of the PAT and the PMT, now (a segmenter starting a segment calls this).
    public mutating func writeTables(to output: inout [UInt8]) {
        let association = ProgramAssociationTable(transportStreamID: options.transportStreamID,
                                                  programs: [.init(programNumber: options.programNumber, programMapPID: options.programMapPID)])
        let map = ProgramMapTable(programNumber: options.programNumber, pcrPID: options.videoPID,
                                  streams: [.init(streamType: .h264, pid: options.videoPID)])
        writeSection(association.section.encoded, pid: TransportPacketHeader.programAssociationPID, to: &output)
        writeSection(map.section.encoded, pid: options.programMapPID, to: &output)
        lastTables = clock
    }

    /// Writes one sample (in decoding order) as a PES packet, with the tables and clock
    /// references due before and in it.
    public mutating func append(_ sample: SampleBuffer, to output: inout [UInt8]) throws(TransportStreamError) {
        guard sample.decodeTime.isNumeric, sample.presentationTime.isNumeric else {
            throw TransportStreamError(.invalidInput, "sample \(sampleCount) has no decoding or presentation time")
        }
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
        let offset = timestampOffset!
        let start = (dts90 + offset) * Self.ticksPer90kHz - delay
        var duration = sample.duration.isNumeric ? sample.duration.converted(toTimescale: 90_000).value * Self.ticksPer90kHz : 0
        if duration <= 0 { duration = 27_000_000 / 25 }

        // The elementary stream: an access unit delimiter, then the sample in Annex-B form.
        buffer.removeAll(keepingCapacity: true)
        if !Self.startsWithDelimiter(sample) { buffer += [0, 0, 0, 1, 0x09, 0xF0] }
        do { try annexB.append(sample, to: &buffer) } catch {
            throw TransportStreamError(.invalidInput, "sample \(sampleCount): \(error.description)")
        }
        var header = PESPacketHeader(presentationTimestamp: UInt64(truncatingIfNeeded: pts90 + offset),
                                     decodingTimestamp: UInt64(truncatingIfNeeded: dts90 + offset))
        if pts90 == dts90 { header.decodingTimestamp = nil }
        var pes: [UInt8] = []
        pes.reserveCapacity(19)
        header.write(payloadLength: buffer.count, to: &pes)

        // Keep the clock rising, filling a gap since the last sample with clock-only packets.
        fillClock(before: start, to: &output)
        clock = max(clock, start)
        if lastTables == nil || clock - lastTables! >= tablesDue || (options.tablesBeforeSyncSamples && sample.isSync) {
            writeTables(to: &output)
        }
        var elementary: [UInt8] = []
        swap(&elementary, &buffer)
        defer { swap(&elementary, &buffer) }
        let total = pes.count + elementary.count
        var sent = 0
        var first = true
        let pid = options.videoPID
        pes.withUnsafeBytes { pesBytes in
            elementary.withUnsafeBytes { esBytes in
                while sent < total {
                    let now = start + duration * Int64(sent) / Int64(total)
                    // Packets of a few-packet picture are far apart: the clock goes between them.
                    fillClock(before: now, to: &output)
                    clock = max(clock, now)
                    writeTablesIfDue(to: &output)
                    let needsClock = lastClock == nil || clock - lastClock! >= clockInterval || (first && sample.isSync)
                    var field: AdaptationField?
                    if needsClock || (first && sample.isSync) {
                        field = AdaptationField(randomAccessIndicator: first && sample.isSync,
                                                programClockReference: needsClock ? Self.clockReference(clock) : nil)
                        if needsClock {
                            lastClock = clock
                            clockReferenceCount += 1
                        }
                    }
                    let room = Self.payloadSize - (field.map { 1 + $0.encodedSize } ?? 0)
                    let take = min(room, total - sent)
                    writePacket(pid: pid, unitStart: first, field: field, payloadCount: take, to: &output) { output in
                        // The PES header's bytes first, then the elementary stream's.
                        var done = 0
                        while done < take {
                            let position = sent + done
                            if position < pesBytes.count {
                                let count = min(take - done, pesBytes.count - position)
                                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: pesBytes[position..<(position + count)]).assumingMemoryBound(to: UInt8.self))
                                done += count
                            } else {
                                let from = position - pesBytes.count
                                let count = take - done
                                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: esBytes[from..<(from + count)]).assumingMemoryBound(to: UInt8.self))
                                done += count
                            }
                        }
                    }
                    sent += take
                    first = false
                }
            }
        }
        sampleCount += 1
    }

    /// Whether the sample's first NAL unit is an access unit delimiter.
    private static func startsWithDelimiter(_ sample: SampleBuffer) -> Bool {
        var first: UInt8?
        try? sample.forEachNALUnit { nal in
            if first == nil { first = nal.first.map { $0 & 0x1F } }
        }
        return first == 9
    }

    // MARK: Packets

    /// Writes one packet: header, adaptation field (with stuffing to fill the packet) and
    /// `payloadCount` bytes that `payload` appends.
    private mutating func writePacket(pid: UInt16, unitStart: Bool, field: AdaptationField?, payloadCount: Int, to output: inout [UInt8],
                                      payload: (inout [UInt8]) -> Void) {
        let hasPayload = payloadCount > 0
        let fieldSize = Self.payloadSize - payloadCount  // bytes of adaptation field, its length byte included
        let counter: UInt8
        if hasPayload {
            counter = counters[pid].map { ($0 &+ 1) & 0x0F } ?? 0
            counters[pid] = counter
        } else {
            counter = counters[pid] ?? 0
        }
        let control: TransportPacketHeader.AdaptationFieldControl = fieldSize > 0 ? (hasPayload ? .adaptationFieldAndPayload : .adaptationFieldOnly) : .payloadOnly
        writeArrivalTime(to: &output)
        TransportPacketHeader(pid: pid, payloadUnitStartIndicator: unitStart, adaptationFieldControl: control, continuityCounter: counter).write(to: &output)
        if fieldSize > 0 { (field ?? AdaptationField()).write(length: fieldSize - 1, to: &output) }
        payload(&output)
        packetCount += 1
    }

    /// Packets of adaptation field only, carrying the clock, where the next packet at `time`
    /// would come more than ``forcedClockGap`` after the last reference.
    private mutating func fillClock(before time: Int64, to output: inout [UInt8]) {
        guard let last = lastClock else { return }
        var next = last + forcedClockGap
        while next < time {
            writeClockOnly(at: next, to: &output)
            writeTablesIfDue(to: &output)
            next += forcedClockGap
        }
    }

    /// The tables again when they are due, inside a long picture too.
    private mutating func writeTablesIfDue(to output: inout [UInt8]) {
        if let last = lastTables, clock - last >= tablesDue { writeTables(to: &output) }
    }

    private mutating func writeClockOnly(at time: Int64, to output: inout [UInt8]) {
        clock = max(clock, time)
        let field = AdaptationField(programClockReference: Self.clockReference(clock))
        lastClock = clock
        clockReferenceCount += 1
        writePacket(pid: options.videoPID, unitStart: false, field: field, payloadCount: 0, to: &output) { _ in }
    }

    private mutating func writeSection(_ section: [UInt8], pid: UInt16, to output: inout [UInt8]) {
        // pointer_field 0, the section, stuffing: the tables here fit one packet each.
        let payload = [0] + section
        precondition(payload.count <= Self.payloadSize, "a table section over one packet")
        writePacket(pid: pid, unitStart: true, field: nil, payloadCount: Self.payloadSize, to: &output) { output in
            output += payload
            output.append(contentsOf: repeatElement(0xFF, count: Self.payloadSize - payload.count))
        }
    }

    /// The clock reference of a 27 MHz reading (modulo the clock's period, negative ones too).
    private static func clockReference(_ ticks: Int64) -> ProgramClockReference {
        let period = Int64(ProgramClockReference.period)
        return ProgramClockReference(ticks27MHz: UInt64((ticks % period + period) % period))
    }

    private func writeArrivalTime(to output: inout [UInt8]) {
        guard options.layout == .timestamped else { return }
        let time = UInt32(truncatingIfNeeded: clock) & 0x3FFF_FFFF
        output += [UInt8(time >> 24), UInt8((time >> 16) & 0xFF), UInt8((time >> 8) & 0xFF), UInt8(time & 0xFF)]
    }
}
