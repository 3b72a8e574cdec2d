import Foundation
import H264Bitstream
import H264Container
import MediaCore
import TestSupport
import Testing

/// A stream whose parameter sets change mid-way (a new resolution), as samples from the
/// default builder (parameter sets in the format descriptions, not in the samples).
func resolutionChange() throws -> (stream: [UInt8], samples: [SampleBuffer]) {
    let stream = try x264Stream(frames: 10, size: "176x144", arguments: ["--bframes", "2"]) + x264Stream(frames: 10, size: "320x240", arguments: ["--bframes", "2"])
    return (stream, try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .fixed(FrameRate(25, 1))).samples)
}

func temporaryMovie(_ suffix: String = ".mp4") -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-writer-\(UUID().uuidString)\(suffix)").path
}

@Suite("MovieWriter", .requires(.ffmpeg, .x264))
struct MovieWriterTests {
    /// avc3 (and fragmented avc1) keep one sample entry: a sample whose parameter sets changed
    /// gets them in band. Every sample used to point at the first entry without them: a file
    /// that decoded wrong after the change, and no error.
    @Test(arguments: [
        MovieWriter.Options(parameterSets: .inBand),
        MovieWriter.Options(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 5))),
        MovieWriter.Options(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 5)), parameterSets: .inBand),
    ])
    func changedParameterSetsGoInBandWithOneSampleEntry(_ options: MovieWriter.Options) throws {
        let (stream, samples) = try resolutionChange()
        let raw = try Checkout.temporaryFile(stream)
        let path = temporaryMovie()
        defer { for file in [raw, path] { try? FileManager.default.removeItem(atPath: file) } }
        let writer = try MovieWriter(path: path, options: options)
        for sample in samples { try writer.append(sample) }
        let summary = try writer.finish()
        #expect(summary.sampleDescriptionCount == 1, "the summary counts the entries written")
        let reader = try MovieReader(path: path)
        #expect(reader.tracks[0].descriptions.count == 1)
        let expected = try ffmpegFrameHashes(raw, format: "h264", extra: ["-autoscale", "0"])
        #expect(try ffmpegFrameHashes(path, extra: ["-autoscale", "0"]) == expected)
        #expect(expected.count == 20)
    }

    @Test func avc1GetsAnEntryPerChange() throws {
        let (_, samples) = try resolutionChange()
        let path = temporaryMovie()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MovieWriter(path: path)
        for sample in samples { try writer.append(sample) }
        #expect(try writer.finish().sampleDescriptionCount == 2)
        #expect(try MovieReader(path: path).tracks[0].descriptions.count == 2)
    }

    /// The writer owns its file: nothing appears before finish; finish once; a failed,
    /// cancelled or dropped writer leaves nothing; later calls are errors, not traps.
    @Test func theWriterOwnsItsFilesLifecycle() throws {
        let (_, samples) = try resolutionChange()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-owner-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func entries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: directory) }
        for layout: MovieWriter.Layout in [.progressive, .faststart] {
            let path = directory + "/out.mp4"
            let writer = try MovieWriter(path: path, options: .init(layout: layout))
            try writer.append(samples[0])
            #expect(!FileManager.default.fileExists(atPath: path), "no file under the final name before finish")
            try writer.finish()
            #expect(try entries() == ["out.mp4"], "no temporary file left")
            #expect(throws: ContainerError.self) { try writer.finish() }
            #expect(throws: ContainerError.self) { try writer.append(samples[1]) }
            try FileManager.default.removeItem(atPath: path)
        }
        for layout: MovieWriter.Layout in [.progressive, .faststart, .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 1))] {
            let cancelled = try MovieWriter(path: directory + "/c.mp4", options: .init(layout: layout))
            try cancelled.append(samples[0])
            cancelled.cancel()
            #expect(try entries().isEmpty, "\(layout): a cancelled writer leaves nothing")
            #expect(throws: ContainerError.self) { try cancelled.append(samples[1]) }
            do {
                let dropped = try MovieWriter(path: directory + "/d.mp4", options: .init(layout: layout))
                try dropped.append(samples[0])
            }
            #expect(try entries().isEmpty, "\(layout): a writer dropped unfinished leaves nothing")
            let failing = try MovieWriter(path: directory + "/f.mp4", options: .init(layout: layout))
            try failing.append(samples[1])
            #expect(throws: ContainerError.self) { try failing.append(samples[0]) }  // decode time goes back
            #expect(throws: ContainerError.self) { try failing.finish() }
            #expect(try entries().isEmpty, "\(layout): a failed writer leaves nothing")
        }
    }

    /// Sendable: samples may come from another task (one call at a time).
    @Test func samplesFromAnotherTask() async throws {
        let (_, samples) = try resolutionChange()
        let path = temporaryMovie()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MovieWriter(path: path)
        try await Task.detached { for sample in samples { try writer.append(sample) } }.value
        #expect(try writer.finish().sampleCount == 20)
    }
}
