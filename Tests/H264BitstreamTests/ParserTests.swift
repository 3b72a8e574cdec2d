import Foundation
import TestSupport
import Testing
@testable import H264Bitstream

/// ffprobe's figures for a stream (ffmpeg 5.1, as the corpus MANIFEST records them).
struct FFprobeFigures: Sendable, CustomTestStringConvertible {
    var file: String
    var profile: String
    var level: Int
    var width: Int
    var height: Int
    var pixelFormat: String
    var frames: Int
    var testDescription: String { file }

    /// Checks a parsed stream against the figures.
    func check(_ parser: H264StreamParser, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sps = try #require(parser.firstPictureSPS, "no SPS", sourceLocation: sourceLocation)
        #expect(sps.profileName == profile, sourceLocation: sourceLocation)
        #expect(Int(sps.levelIdc) == level, sourceLocation: sourceLocation)
        #expect(sps.width == width, sourceLocation: sourceLocation)
        #expect(sps.height == height, sourceLocation: sourceLocation)
        #expect(sps.pixelFormatName == pixelFormat, sourceLocation: sourceLocation)
        #expect(parser.outputPictureCount == frames, sourceLocation: sourceLocation)
    }
}

@Suite("Stream parser on fixtures")
struct FixtureTests {
    static let expectations: [FFprobeFigures] = [
        .init(file: "jcodec-test_b_8x8.264", profile: "Main", level: 40, width: 32, height: 32, pixelFormat: "yuv420p", frames: 3),
        .init(file: "jcodec-random_1.264", profile: "Main", level: 21, width: 480, height: 270, pixelFormat: "yuv420p", frames: 1),
        .init(file: "jcodec-i8x8-high.264", profile: "High", level: 40, width: 64, height: 64, pixelFormat: "yuv420p", frames: 1),
        .init(file: "cisco-bframe-cabac.264", profile: "Main", level: 52, width: 640, height: 320, pixelFormat: "yuv420p", frames: 9),
    ]

    @Test(arguments: expectations)
    func matchesFFprobe(_ e: FFprobeFigures) throws {
        let parser = H264StreamParser.parse(annexB: try Fixtures.bytes(e.file))
        try e.check(parser)
        #expect(parser.errorCount == 0)
        // Display order is a permutation of decode order.
        #expect(parser.decodeIndexesInDisplayOrder.sorted() == Array(0..<parser.pictureCount))
    }

    @Test func bFramesAfterASecondIDRDisplayBeforeIt() throws {
        // ffprobe -show_entries frame=coded_picture_number lists 0 2 3 4 5 6 7 8 1.
        let parser = H264StreamParser.parse(annexB: try Fixtures.bytes("cisco-bframe-cabac.264"))
        #expect(parser.decodeIndexesInDisplayOrder == [0, 2, 3, 4, 5, 6, 7, 8, 1])
    }

    @Test func randomOneHasCroppingTimingAndPOCType2() throws {
        let parser = H264StreamParser.parse(annexB: try Fixtures.bytes("jcodec-random_1.264"))
        let sps = try #require(parser.firstPictureSPS)
        #expect(sps.picOrderCntType == 2)
        #expect(sps.frameCroppingFlag)
        #expect((sps.codedWidth, sps.codedHeight) == (480, 272))
        // time_scale 50, num_units_in_tick 1: two ticks a frame, 25 fps (ffprobe: r_frame_rate 25/1).
        #expect(sps.frameRate == FrameRate(25, 1))
    }

    @Test func fmoSliceGroupsParse() throws {
        // libavcodec rejects FMO; the parser must still read the slice-group syntax.
        let parser = H264StreamParser.parse(annexB: try Fixtures.bytes("jcodec-fmo-explicit.264"))
        #expect(parser.errorCount == 0)
        let pps = try #require(parser.registry.pps(0))
        #expect(pps.numSliceGroupsMinus1 > 0)
        guard case .explicit(let ids)? = pps.sliceGroupMap else { Issue.record("expected slice_group_map_type 6"); return }
        #expect(ids.count == parser.firstPictureSPS?.picSizeInMapUnits)
        #expect(parser.pictureCount > 1)
    }
}

