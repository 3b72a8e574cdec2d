import Foundation
import H264Bitstream
import MediaCore
import Synchronization
import TestSupport
import Testing

@Suite struct BlockBufferTests {
    @Test func ownedSlicesShareStorage() {
        let buffer = BlockBuffer(Array(0..<100))
        let slice = buffer[10..<20]
        #expect(slice.count == 10)
        #expect(slice.bytes == Array(10..<20))
        #expect(slice.sharesStorage(with: buffer))
        let nested = slice[2..<5]
        #expect(nested.bytes == [12, 13, 14])
        #expect(nested == BlockBuffer([12, 13, 14]))
        #expect(nested != BlockBuffer([12, 13, 15]))
    }

    @Test func referencedMemoryIsReleasedOnceByTheLastSlice() {
        let released = Atomic<Int>(0)
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 16)
        for i in 0..<64 { memory[i] = UInt8(i) }
        var slice: BlockBuffer?
        do {
            let whole = BlockBuffer(referencing: UnsafeRawBufferPointer(memory)) { bytes in
                released.add(1, ordering: .relaxed)
                UnsafeMutableRawBufferPointer(mutating: bytes).deallocate()
            }
            slice = whole[32..<40]
            #expect(whole.withUnsafeBytes { $0.baseAddress } == UnsafeRawPointer(memory.baseAddress))
        }
        #expect(released.load(ordering: .relaxed) == 0, "a slice keeps the memory alive")
        #expect(slice?.bytes == Array(32..<40))
        #expect(slice?.withUnsafeBytes { $0.baseAddress } == UnsafeRawPointer(memory.baseAddress! + 32), "no copy")
        slice = nil
        #expect(released.load(ordering: .relaxed) == 1)
    }
    @Test func chainsJoinBuffersWithoutCopying() {
        let a = BlockBuffer(Array(0..<10))
        let b = BlockBuffer(Array(10..<30))[5..<20]   // 15...29
        let chain = BlockBuffer(chaining: [a, BlockBuffer(), b, BlockBuffer([30, 31])])
        #expect(chain.count == 27)
        #expect(!chain.isContiguous)
        #expect(chain.segmentCount == 3, "empty buffers are left out")
        #expect(chain.bytes == Array(0..<10) + Array(15..<32))
        #expect(chain.sharesStorage(with: a) && chain.sharesStorage(with: b))
        var pieces: [[UInt8]] = []
        chain.forEachSegment { pieces.append(Array($0)) }
        #expect(pieces == [Array(0..<10), Array(15..<30), [30, 31]])
        // Slices across, inside and at the edges of segments.
        #expect(chain[8..<13].bytes == [8, 9, 15, 16, 17])
        #expect(chain[8..<13].segmentCount == 2)
        #expect(chain[11..<14].isContiguous && chain[11..<14].sharesStorage(with: b))
        #expect(chain[10..<25] == BlockBuffer(Array(15..<30)))
        #expect(chain[0..<0].isEmpty)
        #expect(chain[20..<27].bytes == Array(25..<32))
        // Reading a chain as one range copies it; a contiguous buffer is handed back as it is.
        #expect(chain.withUnsafeBytes { Array($0) } == chain.bytes)
        #expect(chain.contiguous().isContiguous && chain.contiguous() == chain)
        #expect(a.contiguous().withUnsafeBytes { $0.baseAddress } == a.withUnsafeBytes { $0.baseAddress })
        // Chains of chains flatten.
        let twice = BlockBuffer(chaining: [chain, chain])
        #expect(twice.segmentCount == 6 && twice.bytes == chain.bytes + chain.bytes)
        #expect(BlockBuffer(chaining: [a]).isContiguous)
    }
}

/// A small stream: one SPS (no VUI timing), one PPS, then frames and fields as asked.
func syntheticStream(_ slices: [Synthetic.Slice], frameMbsOnly: Bool = true, extra: [Int: [[UInt8]]] = [:]) -> [UInt8] {
    var o = Synthetic.SPSOptions()
    o.frameMbsOnly = frameMbsOnly
    var nals = [Synthetic.sps(o), Synthetic.pps()]
    for (index, slice) in slices.enumerated() {
        nals += extra[index] ?? []
        nals.append(Synthetic.slice(slice, sps: o))
    }
    return Synthetic.annexB(nals)
}

