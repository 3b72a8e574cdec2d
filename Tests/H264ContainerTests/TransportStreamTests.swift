import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import MediaCore
import TestSupport
import Testing

/// The transport stream's structures (round trips, FFmpeg's bytes), the muxer's output checked
/// packet by packet by code of its own, the reader against what the muxer wrote: chunked any
/// way, in 188/192/204-byte layouts, across the 33-bit wrap, and damaged every way a capture
/// is (lost, duplicated, flagged, flipped and cut packets).
@Suite("MPEG-TS: structures, muxer, reader, damage")
struct TransportStreamTests {
    static let stream = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    /// The Samples stream's 90 samples (B-frames, three IDR pictures).
    static let samples: [SampleBuffer] = {
        let bytes = [UInt8](try! Data(contentsOf: URL(fileURLWithPath: stream)))
        return try! SampleBufferBuilder.samples(fromAnnexB: bytes).samples
    }()

    /// The samples as a transport stream.
    static func muxed(_ samples: [SampleBuffer] = samples, options: TransportStreamMuxer.Options = .init()) throws -> [UInt8] {
        var muxer = try TransportStreamMuxer(options: options)
        var output: [UInt8] = []
        for sample in samples { try muxer.append(sample, to: &output) }
        return output
    }

    /// Reading options that give back the samples as they went in (the muxer's delimiters out).
    static var readBack: TransportStreamReader.Options {
        TransportStreamReader.Options(assembler: .init(dropsAccessUnitDelimiters: true))
    }

    /// The NAL units of a sample, as arrays.
    static func nalUnits(_ sample: SampleBuffer) -> [[UInt8]] {
        var units: [[UInt8]] = []
        try? sample.forEachNALUnit { units.append(Array($0.bindMemory(to: UInt8.self))) }
        return units
    }

    /// The presentation times relative to the first sample's.
    static func relativeTimes(_ samples: [SampleBuffer]) -> [MediaTime] {
        guard let first = samples.first?.presentationTime else { return [] }
        return samples.map { ($0.presentationTime - first).converted(toTimescale: 90_000) }
    }

    // MARK: Structures

    @Test func ffmpegsTablesParse() throws {
        // The PAT and PMT sections FFmpeg 5.1 writes (`ffmpeg -i x.mp4 -c copy x.ts`).
        let pat: [UInt8] = [0x00, 0xB0, 0x0D, 0x00, 0x01, 0xC1, 0x00, 0x00, 0x00, 0x01, 0xF0, 0x00, 0x2A, 0xB1, 0x04, 0xB2]
        let association = try ProgramAssociationTable(section: ProgramSpecificSection(parsing: pat))
        #expect(association.transportStreamID == 1 && association.programs == [.init(programNumber: 1, programMapPID: 0x1000)])
        #expect(association.section.encoded == pat)
        let pmt: [UInt8] = [0x02, 0xB0, 0x12, 0x00, 0x01, 0xC1, 0x00, 0x00, 0xE1, 0x00, 0xF0, 0x00, 0x1B, 0xE1, 0x00, 0xF0, 0x00, 0x15, 0xBD, 0x4D, 0x56]
        let map = try ProgramMapTable(section: ProgramSpecificSection(parsing: pmt))
        #expect(map.programNumber == 1 && map.pcrPID == 0x100 && map.streams == [.init(streamType: .h264, pid: 0x100)])
        #expect(map.section.encoded == pmt)
        // A whole section through the CRC gives 0; one flipped bit is caught.
        #expect(MPEG2CRC32.checksum(pmt[...]) == 0)
        var broken = pmt
        broken[13] ^= 0x04
        #expect(throws: TransportStreamError.self) { try ProgramSpecificSection(parsing: broken) }
    }

