import ISOBMFF
import MPEGTS
import MediaCore
import SampleFlow
import TestSupport
import Testing

/// The segmenter's parts (fragments of at most a part duration, for low-latency HLS): none is
/// longer, none shorter than the part duration less a frame except a segment's last, each
/// marked on the chunk that completes it, and a segment's chunks adding up to its report.
@Suite("MediaSegmenter parts")
struct MediaSegmenterPartTests {
    @Test(arguments: [MediaTime(value: 1, timescale: 2), MediaTime(value: 1, timescale: 3), MediaTime(value: 1, timescale: 5)])
    func partsKeepTheirDuration(_ part: MediaTime) throws {
        let samples = try MediaSource(path: SampleFlowTests.stream).readAll()
        let frame = try #require(samples.first?.duration)
        var segmenter = try MediaSegmenter(options: .init(segmentDuration: MediaTime(value: 2, timescale: 1), partDuration: part))
        var bytes: [Int: Int] = [:]
        var marked: [Int: [MediaSegmenter.FragmentReport]] = [:]
        var reports: [MediaSegmenter.SegmentReport] = []
        func take(_ output: MediaSegmenter.Output) {
            for chunk in output.chunks {
                bytes[chunk.segment, default: 0] += chunk.data.count
                if let fragment = chunk.completedFragment { marked[chunk.segment, default: []].append(fragment) }
            }
            reports += output.completed
        }
        for sample in samples { take(try segmenter.append(sample)) }
        take(try segmenter.finish())
        #expect(reports.count >= 2)
        for report in reports {
            #expect(bytes[report.index] == report.byteCount, "segment \(report.index): its chunks are its bytes")
            #expect(marked[report.index] == report.fragments, "segment \(report.index): each fragment marked on the chunk that completes it")
            #expect(report.fragments.first?.startsWithSyncSample == true)
            for (index, fragment) in report.fragments.enumerated() {
                #expect(fragment.duration <= part, "segment \(report.index) part \(index): \(fragment.duration.seconds) s")
                if index < report.fragments.count - 1 {
                    #expect(fragment.duration + frame > part, "segment \(report.index) part \(index): \(fragment.duration.seconds) s, a frame short of \(part.seconds) s at most")
                }
            }
            // Each I-frame lasts until the next sync sample (or the segment's end), whatever the parts.
            let iFrames = report.syncSamples.map(\.duration).reduce(MediaTime.zero, +)
            #expect(iFrames == report.fragments.map(\.duration).reduce(MediaTime.zero, +), "segment \(report.index): the I-frames cover it")
            let total = report.fragments.map(\.duration).reduce(MediaTime.zero, +)
            #expect(total == report.duration || report.index == reports.count - 1, "segment \(report.index): its parts add up to it")
        }
    }

    @Test("a gap in the decoding times at a cut (a loop's seam: the picture waits for its longer sound) lengthens the closing segment, as the writer lengthens its last picture: the segments' durations add up to the stream's span, fMP4 and TS", arguments: [MediaSegmenter.Format.fragmentedMP4, .transportStream])
    func aGapAtACutLengthensTheSegment(_ format: MediaSegmenter.Format) throws {
        let samples = try MediaSource(path: SampleFlowTests.stream).readAll()
        // The stream twice, the second pass 1/30 s after the first's end.
        let first = try #require(samples.first), last = try #require(samples.last)
        let gap = MediaTime(value: 1, timescale: 30)
        let shift = last.decodeTime + last.duration - first.decodeTime + gap
        let twice = samples + samples.map { sample in
            var moved = sample
            moved.timing.presentationTime = sample.presentationTime + shift
            moved.timing.decodeTime = sample.decodeTime + shift
            return moved
        }
        var segmenter = try MediaSegmenter(options: .init(format: format, segmentDuration: MediaTime(value: 1, timescale: 1)))
        var reports: [MediaSegmenter.SegmentReport] = []
        for sample in twice { reports += try segmenter.append(sample).completed }
        reports += try segmenter.finish().completed
        let total = reports.map(\.duration).reduce(MediaTime.zero, +)
        let span = shift * 2 - gap
        #expect(abs((total - span).seconds) < 1e-6, "the segments add up to \(total.seconds) s; the stream spans \(span.seconds) s")
    }
}
