import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import MediaCore
import MediaProbe
import SampleFlow
import TestSupport
import Testing

/// The reports `inspect` and `timecode` print, from a stream and from a movie, with no codec:
/// counts that follow from the sample stream (90 frames of 320x240 at 30000/1001 with
/// B-frames, an IDR picture each second), records of its NAL units and samples, JSON that
/// decodes back.
@Suite("MediaProbe")
struct MediaProbeTests {
    static let stream = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    @Test func aStreamsSummary() throws {
        let result = try StreamProbe.probe(path: Self.stream)
        let summary = result.summary
        #expect(summary.width.value == 320 && summary.height.value == 240 && summary.pixelFormat.value == "yuv420p")
        #expect(summary.frameRate.value == "30000/1001" && summary.frameCount == 90 && summary.idrCount == 3)
        #expect(summary.nalCounts["SPS"] != nil && summary.nalUnitCount == result.parser.nalUnitCount)
        #expect(!result.interrupted && result.parser.errorCount == 0)
        let json = try JSONEncoder().encode(summary)
        #expect(try JSONDecoder().decode(StreamSummary.self, from: json) == summary)
        #expect(summary.text(name: "s.264").contains("320x240"))
    }

    @Test func nalUnitsAndSamplesAreListedAsTheyAreRead() throws {
        var units: [NALUnitRecord] = []
        let listed = try StreamProbe.probe(path: Self.stream, options: .init(listsNALUnits: true), onNALUnit: { units.append($0) })
        #expect(units.count == listed.summary.nalUnitCount && listed.summary.nalUnits?.count == units.count)
        #expect(units.first.map { $0.offset == 0 } == true)
        var samples: [SampleRecord] = []
        let timed = try StreamProbe.probe(path: Self.stream, options: .init(listsSamples: true, keepsRecords: false), onSample: { samples.append($0) })
        #expect(samples.count == 90 && timed.summary.samples == nil, "records kept only when asked")
        #expect(samples.filter(\.sync).count == 3)
    }

    @Test func aMoviesSummaryAndTimecode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-probe-\(UUID().uuidString).mov").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = MovieWriter.Options(fileType: .mov)
        options.timecode = try MovieWriter.TimecodeTrack(format: TimecodeFormatDescription(frameRate: (30000, 1001), dropFrame: true), start: Timecode(parsing: "01:00:00;00"))
        let sink = try MovieSink(path: path, options: options)
        let reader = try SampleBufferReader(path: Self.stream)
        while let sample = try reader.next() { try sink.append(sample) }
        _ = try sink.finish()
        let movie = try MovieReader(path: path)
        let summary = MovieSummary(movie)
        let video = try #require(summary.tracks.first { $0.handler == "vide" })
        #expect(video.width == 320 && video.height == 240 && video.sampleCount == 90 && video.syncSampleCount == 3)
        #expect(summary.tracks.first { $0.timecode != nil }?.timecode?.start == "01:00:00;00", "the timecode track's start")
        let report = try TimecodeReport(movie, includesFrames: true)
        #expect(report.start == "01:00:00;00" && report.dropFrame && report.frames?.count == 90)
        #expect(report.frames?.last?.timecode == "01:00:02;29")
    }

    @Test func garbageIsNoStream() throws {
        let path = try Checkout.temporaryFile([UInt8](repeating: 0x42, count: 4096))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect { try StreamProbe.probe(path: path) } throws: { ($0 as? SampleFlowError)?.bitstreamError?.code == .noPicture }
    }
}
