import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import MediaCore
import SampleFlow
import SystemIO
import SystemPackage
import TestSupport
import Testing

/// The one source and one sink abstraction, and the remux jobs on them, with no codec: a
/// stream muxed and demuxed gives back its samples; a sink shows nothing until its finish and
/// leaves nothing when cancelled; errors carry the layer's error and the place.
@Suite("Sample flow")
struct SampleFlowTests {
    static let stream = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    static func work() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-flow-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func everySinkGivesBackTheSamplesItTook() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let samples = try MediaSource(path: Self.stream).readAll()
        #expect(samples.count == 90)
        for output in [SampleOutput(path: work + "/a.mp4"), SampleOutput(path: work + "/a.mov"), SampleOutput(path: work + "/a.264")] {
            let sink = try output.makeSink()
            for sample in samples { try sink.append(sample) }
            #expect(!FileManager.default.fileExists(atPath: output.path), "\(output.path) visible before its finish")
            let summary = try sink.finish()
            #expect(summary.samples == 90 && summary.bytes > 0)
            let back = try MediaSource(path: output.path).readAll()
            #expect(back.map(\.data) == samples.map(\.data), "\(output.path): the samples' bytes")
            #expect(back.map(\.presentationTime) == samples.map(\.presentationTime), "\(output.path): the samples' times")
        }
    }

    @Test func aCancelledSinkLeavesNothing() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let samples = try MediaSource(path: Self.stream).readAll()
        for name in ["b.mp4", "b.264"] {
            let sink = try SampleOutput(path: work + "/" + name).makeSink()
            for sample in samples.prefix(10) { try sink.append(sample) }
            sink.cancel()
            let left = try FileManager.default.contentsOfDirectory(atPath: work)
            #expect(left.isEmpty, "\(name): \(left)")
        }
        // A sink let go without a finish leaves nothing either.
        do {
            let sink = try AnnexBSink(path: work + "/c.264")
            try sink.append(samples[0])
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: work).isEmpty)
    }

    @Test func muxThenDemuxGivesBackTheStream() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let muxed = try StreamMuxer().run(path: Self.stream, to: work + "/m.mp4")
        #expect(muxed.movie?.sampleCount == 90 && muxed.frameRate == FrameRate(30000, 1001) && !muxed.interrupted)
        let demuxed = try StreamDemuxer().run(path: work + "/m.mp4", to: work + "/m.264")
        #expect(demuxed.samples == 90)
        #expect(try MediaSource(path: work + "/m.264").readAll().map(\.data) == MediaSource(path: Self.stream).readAll().map(\.data))
    }

    /// Errors name the input and the place, and keep the error underneath.
    @Test func errorsCarryTheirCauseAndPlace() throws {
        let work = try Self.work()
        defer { try? FileManager.default.removeItem(atPath: work) }
        #expect { try MediaSource(path: work + "/missing.264") } throws: { error in
            guard case .file(let system)? = error as? SampleFlowError else { return false }
            return system.errno == .noSuchFileOrDirectory && system.path.hasSuffix("missing.264")
        }
        let garbage = work + "/garbage.264"
        #expect(FileManager.default.createFile(atPath: garbage, contents: Data(repeating: 0x42, count: 1000)))
        #expect { try MediaSource(path: garbage).next() } throws: { error in
            guard case .bitstream(let bitstream, let input)? = error as? SampleFlowError else { return false }
            return bitstream.code == .noPicture && input == garbage && "\(error)".hasPrefix(garbage)
        }
        // An output that cannot be created: the system error, with its path.
        #expect { try SampleOutput(path: work + "/no/such/dir/x.264").makeSink() } throws: { ($0 as? SampleFlowError)?.systemError?.errno == .noSuchFileOrDirectory }
        #expect { try SampleOutput(path: work + "/no/such/dir/x.mp4").makeSink() } throws: { ($0 as? SampleFlowError)?.systemError?.errno == .noSuchFileOrDirectory }
        // A sample a movie cannot take: which sample, and the container's error.
        let sink = try MovieSink(path: work + "/t.mp4")
        var sample = try MediaSource(path: Self.stream).next()!
        sample.timing = SampleTiming(presentationTime: .invalid, decodeTime: .invalid, duration: .invalid)
        #expect { try sink.append(sample) } throws: { error in
            guard case .sample(let index, _, .container)? = error as? SampleFlowError else { return false }
            return index == 0
        }
        sink.cancel()
    }

    @Test func aLoopingSourceKeepsItsTimesRising() async throws {
        var last: MediaTime?
        var count = 0
        for try await sample in MediaFileSamples(path: Self.stream, loops: true) {
            if let last { #expect(sample.decodeTime > last) }
            last = sample.decodeTime
            count += 1
            if count == 200 { break }
        }
        #expect(count == 200)
    }
}