@Suite struct SampleBufferBuilderTests {
    static let rate = FrameRate(30000, 1001)

    /// Without VUI timing: the assumed rate by default (said by `frameRateIsAssumed`), an error
    /// only when the caller asks for no fallback.
    @Test func missingTimingIsAssumedOrAnErrorOnRequest() throws {
        let stream = syntheticStream([.init(idr: true, type: 2, frameNum: 0), .init(frameNum: 1, pocLsb: 2)])
        let assumed = try SampleBufferBuilder.samples(fromAnnexB: stream)
        #expect(assumed.builder.frameRate == .assumedWithoutTiming && assumed.builder.frameRateIsAssumed)
        #expect(throws: BitstreamError.self) { try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: nil)) }
        do {
            _ = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: nil))
        } catch {
            #expect(error.code == .missingTiming)
        }
        let (samples, builder) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: Self.rate))
        #expect(samples.count == 2)
        #expect(builder.frameRate == Self.rate)
        #expect(!builder.frameRateIsFromStream)
        #expect(samples.map(\.duration) == [MediaTime(value: 1001, timescale: 30000), MediaTime(value: 1001, timescale: 30000)])
    }

    @Test func fieldPairsAreOneSample() throws {
        // IDR top+bottom pair, a P pair, an unpaired top field, a frame.
        let stream = syntheticStream([
            .init(idr: true, refIdc: 3, type: 2, frameNum: 0, field: false, pocLsb: 0),
            .init(refIdc: 3, type: 0, frameNum: 0, field: true, pocLsb: 1),
            .init(frameNum: 1, field: false, pocLsb: 4),
            .init(frameNum: 1, field: true, pocLsb: 5),
            .init(frameNum: 2, field: false, pocLsb: 8),
            .init(frameNum: 3, pocLsb: 12),
        ], frameMbsOnly: false)
        let (samples, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .fixed(FrameRate(25, 1)))
        #expect(samples.count == 4)
        #expect(try samples.map { try $0.nalUnits().count } == [2, 2, 1, 1])
        #expect(samples.map(\.isSync) == [true, false, false, false])
        #expect(samples.map(\.attachments.dependsOnOthers) == [true, true, true, true], "the IDR pair's second field is a P field")
    }

    /// B-pyramid: decode order I P B b b, display order I b B b P.
    @Test func presentationTimesFollowPictureOrder() throws {
        let stream = syntheticStream([
            .init(idr: true, type: 2, frameNum: 0, pocLsb: 0),
            .init(frameNum: 1, pocLsb: 16),
            .init(type: 1, frameNum: 2, pocLsb: 8),
            .init(refIdc: 0, type: 1, frameNum: 3, pocLsb: 4),
            .init(refIdc: 0, type: 1, frameNum: 3, pocLsb: 12),
            .init(idr: true, type: 2, frameNum: 0, pocLsb: 0),
        ])
        let (samples, builder) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .fixed(FrameRate(25, 1)))
        let pts = samples.map { $0.presentationTime.value }
        #expect(pts == [0, 4, 2, 1, 3, 5])
        let dts = samples.map { $0.decodeTime.value }
        let depth = builder.parser.firstPictureSPS!.reorderDepth
        #expect(dts == (0..<6).map { Int64($0 - depth) })
        #expect(samples.allSatisfy { $0.presentationTime >= $0.decodeTime })
        #expect(samples.map(\.attachments.isDependedOnByOthers) == [true, true, true, false, false, true])
    }

    @Test func parameterSetsMoveIntoTheFormatDescriptionOrStayInBand() throws {
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        let rate = SampleBufferBuilder.FrameRateSource.stream(fallback: FrameRate(25, 1))
        let (outOfBand, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: rate)
        let types = { (sample: SampleBuffer) in try sample.nalUnits().map { NALUnitHeader(byte: $0[0]).nalUnitType } }
        #expect(try outOfBand.allSatisfy { try !types($0).contains(.sps) && !types($0).contains(.pps) })
        #expect(outOfBand[0].videoFormatDescription?.sequenceParameterSets.count == 1)
        let (inBand, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(keepsParameterSetsInBand: true), frameRate: rate)
        #expect(try types(inBand[0]).prefix(2) == [.sps, .pps])
        #expect(inBand.count == outOfBand.count)
    }

    @Test(.requires(.ffmpeg, .x264)) func referencedNALUnitsGiveTheSameSamplesWithoutCopies() throws {
        let stream = try x264Stream(frames: 12, size: "640x360", arguments: ["--bframes", "2", "--slices", "2"])
        let rate = SampleBufferBuilder.FrameRateSource.stream(fallback: FrameRate(25, 1))
        let (copied, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: rate)
        let file = BlockBuffer(stream)
        var builder = SampleBufferBuilder(frameRate: rate)
        var referenced: [SampleBuffer] = []
        for nal in AnnexB.nalUnits(in: stream) {
            try builder.append(nalUnit: file[nal.payload], at: nal)
            while let sample = builder.nextSample() { referenced.append(sample) }
        }
        try builder.finish()
        while let sample = builder.nextSample() { referenced.append(sample) }
        #expect(referenced.count == copied.count)
        for (r, c) in zip(referenced, copied) {
            #expect(r.data == c.data)
            #expect(r.timing == c.timing)
            #expect(r.attachments == c.attachments)
        }
        let chained = referenced.filter { !$0.data.isContiguous }
        #expect(!chained.isEmpty, "large slices are referenced, not copied")
        #expect(chained.allSatisfy { $0.data.sharesStorage(with: file) })
        #expect(try chained.allSatisfy { try $0.nalUnits().count >= 2 })
    }

    @Test(arguments: [1, 2, 4])
    func lengthSizes(_ lengthSize: Int) throws {
        let stream = try Checkout.fixture("jcodec-test_b_8x8.264")
        let (samples, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(nalUnitLengthSize: lengthSize), frameRate: .fixed(FrameRate(25, 1)))
        #expect(samples.count == 3)
        #expect(samples.allSatisfy { $0.videoFormatDescription?.nalUnitLengthSize == lengthSize })
        let back = try AnnexBWriter.annexB(from: samples)
        #expect(nalUnits(back).filter { !isParameterSet($0) } == nalUnits(stream).filter { !isParameterSet($0) })
    }

    @Test func aNALUnitTooLongForTheLengthSizeIsAnError() throws {
        let stream = try Checkout.fixture("cisco-bframe-cabac.264")
        #expect(throws: BitstreamError.self) {
            try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(nalUnitLengthSize: 1), frameRate: .fixed(FrameRate(25, 1)))
        }
    }

    @Test(.requires(.ffmpeg, .x264)) func accessUnitDelimitersAreDroppedOnRequest() throws {
        let stream = try x264Stream(frames: 10, arguments: ["--aud", "--bframes", "2"])
        let (kept, _) = try SampleBufferBuilder.samples(fromAnnexB: stream)
        let (dropped, builder) = try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(dropsAccessUnitDelimiters: true))
        #expect(try kept.allSatisfy { try NALUnitHeader(byte: $0.nalUnits()[0][0]).nalUnitType == .accessUnitDelimiter })
        #expect(try dropped.allSatisfy { try $0.nalUnits().allSatisfy { NALUnitHeader(byte: $0[0]).nalUnitType != .accessUnitDelimiter } })
        #expect(builder.removedNALUnitCount >= 10)
    }
}