@Suite("Picture order count and access units (synthetic streams)")
struct POCTests {
    @Test func pocType0WrapsAndResetsAtIDR() {
        let o = Synthetic.SPSOptions()
        var nals = [Synthetic.sps(o), Synthetic.pps()]
        // IDR (lsb 0), P lsb 60, P lsb 4 (wraps: 64 + 4), then IDR again.
        nals.append(Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0, pocLsb: 0), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 1, pocLsb: 30), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 2, pocLsb: 60), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 3, pocLsb: 4), sps: o))
        nals.append(Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0, pocLsb: 8), sps: o))
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB(nals))
        #expect(parser.errorCount == 0)
        #expect(parser.pictures.map(\.picOrderCnt) == [0, 30, 60, 68, 8])
    }

    @Test func pocType1FollowsTheCycle() {
        var o = Synthetic.SPSOptions()
        o.picOrderCntType = 1
        o.offsetForRefFrame = [4, 2]
        o.offsetForNonRefPic = -3
        var nals = [Synthetic.sps(o), Synthetic.pps()]
        nals.append(Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 1), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 2), sps: o))
        nals.append(Synthetic.slice(.init(refIdc: 0, type: 1, frameNum: 3), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 3, deltaPicOrderCnt0: 1), sps: o))
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB(nals))
        #expect(parser.errorCount == 0)
        // §8.2.1.2: absFrameNum 0 → 0; 1 → 4; 2 → 4+2 = 6; non-ref frame_num 3 → abs 2 → 6 − 3 = 3;
        // ref frame_num 3 → abs 3 → cycle 1 offset 4 → 6 + 4 = 10, + delta 1 = 11.
        #expect(parser.pictures.map(\.picOrderCnt) == [0, 4, 6, 3, 11])
        #expect(parser.decodeIndexesInDisplayOrder == [0, 3, 1, 2, 4])
    }

    @Test func pocType2AndMMCO5StartANewPeriod() {
        var o = Synthetic.SPSOptions()
        o.picOrderCntType = 2
        var nals = [Synthetic.sps(o), Synthetic.pps()]
        nals.append(Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 1), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 2, mmco5: true), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 1), sps: o))  // frame_num restarts after MMCO 5
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB(nals))
        #expect(parser.errorCount == 0)
        #expect(parser.pictures.map(\.picOrderCnt) == [0, 2, 4, 2])
        #expect(parser.pictures[2].hasMMCO5)
        #expect(parser.decodeIndexesInDisplayOrder == [0, 1, 2, 3])
    }

    @Test func complementaryFieldsCountAsOneFrame() {
        var o = Synthetic.SPSOptions()
        o.frameMbsOnly = false
        var nals = [Synthetic.sps(o), Synthetic.pps()]
        nals.append(Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0, field: false, pocLsb: 0), sps: o))
        nals.append(Synthetic.slice(.init(refIdc: 3, type: 0, frameNum: 0, field: true, pocLsb: 1), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 1, field: false, pocLsb: 4), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 1, field: true, pocLsb: 5), sps: o))
        nals.append(Synthetic.slice(.init(frameNum: 2, field: false, pocLsb: 8), sps: o))  // unpaired field
        nals.append(Synthetic.slice(.init(frameNum: 3, pocLsb: 12), sps: o))  // a frame
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB(nals))
        #expect(parser.errorCount == 0)
        #expect(parser.accessUnitCount == 6)
        #expect(parser.pictures.map(\.structure) == [.fieldPair, .fieldPair, .topField, .frame])
        #expect(parser.pictures.map(\.picOrderCnt) == [0, 4, 8, 12])
        #expect(parser.firstPictureSPS?.isInterlaced == true)
        #expect(parser.firstPictureSPS?.height == 9 * 2 * 16)
    }

    @Test func accessUnitBoundariesFollowClause7_4_1_2_4() {
        let o = Synthetic.SPSOptions()
        let first = Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0), sps: o)
        // Two slices of one picture (same header fields), then a new picture by frame_num.
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB([
            Synthetic.sps(o), Synthetic.pps(), first, first,
            Synthetic.slice(.init(frameNum: 1, pocLsb: 2), sps: o),
            Synthetic.slice(.init(frameNum: 1, pocLsb: 2), sps: o),
            // Same frame_num, but non-reference vs reference: a new picture.
            Synthetic.slice(.init(refIdc: 0, frameNum: 2, pocLsb: 3), sps: o),
            Synthetic.slice(.init(refIdc: 0, frameNum: 2, pocLsb: 4), sps: o),  // POC lsb differs: new picture
        ]))
        #expect(parser.pictureCount == 4)
        #expect(parser.accessUnitCount == 4)
    }
}