    @Test func timestampsAndClocksRoundTrip() throws {
        let pairs: [(UInt64, UInt64)] = [(126_000, 119_994), ((1 << 33) - 1, (1 << 33) - 3001), (0, 0), (0x1_2345_6789, 0x0_FEDC_BA98)]
        for (pts, dts) in pairs {
            var header = PESPacketHeader(presentationTimestamp: pts, decodingTimestamp: dts)
            if pts == dts { header.decodingTimestamp = nil }
            var bytes: [UInt8] = []
            header.write(payloadLength: 1000, to: &bytes)
            let back = try bytes.withUnsafeBytes { try PESPacketHeader(parsing: $0) }
            #expect(back.presentationTimestamp == pts && back.decodingTimestamp == (pts == dts ? nil : dts) && back.headerSize == bytes.count)
            #expect(Int(back.packetLength) == bytes.count - 6 + 1000 && back.streamID == 0xE0 && back.dataAlignmentIndicator)
        }
        let readings: [UInt64] = [0, 27_000_000 * 3600 + 299, ProgramClockReference.period - 1]
        for ticks in readings {
            let clock = ProgramClockReference(ticks27MHz: ticks)
            let back = clock.encoded.withUnsafeBytes { ProgramClockReference(parsing: $0, at: 0) }
            #expect(back == clock && back.ticks27MHz == ticks)
        }
        let field = AdaptationField(discontinuityIndicator: true, randomAccessIndicator: true, programClockReference: .init(base: 63_000, extension: 17))
        var bytes: [UInt8] = []
        field.write(length: 30, to: &bytes)
        #expect(bytes.count == 31 && bytes[0] == 30)
        let parsed = try bytes.withUnsafeBytes { try AdaptationField(parsing: $0, 1..<31) }
        #expect(parsed == field)
    }

    @Test func layoutsAreFoundByContent() throws {
        let plain = try Self.muxed()
        let timestamped = try Self.muxed(options: .init(layout: .timestamped))
        var withParity: [UInt8] = []
        for start in stride(from: 0, to: plain.count, by: 188) { withParity += plain[start..<(start + 188)] + [UInt8](repeating: 0xA5, count: 16) }
        #expect(TransportPacketLayout.detect(in: plain)?.layout == .plain)
        #expect(TransportPacketLayout.detect(in: timestamped)?.layout == .timestamped)
        #expect(TransportPacketLayout.detect(in: withParity)?.layout == .withParity)
        #expect(TransportPacketLayout.detect(in: [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.stream))).prefix(2048).map { $0 }) == nil)
        for (bytes, layout) in [(plain, TransportPacketLayout.plain), (timestamped, .timestamped), (withParity, .withParity)] {
            let reader = TransportStreamReader(bytes: bytes, options: Self.readBack)
            let back = try reader.readAll()
            #expect(reader.layout == layout)
            #expect(back.map(Self.nalUnits) == Self.samples.map(Self.nalUnits), "\(layout): the samples' NAL units")
            #expect(Self.relativeTimes(back) == Self.relativeTimes(Self.samples), "\(layout): the times")
            #expect(reader.warnings.isEmpty, "\(layout): \(reader.warnings)")
        }
    }

    // MARK: The muxer's output, checked packet by packet

    /// What a transport stream's packets show, read by this test's own code.
    struct PacketCheck {
        var continuityBreaks: [String] = []
        var largestClockGap: Int64 = 0
        /// The largest gap between two PATs, timed as a receiver times them.
        var largestTableGap: Int64 = 0
        var pesStartsWithoutDelimiter = 0
        var randomAccessPackets = 0
        var clockReferences = 0

        init(_ bytes: [UInt8], stride: Int = 188, prefix: Int = 0) {
            var counters: [Int: UInt8] = [:]
            var clocks: [(packet: Int, clock: Int64)] = []
            var tables: [Int] = []
            for (index, start) in Swift.stride(from: prefix, to: bytes.count, by: stride).enumerated() {
                let packet = Array(bytes[start..<(start + 188)])
                let pid = Int(packet[1] & 0x1F) << 8 | Int(packet[2])
                let control = (packet[3] >> 4) & 3
                let counter = packet[3] & 0x0F
                var payload = 4
                if control & 2 != 0 {
                    let length = Int(packet[4])
                    if length > 0 && packet[5] & 0x10 != 0 {
                        let base = Int64(packet[6]) << 25 | Int64(packet[7]) << 17 | Int64(packet[8]) << 9 | Int64(packet[9]) << 1 | Int64(packet[10]) >> 7
                        clocks.append((index, base * 300 + (Int64(packet[10] & 1) << 8 | Int64(packet[11]))))
                        clockReferences += 1
                    }
                    if length > 0 && packet[5] & 0x40 != 0 { randomAccessPackets += 1 }
                    payload = 5 + length
                }
                if control & 1 != 0 {
                    if let last = counters[pid], counter != (last + 1) & 0x0F { continuityBreaks.append("PID \(pid): \(last) then \(counter)") }
                    counters[pid] = counter
                }
                if pid == 0 { tables.append(index) }
                if pid == 0x100 && packet[1] & 0x40 != 0 {
                    let headerLength = Int(packet[payload + 8])
                    let es = payload + 9 + headerLength
                    if Array(packet[es..<(es + 5)]) != [0, 0, 0, 1, 0x09] { pesStartsWithoutDelimiter += 1 }
                }
            }
            largestClockGap = zip(clocks, clocks.dropFirst()).map { $1.clock - $0.clock }.max() ?? 0
            // A packet's time as a receiver has it: bytes between two references arrive evenly.
            func time(_ packet: Int) -> Double? {
                guard let after = clocks.firstIndex(where: { $0.packet > packet }), after > 0 else { return nil }
                let (a, b) = (clocks[after - 1], clocks[after])
                return Double(a.clock) + Double(b.clock - a.clock) * Double(packet - a.packet) / Double(b.packet - a.packet)
            }
            let times = tables.compactMap(time)
            largestTableGap = Int64(zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0)
        }
    }