func nalUnits(_ stream: [UInt8]) -> [[UInt8]] { AnnexB.nalUnits(in: stream).map { Array(stream[$0.payload]) } }
func isParameterSet(_ nal: [UInt8]) -> Bool {
    let type = NALUnitHeader(byte: nal[0]).nalUnitType
    return type == .sps || type == .pps
}

/// Checks the sample-buffer rules on one stream; returns a failure description or nil.
func checkSamples(_ stream: [UInt8], expectedFrames: Int?) throws -> String? {
    let parsed = H264StreamParser.parse(annexB: stream)
    let (samples, builder) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: FrameRate(25, 1)))
    if samples.count != parsed.pictureCount { return "\(samples.count) samples for \(parsed.pictureCount) pictures" }
    if let expectedFrames, parsed.outputPictureCount == parsed.pictureCount, samples.count != expectedFrames {
        return "\(samples.count) samples, ffmpeg decodes \(expectedFrames) frames"
    }
    // PTS order is display order.
    let byPTS = samples.indices.sorted { samples[$0].presentationTime < samples[$1].presentationTime }
    if byPTS != parsed.decodeIndexesInDisplayOrder { return "PTS order \(byPTS.prefix(12)) is not display order \(parsed.decodeIndexesInDisplayOrder.prefix(12))" }
    if Set(samples.map(\.presentationTime.value)).count != samples.count { return "repeated PTS" }
    for (a, b) in zip(samples, samples.dropFirst()) where !(a.decodeTime < b.decodeTime) { return "DTS not increasing at \(b.decodeTime)" }
    if let bad = samples.first(where: { $0.presentationTime < $0.decodeTime }) { return "PTS before DTS: \(bad)" }
    if builder.droppedNALUnitCount > 0 {
        // Only slices no parameter set describes (broken streams) may be dropped; then the round trip cannot hold.
        return parsed.errorCount > 0 ? nil : "\(builder.droppedNALUnitCount) NAL units dropped from a clean stream"
    }
    // Round trip: in band, no insertion: the same NAL units in the same order.
    let (inBand, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(keepsParameterSetsInBand: true), frameRate: .stream(fallback: FrameRate(25, 1)))
    let original = nalUnits(stream)
    if nalUnits(try AnnexBWriter.annexB(from: inBand, insertsParameterSets: false)) != original { return "in-band round trip differs" }
    // Out of band: the same units apart from parameter sets, and SPS + PPS before the first IDR slice of every sample.
    var writer = AnnexBWriter()
    var rebuilt: [[UInt8]] = []
    for sample in samples {
        var chunk: [UInt8] = []
        try writer.append(sample, to: &chunk)
        let units = nalUnits(chunk)
        rebuilt += units
        let types = units.map { NALUnitHeader(byte: $0[0]).nalUnitType }
        if let idr = types.firstIndex(of: .idrSlice), !(types[..<idr].contains(.sps) && types[..<idr].contains(.pps)) {
            return "IDR sample at \(sample.decodeTime) without SPS/PPS before it"
        }
    }
    if rebuilt.filter({ !isParameterSet($0) }) != original.filter({ !isParameterSet($0) }) { return "out-of-band round trip differs" }
    return nil
}