@Suite("Errors name what and where")
struct ParserErrorTests {
    @Test func absurdPOCCycleIsAnError() throws {
        var o = Synthetic.SPSOptions()
        o.picOrderCntType = 1
        o.pocCycleCountOverride = 300
        let sps = Synthetic.sps(o)
        let error = #expect(throws: BitstreamError.self) { try SequenceParameterSet(nalUnit: sps.span) }
        #expect(error?.code == .valueOutOfRange)
        #expect(error?.reason.contains("num_ref_frames_in_pic_order_cnt_cycle = 300 exceeds 255") == true)
        #expect(error?.byteOffset != nil)
    }

    @Test func croppingLargerThanThePictureIsAnError() {
        var o = Synthetic.SPSOptions()
        o.crop = (0, 0, 100, 100)
        let error = #expect(throws: BitstreamError.self) { try SequenceParameterSet(nalUnit: Synthetic.sps(o).span) }
        #expect(error?.reason.contains("frame cropping") == true)
    }

    @Test func errorsInAStreamCarryTheByteOffsetAndNALIndex() {
        var o = Synthetic.SPSOptions()
        o.picOrderCntType = 1
        o.pocCycleCountOverride = 300
        let stream = Synthetic.annexB([Synthetic.sps(Synthetic.SPSOptions()), Synthetic.pps(), Synthetic.sps(o)])
        let parser = H264StreamParser.parse(annexB: stream)
        #expect(parser.errorCount == 1)
        let diagnostic = parser.diagnostics.first { $0.severity == .error }
        #expect(diagnostic?.error.nalIndex == 2)
        let offset = AnnexB.nalUnits(in: stream)[2].payload.lowerBound
        #expect((diagnostic?.error.byteOffset ?? 0) > offset)
        #expect(diagnostic?.description.contains("SPS") == true)
    }

