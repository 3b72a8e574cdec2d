import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
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

    /// A sample lasts in the movie until the next is decoded, as FFmpeg's muxer writes it:
    /// with reordering at a variable rate a sample buffer's presentation duration (what a
    /// compression session gives) is longer than its decode step, and was refused.
    @Test(arguments: [MovieWriter.Layout.progressive, .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 10))])
    func sampleDurationsAreDecodeSteps(_ layout: MovieWriter.Layout) throws {
        let (_, samples) = try resolutionChange()
        let path = temporaryMovie()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MovieWriter(path: path, options: .init(layout: layout))
        // Decode steps of 1/25 s; each sample says it lasts 3/50 s (longer than its step).
        for var sample in samples.prefix(10) {
            sample.timing.duration = MediaTime(value: 3, timescale: 50)
            try writer.append(sample)
        }
        _ = try writer.finish()
        let movie = try MovieReader(path: path)
        let written = try movie.sampleBuffers(track: 0)
        #expect(written.count == 10)
        #expect(written.dropLast().allSatisfy { $0.duration == MediaTime(value: 1, timescale: 25) }, "\(written.map(\.duration))")
        #expect(written.last?.duration == MediaTime(value: 3, timescale: 50), "the last sample keeps its own duration")
        #expect(zip(written, samples).allSatisfy { $0.decodeTime == $1.decodeTime && $0.presentationTime == $1.presentationTime })
        // A decode time that does not move on is still refused.
        let again = try MovieWriter(path: temporaryMovie(), options: .init(layout: layout))
        try again.append(samples[0])
        var same = samples[1]
        same.timing.decodeTime = samples[0].decodeTime
        #expect(throws: ContainerError.self) { try again.append(same) }
    }

    /// Samples marked doNotDisplay before the first shown one (a cut's pre-roll) are stored
    /// for decoding and left out of the edit list: players and readers start at the first
    /// shown frame.
    @Test func aHiddenPreRollIsLeftOutOfTheEdit() throws {
        let (stream, samples) = try resolutionChange()
        _ = stream
        let path = temporaryMovie()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MovieWriter(path: path, options: .init(keepsStartTime: true))
        // The first 10 (176x144) pictures decode order = presentation order shifted by B-frames;
        // hide the first three shown.
        let firstTen = Array(samples.prefix(10))
        let hidden = Set(firstTen.map(\.presentationTime).sorted { $0 < $1 }.prefix(3))
        for var sample in firstTen {
            if hidden.contains(sample.presentationTime) { sample.attachments.doNotDisplay = true }
            try writer.append(sample)
        }
        _ = try writer.finish()
        let movie = try MovieReader(path: path)
        let read = try movie.sampleBuffers(track: 0, editList: .trim)
        #expect(read.count == 10, "every sample is stored")
        #expect(read.filter { $0.attachments.doNotDisplay }.map(\.presentationTime).sorted { $0 < $1 } == hidden.sorted { $0 < $1 })
        let frames = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path]).stdoutText
            .split(separator: "\n").filter { !$0.isEmpty }
        #expect(frames.count == 7, "ffmpeg shows the 7 frames after the pre-roll: \(frames)")
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