@Suite struct SampleTimingOracleTests {
    @Test(arguments: ["cisco-bframe-cabac.264", "jcodec-random_1.264", "jcodec-test_b_8x8.264", "jcodec-i8x8-high.264"])
    func fixtures(_ name: String) throws {
        let failure = try checkSamples(try Checkout.fixture(name), expectedFrames: nil)
        #expect(failure == nil, "\(name): \(failure ?? "")")
    }

    /// x264 streams with B-pyramids, open GOPs and interlacing, checked against the parser's
    /// display order (itself checked against ffprobe) and the timing rules.
    @Test(.requires(.ffmpeg, .x264), arguments: [
        ["--bframes", "3", "--b-pyramid", "normal", "--keyint", "12"],
        ["--bframes", "5", "--b-pyramid", "strict", "--open-gop", "--keyint", "20"],
        ["--bframes", "2", "--tff"],
        ["--bframes", "0", "--keyint", "5"],
    ])
    func x264(_ arguments: [String]) throws {
        let stream = try x264Stream(frames: 48, arguments: arguments)
        let failure = try checkSamples(stream, expectedFrames: 48)
        #expect(failure == nil, "\(arguments): \(failure ?? "")")
        let (samples, builder) = try SampleBufferBuilder.samples(fromAnnexB: stream)
        #expect(builder.frameRateIsFromStream)
        #expect(samples.first?.duration == MediaTime(value: 1, timescale: 25))
        #expect(samples.map(\.presentationTime.value).sorted() == Array(0..<48))
    }
}