    @Test func theMuxersPacketsKeepTheirPromises() throws {
        // A 10 fps stream leaves 100 ms between samples: the clock must still come every 20 ms.
        let slow = Self.samples.map { sample in
            var timing = sample.timing
            timing.presentationTime = MediaTime(value: sample.presentationTime.converted(toTimescale: 30_000).value / 1001 * 3, timescale: 30)
            timing.decodeTime = MediaTime(value: sample.decodeTime.converted(toTimescale: 30_000).value / 1001 * 3, timescale: 30)
            timing.duration = MediaTime(value: 3, timescale: 30)
            return SampleBuffer(data: sample.data, formatDescription: sample.formatDescription, timing: timing, attachments: sample.attachments)
        }
        for (name, samples) in [("29.97 fps", Self.samples), ("10 fps", slow)] {
            let bytes = try Self.muxed(samples)
            #expect(bytes.count % 188 == 0)
            let check = PacketCheck(bytes)
            #expect(check.continuityBreaks.isEmpty, "\(name): \(check.continuityBreaks.prefix(3))")
            #expect(check.largestClockGap <= 27_000 * 40 && check.clockReferences > 0, "\(name): PCR gap \(Double(check.largestClockGap) / 27_000) ms")
            #expect(check.largestTableGap <= 27_000 * 100, "\(name): PAT gap \(Double(check.largestTableGap) / 27_000) ms")
            #expect(check.pesStartsWithoutDelimiter == 0)
            #expect(check.randomAccessPackets == samples.filter(\.isSync).count)
        }
        let m2ts = try Self.muxed(options: .init(layout: .timestamped))
        #expect(m2ts.count % 192 == 0 && PacketCheck(m2ts, stride: 192, prefix: 4).continuityBreaks.isEmpty)
    }

    // MARK: Reading

    @Test(arguments: [1, 7, 188, 1000, 65_536])
    func anyChunkingReadsTheSameSamples(chunkSize: Int) throws {
        let bytes = try Self.muxed()
        var options = Self.readBack
        options.chunkSize = chunkSize
        let back = try TransportStreamReader(bytes: bytes, options: options).readAll()
        #expect(back.map(Self.nalUnits) == Self.samples.map(Self.nalUnits))
        #expect(back.map(\.decodeTime) == (try TransportStreamReader(bytes: bytes, options: Self.readBack).readAll()).map(\.decodeTime))
    }

    @Test func timesRiseThroughThe33BitWrap() throws {
        // The first sample 1 s before the wrap: PTS and DTS cross it at different samples.
        let offset = MediaTime(value: (1 << 33) - 90_000, timescale: 90_000)
        let bytes = try Self.muxed(options: .init(timestampOffset: offset))
        let reader = TransportStreamReader(bytes: bytes, options: Self.readBack)
        let back = try reader.readAll()
        #expect(back.count == Self.samples.count)
        #expect(Self.relativeTimes(back) == Self.relativeTimes(Self.samples))
        #expect(zip(back, back.dropFirst()).allSatisfy { $0.decodeTime < $1.decodeTime })
        #expect(reader.statistics.timestampDiscontinuities == 0)
        // As the stream's own times: past 2^33, not back to 0.
        var absolute = Self.readBack
        absolute.timeOrigin = .stream
        let unwrapped = try TransportStreamReader(bytes: bytes, options: absolute).readAll()
        #expect(unwrapped.last!.decodeTime.converted(toTimescale: 90_000).value > (1 << 33))
    }

