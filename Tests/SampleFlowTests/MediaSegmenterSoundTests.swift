import Foundation
import ISOBMFF
import MediaCore
import SampleFlow
import TestSupport
import Testing

/// A fragmented MP4 segmenter of sound: AAC cut on the segment schedule (an audio-only
/// rendition) or where the caller says (a picture's boundaries), one fragment a segment, on a
/// time origin shared with the picture; and what it refuses.
@Suite("MediaSegmenter sound", .requires(.ffmpeg))
struct MediaSegmenterSoundTests {
    /// 7 s of 48 kHz stereo AAC as ADTS, by FFmpeg: 329 frames of 1024 samples.
    static let frames: [SampleBuffer] = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-segmenter-sound-\(getpid()).aac").path
        _ = try? run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "7", "-ac", "2", "-c:a", "aac", path])
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard let reader = try? ADTSReader(path: path) else { return [] }
        var frames: [SampleBuffer] = []
        while let frame = try? reader.next() { frames.append(frame) }
        return frames
    }()

    static func take(_ output: MediaSegmenter.Output, into reports: inout [MediaSegmenter.SegmentReport], bytes: inout [Int: Int]) {
        for chunk in output.chunks { bytes[chunk.segment, default: 0] += chunk.data.count }
        reports += output.completed
    }

    @Test("on the schedule: a segment at each multiple of the duration within a frame, one fragment each, every segment independent, the chunks its bytes")
    func soundAloneIsCutOnTheSchedule() throws {
        let frames = Self.frames
        try #require(frames.count > 300)
        var segmenter = try MediaSegmenter(options: .init(segmentDuration: MediaTime(value: 2, timescale: 1)))
        var reports: [MediaSegmenter.SegmentReport] = [], bytes: [Int: Int] = [:]
        for frame in frames { Self.take(try segmenter.append(frame), into: &reports, bytes: &bytes) }
        Self.take(try segmenter.finish(), into: &reports, bytes: &bytes)
        #expect(segmenter.audioFormatDescription?.sampleRate == 48000 && segmenter.formatDescription == nil)
        #expect(reports.count == 4, "\(reports.map(\.duration.seconds))")
        let frame = 1024.0 / 48000
        for report in reports {
            #expect(report.fragments.count == 1 && report.isIndependent && report.startsWithIDR)
            #expect(bytes[report.index] == report.byteCount)
            if report.index < reports.count - 1 {
                let end = (report.earliestPresentationTime + report.duration).seconds
                #expect(end >= Double(report.index + 1) * 2 && end < Double(report.index + 1) * 2 + frame, "segment \(report.index) ends at \(end)")
            }
        }
        #expect(reports.map(\.sampleCount).reduce(0, +) == frames.count)
        // The initialization segment is a sound track's: `soun`, `mp4a`, `esds`.
        let initialization = try #require(segmenter.initializationSegment)
        for type in ["soun", "mp4a", "esds", "smhd"] {
            let tag = Array(type.utf8)
            #expect((0..<(initialization.count - 4)).contains { Array(initialization[$0..<($0 + 4)]) == tag }, "no \(type)")
        }
    }

    @Test("where the caller cuts, on a shared origin: the fragments' times are the source's less the origin; a cut before a frame that is not a sync sample, a frame decoded before the origin, a picture after sound are refused")
    func soundIsCutWhereTheCallerSays() throws {
        let frames = Self.frames
        try #require(frames.count > 300)
        let origin = frames[0].decodeTime - MediaTime(value: 1, timescale: 10)
        var segmenter = try MediaSegmenter(options: .init(timeOrigin: origin))
        var reports: [MediaSegmenter.SegmentReport] = [], bytes: [Int: Int] = [:]
        for (index, frame) in frames.enumerated() {
            Self.take(try segmenter.append(frame, startsSegment: index == 100 || index == 200), into: &reports, bytes: &bytes)
        }
        Self.take(try segmenter.finish(), into: &reports, bytes: &bytes)
        #expect(reports.map(\.sampleCount) == [100, 100, frames.count - 200])
        #expect(reports.first?.earliestPresentationTime == MediaTime(value: 1, timescale: 10))
        #expect(reports[1].earliestPresentationTime == frames[100].presentationTime - origin)

        var late = try MediaSegmenter(options: .init(timeOrigin: frames[1].decodeTime))
        #expect(throws: SampleFlowError.self) { _ = try late.append(frames[0]) }
        var mixed = try MediaSegmenter()
        _ = try mixed.append(frames[0])
        let picture = try #require(try MediaSource(path: SampleFlowTests.stream).readAll().first)
        #expect(throws: SampleFlowError.self) { _ = try mixed.append(picture) }
        var video = try MediaSegmenter()
        let pictures = try MediaSource(path: SampleFlowTests.stream).readAll()
        _ = try video.append(pictures[0])
        let notSync = try #require(pictures.first { !$0.isSync })
        #expect(throws: SampleFlowError.self) { _ = try video.append(notSync, startsSegment: true) }
    }
}