@Suite struct SampleBufferErrorTests {
    static func format() throws -> VideoFormatDescription {
        let (sps, pps) = parameterSets(try Checkout.fixture("jcodec-test_b_8x8.264"))
        return try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps)
    }

    static func sample(_ bytes: [UInt8]) throws -> SampleBuffer {
        let zero = MediaTime(value: 0, timescale: 1)
        return SampleBuffer(data: BlockBuffer(bytes), formatDescription: try format(),
                            timing: SampleTiming(presentationTime: zero, decodeTime: zero, duration: zero), attachments: SampleAttachments(isSync: true))
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var bytes: [UInt8]
        var code: BitstreamError.Code
        var byteOffset: Int
        var testDescription: String { "\(bytes)" }
    }
    static let cases: [Case] = [
        Case(bytes: [0, 0, 0, 9, 0x65, 1, 2], code: .invalidLength, byteOffset: 0),  // length past the end
        Case(bytes: [0, 0, 0, 2, 0x65, 1, 0, 0], code: .truncated, byteOffset: 6),  // cut-off length prefix
        Case(bytes: [0, 0, 0, 2, 0x65, 1, 0, 0, 0, 1, 0xE5], code: .invalidNALUnitHeader, byteOffset: 10),  // forbidden bit
    ]

    @Test(arguments: cases)
    func brokenFraming(_ c: Case) throws {
        let sample = try Self.sample(c.bytes)
        do {
            try sample.validate()
            Issue.record("no error")
        } catch {
            #expect(error.code == c.code)
            #expect(error.byteOffset == c.byteOffset)
        }
    }

    @Test func aBrokenSPSGivesNoFormatDescription() throws {
        var (sps, pps) = parameterSets(try Checkout.fixture("jcodec-test_b_8x8.264"))
        sps[0] = Array(sps[0].prefix(4))
        #expect(throws: BitstreamError.self) { try VideoFormatDescription(sequenceParameterSets: sps, pictureParameterSets: pps) }
    }
}

@Suite("Samples on the corpus (H264KIT_CORPUS)", .requiresCorpus)
struct CorpusSampleTests {
    static let rawStreams = Corpus.entries().filter { !$0.isContainer && !$0.ffmpegFailed }

    @Test(arguments: rawStreams.map(\.path))
    func samplesFollowTheRules(_ path: String) throws {
        let entry = Self.rawStreams.first { $0.path == path }!
        let failure = try checkSamples(try entry.bytes(), expectedFrames: entry.frames)
        #expect(failure == nil, "\(path): \(failure ?? "")")
    }
}

@Suite struct LoopTimelineTests {
    @Test("passes follow each other: the second pass of a B-frame stream starts where the first ends, times rising, shown order kept")
    func passesFollow() throws {
        // Decode order I P B B with a reorder delay of one frame (1/25 s each).
        let tick = MediaTime(value: 1, timescale: 25)
        let pass: [(pts: Int64, dts: Int64)] = [(1, 0), (4, 1), (2, 2), (3, 3)]
        var timeline = LoopTimeline()
        var placed: [(pts: MediaTime, dts: MediaTime)] = []
        for passNumber in 0..<3 {
            if passNumber > 0 { timeline.beginPass() }
            for (pts, dts) in pass {
                var sample = try SampleBufferErrorTests.sample([0, 0, 0, 1, 0x65])
                sample.timing = SampleTiming(presentationTime: tick * pts, decodeTime: tick * dts, duration: tick)
                timeline.place(&sample)
                placed.append((sample.presentationTime, sample.decodeTime))
            }
        }
        #expect(zip(placed, placed.dropFirst()).allSatisfy { $0.dts < $1.dts }, "decode times rise")
        #expect(placed[4].dts == tick * 4 && placed[4].pts == tick * 5 && placed[8].dts == tick * 8)
        #expect(timeline.end == tick * 12 && timeline.offset == tick * 8)
        let shown = placed.map(\.pts).sorted { $0 < $1 }
        #expect(shown == (1...12).map { tick * Int64($0) }, "every frame shown once, a tick apart")
    }