    @Test func aDiscontinuityContinuesTheTimes() throws {
        // Two streams joined, the second's times from 0 again and its first packet flagged.
        let first = try Self.muxed()
        var second = try Self.muxed(options: .init(timestampOffset: MediaTime(value: 0, timescale: 1)))
        // Flag the first video packet of the second (its adaptation field is there: a sync sample).
        for start in stride(from: 0, to: second.count, by: 188) where second[start + 1] & 0x1F == 0x01 && second[start + 2] == 0x00 {
            second[start + 5] |= 0x80
            break
        }
        let reader = TransportStreamReader(bytes: first + second, options: Self.readBack)
        let back = try reader.readAll()
        #expect(back.count == 180)
        #expect(zip(back, back.dropFirst()).allSatisfy { $0.decodeTime < $1.decodeTime })
        #expect(reader.statistics.timestampDiscontinuities == 1)
        let step = back[90].decodeTime - back[89].decodeTime
        #expect(step.seconds > 0 && step.seconds < 0.05, "the second stream goes on one frame after the first: \(step.seconds) s")
    }

    // MARK: Damage

    /// The video packets' start offsets.
    static func videoPackets(_ bytes: [UInt8]) -> [Int] {
        stride(from: 0, to: bytes.count, by: 188).filter { bytes[$0 + 1] & 0x1F == 0x01 && bytes[$0 + 2] == 0x00 }
    }

    /// The offset the muxer adds to the samples' times, 90 kHz ticks.
    static let muxerOffset: Int64 = {
        var muxer = try! TransportStreamMuxer()
        var output: [UInt8] = []
        try! muxer.append(samples[0], to: &output)
        return muxer.timestampOffset!
    }()

    /// Reading options for damaged streams: the stream's own times (the first picture may be
    /// the one lost), the muxer's delimiters out.
    static var readDamaged: TransportStreamReader.Options {
        TransportStreamReader.Options(assembler: .init(dropsAccessUnitDelimiters: true), keepsDamagedPESPackets: false, timeOrigin: .stream)
    }

    /// Every sample read (with the stream's times) equals the source sample of its time, and
    /// no more than `lost` are missing.
    static func expectUndamagedKept(_ back: [SampleBuffer], lost: Int, _ comment: String) {
        let source = Dictionary(uniqueKeysWithValues: samples.map { ($0.presentationTime.converted(toTimescale: 90_000).value + muxerOffset, nalUnits($0)) })
        for sample in back {
            let time = sample.presentationTime.converted(toTimescale: 90_000).value
            #expect(source[time] == nalUnits(sample), "\(comment): the sample at \(time) is not the source's")
        }
        #expect(back.count >= samples.count - lost, "\(comment): \(back.count) of \(samples.count) samples, \(lost) expected lost")
    }

    @Test func aLostPacketCostsItsPictureOnly() throws {
        let bytes = try Self.muxed()
        let video = Self.videoPackets(bytes)
        // Lose one packet from the middle of a picture of several packets.
        let victim = video[video.count / 2]
        let damaged = Array(bytes[..<victim] + bytes[(victim + 188)...])
        let reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        let back = try reader.readAll()
        #expect(reader.statistics.demuxer.continuityErrors == 1)
        #expect(reader.statistics.demuxer.damagedPESPackets == 1)
        #expect(back.count == Self.samples.count - 1)
        Self.expectUndamagedKept(back, lost: 1, "one packet lost")
        #expect(reader.warnings.contains { $0.contains("continuity") } && reader.warnings.contains { $0.contains("left out") })
    }

    /// By default the damaged picture is kept (as ffmpeg -c copy keeps it) and listed: which
    /// sample, where its PES packet began, why.
    @Test func aLostPacketsPictureIsKeptAndListedByDefault() throws {
        let bytes = try Self.muxed()
        let video = Self.videoPackets(bytes)
        let victim = video[video.count / 2]
        let damaged = Array(bytes[..<victim] + bytes[(victim + 188)...])
        var options = Self.readDamaged
        options.keepsDamagedPESPackets = true
        #expect(TransportStreamReader.Options().keepsDamagedPESPackets, "kept by default")
        let reader = TransportStreamReader(bytes: damaged, options: options)
        let back = try reader.readAll()
        #expect(back.count == Self.samples.count, "every picture kept")
        #expect(reader.statistics.damagedSamples == 1 && reader.damagedPictures.count == 1)
        let listed = try #require(reader.damagedPictures.first)
        #expect(listed.damage == .packetsLost && listed.byteOffset < victim && listed.byteOffset >= video[0])
        let changed = zip(back, Self.samples).enumerated().filter { Self.nalUnits($0.element.0) != Self.nalUnits($0.element.1) }.map(\.offset)
        #expect(changed == [listed.sampleIndex], "the listed picture is the one that changed: \(changed)")
        #expect(reader.warnings.contains { $0.contains("1 damaged picture(s) kept") && $0.contains("picture \(listed.sampleIndex)") }, "\(reader.warnings)")
    }