    @Test func sliceWithoutParameterSetsIsReported() {
        let o = Synthetic.SPSOptions()
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB([Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0), sps: o)]))
        #expect(parser.errorCount == 1)
        #expect(parser.diagnostics.first?.error.code == .missingParameterSet)
        #expect(parser.pictureCount == 0)
    }

    @Test func truncatedSPSIsEndOfData() {
        let sps = Synthetic.sps(Synthetic.SPSOptions())
        let cut = Array(sps.prefix(5))
        let error = #expect(throws: BitstreamError.self) { try SequenceParameterSet(nalUnit: cut.span) }
        #expect(error?.code == .endOfData)
    }

    @Test func randomBytesNeverCrash() {
        var rng = SeededGenerator(seed: 7)
        for _ in 0..<300 {
            var bytes = (0..<Int.random(in: 0...400, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Sprinkle start codes followed by parameter-set and slice headers.
            for _ in 0..<4 where bytes.count > 8 {
                let at = Int.random(in: 0..<(bytes.count - 5), using: &rng)
                bytes[at] = 0; bytes[at + 1] = 0; bytes[at + 2] = 1
                bytes[at + 3] = [0x67, 0x68, 0x65, 0x41, 0x06][Int.random(in: 0..<5, using: &rng)]
            }
            let parser = H264StreamParser.parse(annexB: bytes)
            #expect(parser.nalUnitCount >= 0)
        }
    }
}

@Suite("Against x264 and ffprobe")
struct OracleTests {
    struct Encoding: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var testDescription: String { arguments.joined(separator: " ") }
    }
    static let encodings: [Encoding] = [
        .init(arguments: ["--preset", "medium", "--bframes", "3", "--b-pyramid", "normal", "--keyint", "24"]),
        .init(arguments: ["--preset", "veryfast", "--bframes", "2", "--b-pyramid", "none", "--open-gop", "--keyint", "20"]),
        .init(arguments: ["--profile", "baseline", "--keyint", "10"]),
        .init(arguments: ["--preset", "fast", "--tff", "--bframes", "2"]),
        .init(arguments: ["--preset", "fast", "--slices", "4", "--bframes", "3", "--weightp", "2"]),
        .init(arguments: ["--preset", "fast", "--output-csp", "i444", "--profile", "high444"]),
        .init(arguments: ["--preset", "fast", "--output-csp", "i422", "--profile", "high422", "--fps", "30000/1001"]),
    ]

    @Test(.requires(.ffmpeg, .ffprobe, .x264), arguments: encodings)
    func displayOrderAndCountsMatchFFprobe(_ encoding: Encoding) throws {
        let stream = try x264Stream(frames: 60, arguments: encoding.arguments)
        let parser = H264StreamParser.parse(annexB: stream)
        #expect(parser.errorCount == 0)
        #expect(parser.outputPictureCount == 60)
        let expected = try ffprobeDisplayOrder(stream)
        #expect(parser.decodeIndexesInDisplayOrder == expected)
    }

    @Test(.requires(.ffmpeg, .x264)) func x264StreamFrameRateIsExact() throws {
        let stream = try x264Stream(frames: 5, arguments: ["--fps", "30000/1001"])
        let parser = H264StreamParser.parse(annexB: stream)
        #expect(parser.firstPictureSPS?.frameRate == FrameRate(30000, 1001))
        #expect(parser.seiCounts[5] == 1)  // x264's settings in user data unregistered
    }
}

@Suite("Review regressions")
struct ReviewRegressionTests {
    @Test func aParameterSetBetweenSlicesDoesNotSplitThePicture() {
        let o = Synthetic.SPSOptions()
        let pps = Synthetic.pps()
        let idr = Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0), sps: o)
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB([Synthetic.sps(o), pps, idr, pps, idr,
                                                                      Synthetic.slice(.init(frameNum: 1, pocLsb: 2), sps: o)]))
        #expect(parser.errorCount == 0)
        #expect(parser.pictureCount == 2)
    }

    @Test func hostilePOCType1OffsetsWrapInsteadOfTrapping() {
        var o = Synthetic.SPSOptions()
        o.picOrderCntType = 1
        o.offsetForRefFrame = [Int32.max]
        o.log2MaxFrameNumMinus4 = 12
        var nals = [Synthetic.sps(o), Synthetic.pps(), Synthetic.slice(.init(idr: true, refIdc: 3, type: 2, frameNum: 0), sps: o)]
        // frame_num counting down makes FrameNumOffset grow by MaxFrameNum (65536) every
        // picture: past 65536 pictures, absFrameNum × (2^31 − 1) exceeds Int.max.
        let pictures = 65_600
        for k in 0..<pictures { nals.append(Synthetic.slice(.init(frameNum: UInt32(65_535 - k % 65_536)), sps: o)) }
        let parser = H264StreamParser.parse(annexB: Synthetic.annexB(nals))
        #expect(parser.pictureCount == pictures + 1)
    }

    @Test func avccRejectsALengthSizeOfThree() {
        let bytes: [UInt8] = [0, 0, 1, 0x65]
        #expect(throws: BitstreamError.self) { try AVCC.nalUnitRanges(in: bytes.span, lengthSize: 3) }
        #expect(FrameRate(parsing: "18446744073709551615.5") == nil)
        #expect(FrameRate(parsing: "29.97") == FrameRate(2997, 100))
        #expect(FrameRate(parsing: "30000/1001") == FrameRate(30000, 1001))
    }
}