    @Test("with sound beside the picture, every track of a pass moves by one shift: the longest track (here the sound, a priming frame ahead) runs on exactly, frame after frame, the picture waits the difference, shifted within one of its ticks of the sound")
    func theLongestTrackRunsOn() throws {
        // A picture of 4 frames (1/25 s) from 0, and a sound of 1024-sample frames at 48 kHz from
        // -1024 (priming) to 9 frames: 0.2133 s against the picture's 0.16 s.
        let frame = MediaTime(value: 1, timescale: 25), sound = MediaTime(value: 1024, timescale: 48_000)
        var timeline = LoopTimeline()
        var pictures: [MediaTime] = [], sounds: [MediaTime] = []
        for passNumber in 0..<50 {
            if passNumber > 0 { timeline.beginPass() }
            var items: [(time: MediaTime, isSound: Bool)] = (0..<4).map { (frame * Int64($0), false) } + (-1..<9).map { (sound * Int64($0), true) }
            items.sort { $0.time < $1.time }
            for item in items {
                var sample = try SampleBufferErrorTests.sample([0, 0, 0, 1, 0x65])
                sample.trackID = TrackID(rawValue: item.isSound ? 2 : 1)
                sample.timing = SampleTiming(presentationTime: item.time, decodeTime: item.time, duration: item.isSound ? sound : frame)
                timeline.place(&sample)
                if item.isSound { sounds.append(sample.decodeTime) } else { pictures.append(sample.decodeTime) }
            }
        }
        // (The sound's 10 frames, 10240/48000 s a pass: the sound moves by it exactly, the
        // picture by it rounded up to a tick of 12800, the timescale a writer takes for 25.)
        let steps = zip(sounds, sounds.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 == sound }, "the sound runs on, each frame exactly a frame after the one before: \(steps.map(\.seconds))")
        #expect(zip(pictures, pictures.dropFirst()).allSatisfy { $1 - $0 >= frame }, "the pictures rise, never closer than a frame")
        #expect(timeline.offset == MediaTime(value: 49 * 10240, timescale: 48_000), "each pass moves by the sound's length: \(timeline.offset.seconds)")
        // 49 x 10240/48000 s = 133802.67/12800 s: 133803 ticks (rounding each pass's own would
        // have gathered 49 x 2731 = 133819).
        let pictureShift = timeline.offset(of: TrackID(rawValue: 1))
        #expect(pictureShift == MediaTime(value: 133_803, timescale: 12800), "the picture's shift, whole in 12800, not accumulating: \(pictureShift)")
        #expect(pictures[49 * 4] == pictureShift, "the last pass's first picture")
    }

    @Test("a sound whose last frame an edit list cuts short (FFmpeg's -shortest): the next pass starts after the whole frame, never inside it")
    func aCutLastFrameIsFollowedWhole() throws {
        // A sound of 10 AAC frames at 48 kHz, the last cut to 768 samples, beside a picture of
        // 5 frames of 1/25 s (0.2 s: shorter than the sound's 0.2133 s, longer than its cut 0.208 s).
        let frame = MediaTime(value: 1, timescale: 25), sound = MediaTime(value: 1024, timescale: 48_000)
        let format = FormatDescription.audio(AudioFormatDescription(codec: "mp4a", sampleRate: 48_000, channelCount: 2, framesPerPacket: 1024))
        var timeline = LoopTimeline()
        var sounds: [MediaTime] = []
        for passNumber in 0..<3 {
            if passNumber > 0 { timeline.beginPass() }
            var items: [(time: MediaTime, isSound: Bool)] = (0..<5).map { (frame * Int64($0), false) } + (0..<10).map { (sound * Int64($0), true) }
            items.sort { $0.time < $1.time }
            for item in items {
                var sample: SampleBuffer
                if item.isSound {
                    let duration = item.time == sound * 9 ? MediaTime(value: 768, timescale: 48_000) : sound
                    sample = SampleBuffer(data: BlockBuffer([0x21, 0x10]), formatDescription: format,
                                          timing: SampleTiming(presentationTime: item.time, decodeTime: item.time, duration: duration), attachments: SampleAttachments(isSync: true), trackID: TrackID(rawValue: 2))
                } else {
                    sample = try SampleBufferErrorTests.sample([0, 0, 0, 1, 0x65])
                    sample.trackID = TrackID(rawValue: 1)
                    sample.timing = SampleTiming(presentationTime: item.time, decodeTime: item.time, duration: frame)
                }
                timeline.place(&sample)
                if item.isSound { sounds.append(sample.decodeTime) }
            }
        }
        let steps = zip(sounds, sounds.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 == sound }, "every frame exactly after the whole frame before: \(steps.map(\.seconds))")
    }

    @Test("a first pass that began after the file's start (a seek): the second follows all of it, and the later ones run the longest track on")
    func aPartialFirstPass() throws {
        let frame = MediaTime(value: 1, timescale: 25)
        var timeline = LoopTimeline(firstPassIsWhole: false)
        var times: [MediaTime] = []
        for (passNumber, range) in [(0, 2..<4), (1, 0..<4), (2, 0..<4)] {
            if passNumber > 0 { timeline.beginPass() }
            for index in range {
                var sample = try SampleBufferErrorTests.sample([0, 0, 0, 1, 0x65])
                sample.timing = SampleTiming(presentationTime: frame * Int64(index), decodeTime: frame * Int64(index), duration: frame)
                timeline.place(&sample)
                times.append(sample.decodeTime)
            }
        }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == frame }, "one frame apart throughout: \(times.map(\.seconds))")
    }
}