    @Test func oneIn37PacketsLost() throws {
        let bytes = try Self.muxed()
        var damaged: [UInt8] = []
        var lost = 0
        for (index, start) in stride(from: 0, to: bytes.count, by: 188).enumerated() {
            if index % 37 == 36 { lost += 1; continue }
            damaged += bytes[start..<(start + 188)]
        }
        let reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        let back = try reader.readAll()
        #expect(reader.statistics.demuxer.continuityErrors > 0)
        Self.expectUndamagedKept(back, lost: lost + 3, "1 in 37 lost")
        #expect(back.count < Self.samples.count)
    }

    @Test func duplicatesErrorsAndFlippedSyncAreCounted() throws {
        let bytes = try Self.muxed()
        let video = Self.videoPackets(bytes)
        // A duplicated packet: dropped, nothing lost.
        let duplicate = video[10]
        var damaged = Array(bytes[..<(duplicate + 188)] + bytes[duplicate..<(duplicate + 188)] + bytes[(duplicate + 188)...])
        var reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        var back = try reader.readAll()
        #expect(reader.statistics.demuxer.duplicatePackets == 1 && back.map(Self.nalUnits) == Self.samples.map(Self.nalUnits))
        // The transport error indicator: that packet's picture is left out.
        damaged = bytes
        damaged[video[video.count / 2] + 1] |= 0x80
        reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        back = try reader.readAll()
        #expect(reader.statistics.demuxer.transportErrors == 1)
        Self.expectUndamagedKept(back, lost: 1, "transport error")
        // A flipped sync byte: found again at the next packet; the packet is lost.
        damaged = bytes
        damaged[video[30]] ^= 0xFF
        reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        back = try reader.readAll()
        #expect(reader.statistics.syncLosses == 1 && reader.statistics.skippedBytes == 188)
        Self.expectUndamagedKept(back, lost: 1, "flipped sync byte")
        // Bytes lost mid-packet: sync found again, the rest kept.
        damaged = Array(bytes[..<(video[40] + 100)] + bytes[(video[40] + 188 + 50)...])
        reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        back = try reader.readAll()
        #expect(reader.statistics.syncLosses >= 1)
        Self.expectUndamagedKept(back, lost: 2, "bytes lost")
        // Garbage before the first packet is skipped.
        damaged = [UInt8](repeating: 0x47, count: 3) + [UInt8](repeating: 0x12, count: 97) + bytes
        reader = TransportStreamReader(bytes: damaged, options: Self.readDamaged)
        back = try reader.readAll()
        #expect(reader.statistics.skippedBytes == 100 && back.map(Self.nalUnits) == Self.samples.map(Self.nalUnits))
    }

    @Test func aStreamCutMidPacketKeepsWhatIsWhole() throws {
        let bytes = try Self.muxed()
        let cut = Array(bytes[..<(bytes.count / 2 + 77)])
        let reader = TransportStreamReader(bytes: cut, options: Self.readDamaged)
        let back = try reader.readAll()
        #expect(reader.statistics.truncatedBytes == (bytes.count / 2 + 77) % 188)
        #expect(back.count > 30 && back.count < 60)
        Self.expectUndamagedKept(back, lost: Self.samples.count, "cut")
        #expect(reader.warnings.contains { $0.contains("ends") })
    }

    /// A stream cut inside a video packet (a capture or a pipe ended): the picture it cut is
    /// left out and counted, never handed over short (ffmpeg's reader keeps it, and its decoder
    /// conceals the missing macroblocks); cut inside another PID's packet, the last picture is
    /// whole and kept. CI saw the first as a damaged last frame after SIGINT on a piped mux.
    @Test func aPictureCutByTheEndOfTheStreamIsLeftOut() throws {
        var bytes = try Self.muxed()
        let video = Self.videoPackets(bytes)
        // Video PES packets of unbounded length (PES_packet_length 0), as ffmpeg writes them:
        // only the next packet start, or the end, ends one.
        for offset in video where bytes[offset + 1] & 0x40 != 0 {
            let payload = offset + 4 + (bytes[offset + 3] & 0x20 != 0 ? 1 + Int(bytes[offset + 4]) : 0)
            #expect(bytes[payload..<(payload + 4)] == [0, 0, 1, 0xE0])
            bytes[payload + 4] = 0
            bytes[payload + 5] = 0
        }
        // A packet inside a picture: not the first of its PES packet (payload_unit_start_indicator 0).
        let inside = try #require(video.dropFirst(video.count / 2).first { bytes[$0 + 1] & 0x40 == 0 })
        var reader = TransportStreamReader(bytes: Array(bytes[..<(inside + 100)]), options: Self.readDamaged)
        var back = try reader.readAll()
        #expect(reader.statistics.truncatedBytes == 100 && reader.statistics.demuxer.damagedPESPackets == 1)
        let before = Self.videoPackets(Array(bytes[..<inside])).filter { bytes[$0 + 1] & 0x40 != 0 }.count
        #expect(back.count == before - 1, "the pictures whole before the cut, the cut one left out")
        Self.expectUndamagedKept(back, lost: Self.samples.count, "cut inside a picture")
        // Cut inside a table packet (PID 0) between two pictures: the picture before is kept.
        let table = try #require(stride(from: 188 * 10, to: bytes.count, by: 188).first { offset in
            bytes[offset + 1] & 0x1F == 0 && bytes[offset + 2] == 0 && video.first { $0 > offset }.map { bytes[$0 + 1] & 0x40 != 0 } == true
        })
        reader = TransportStreamReader(bytes: Array(bytes[..<(table + 50)]), options: Self.readDamaged)
        back = try reader.readAll()
        #expect(reader.statistics.truncatedBytes == 50 && reader.statistics.demuxer.damagedPESPackets == 0)
        #expect(back.count == Self.videoPackets(Array(bytes[..<table])).filter { bytes[$0 + 1] & 0x40 != 0 }.count)
        Self.expectUndamagedKept(back, lost: Self.samples.count, "cut inside a table")
    }

    @Test func flippedBytesNeverCrashOrHang() throws {
        let bytes = try Self.muxed()
        var random = SystemRandomNumberGenerator()
        for round in 0..<20 {
            var damaged = bytes
            for start in stride(from: 0, to: bytes.count, by: 188) where Int.random(in: 0..<100, using: &random) == 0 {
                damaged[start + Int.random(in: 0..<188, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
            let reader = TransportStreamReader(bytes: damaged, options: Self.readBack)
            do {
                let back = try reader.readAll()
                #expect(back.count <= Self.samples.count + 5, "round \(round)")
            } catch {
                // A damaged stream may be refused, with a reason and a place, never a trap.
                #expect(!error.description.isEmpty)
            }
        }
    }

    @Test func badInputIsAClearError() throws {
        // Not a transport stream.
        #expect { try TransportStreamReader(bytes: [UInt8](repeating: 0, count: 5000)).readAll() } throws: { error in
            (error as? ContainerError)?.reason.contains("no run of sync bytes") == true
        }
        // Packets, but no PAT: said.
        var nothing: [UInt8] = []
        for counter in 0..<20 { nothing += [0x47, 0x01, 0x00, 0x10 | UInt8(counter & 15)] + [UInt8](repeating: 0xFF, count: 184) }
        #expect { try TransportStreamReader(bytes: nothing).readAll() } throws: { error in
            (error as? ContainerError)?.reason.contains("no program association table") == true
        }
        // A PES packet over the cap is dropped and counted, not allocated past the cap.
        let bytes = try Self.muxed()
        let reader = TransportStreamReader(bytes: bytes, options: .init(limits: .init(maximumPESPacketSize: 2000)))
        _ = try? reader.readAll()
        #expect(reader.statistics.demuxer.oversizedPESPackets > 0)
        // A muxer asked for a reserved PID or 204-byte packets refuses.
        #expect(throws: TransportStreamError.self) { try TransportStreamMuxer(options: .init(videoPID: 0x1FFF)) }
        #expect(throws: TransportStreamError.self) { try TransportStreamMuxer(options: .init(layout: .withParity)) }
    }
}
