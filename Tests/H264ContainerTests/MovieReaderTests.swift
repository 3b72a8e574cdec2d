import Foundation
import H264Bitstream
@testable import ISOBMFF
import MPEGTS
import MediaCore
import TestSupport
import Testing

/// A movie written from a committed fixture, returned as bytes, with the samples that went in.
func writtenMovie(_ options: MovieWriter.Options) throws -> (bytes: [UInt8], samples: [SampleBuffer]) {
    let stream = try Checkout.fixture("cisco-bframe-cabac.264")
    let (samples, _) = try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .fixed(FrameRate(25, 1)))
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-reader-\(UUID().uuidString).mp4").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    let writer = try MovieWriter(path: path, options: options)
    for sample in samples { try writer.append(sample) }
    try writer.finish()
    return ([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), samples)
}

func read(_ bytes: [UInt8]) throws(ContainerError) -> MovieReader {
    let path = (try? Checkout.temporaryFile(bytes, suffix: ".mp4")) ?? "/nonexistent"
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try MovieReader(path: path)
}

func offset(of type: String, in bytes: [UInt8]) -> Int? {
    let tag = Array(type.utf8)
    return (4..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == tag }.map { $0 - 4 }
}

@Suite struct MovieReaderTests {
    static let layouts: [MovieWriter.Options] = [
        .init(), .init(fileType: .mov), .init(layout: .faststart),
        .init(layout: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 5))), .init(negativeCompositionOffsets: true),
    ]

    @Test(arguments: layouts)
    func readsBackWhatWasWritten(_ options: MovieWriter.Options) throws {
        let (bytes, written) = try writtenMovie(options)
        let reader = try read(bytes)
        #expect(reader.warnings.isEmpty)
        let index = try #require(reader.firstVideoTrackIndex)
        let samples = try reader.sampleBuffers(track: index)
        #expect(samples.map(\.data) == written.map(\.data))
        #expect(samples.map(\.isSync) == written.map(\.isSync))
        // Presentation order and spacing survive (the edit list maps the first frame to 0).
        let shown = samples.map { $0.presentationTime.converted(toTimescale: 25).value }
        #expect(shown == written.map(\.presentationTime.value))
        #expect(samples.first?.formatDescription == written.first?.formatDescription)
    }

    @Test func cutMediaKeepsTheIntactSamplesWithAWarning() throws {
        let (bytes, written) = try writtenMovie(.init(layout: .faststart))
        let reader = try read(Array(bytes.prefix(bytes.count * 6 / 10)))
        let samples = try reader.sampleBuffers(track: 0)
        #expect(samples.count > 0 && samples.count < written.count)
        #expect(samples.map(\.data) == written.prefix(samples.count).map(\.data))
        #expect(reader.warnings.contains { $0.contains("truncated") })
    }

    @Test func aCutIndexIsAnError() throws {
        let (bytes, _) = try writtenMovie(.init(layout: .faststart))
        let moov = try #require(offset(of: "moov", in: bytes))
        #expect { try read(Array(bytes.prefix(moov + 200))) } throws: { error in
            let error = error as! ContainerError
            return error.code == .truncated && error.boxPath == "moov"
        }
    }

    @Test func aHugeEntryCountIsAnErrorNotAnAllocation() throws {
        var (bytes, _) = try writtenMovie(.init())
        let stsz = try #require(offset(of: "stsz", in: bytes))
        for i in 0..<4 { bytes[stsz + 16 + i] = 0x7F }  // sample_count, after size, type, version/flags, sample_size
        #expect { try read(bytes) } throws: { error in
            let error = error as! ContainerError
            return error.code == .invalidBox && (error.boxPath ?? "").contains("stbl/stsz") && error.reason.contains("entries")
        }
    }

    @Test func aBoxLargerThanItsParentIsAnError() throws {
        var (bytes, _) = try writtenMovie(.init())
        let trak = try #require(offset(of: "trak", in: bytes))
        bytes[trak] = 0x7F
        #expect { try read(bytes) } throws: { error in
            let error = error as! ContainerError
            return error.code == .invalidBox && error.reason.contains("past its parent") && error.byteOffset == trak
        }
    }

    /// A damaged run length in stts or ctts is not walked sample by sample (it once took
    /// minutes of empty iterations).
    @Test func aHugeRunCountCostsNothing() throws {
        var (bytes, written) = try writtenMovie(.init())
        for box in ["stts", "ctts"] {
            let at = try #require(offset(of: box, in: bytes))
            for i in 0..<4 { bytes[at + 16 + i] = 0xFF }  // first entry's sample_count
        }
        let reader = try read(bytes)
        let samples = try reader.sampleBuffers(track: try #require(reader.firstVideoTrackIndex))
        #expect(samples.count == written.count)
    }

    @Test func notAMovie() {
        #expect { try read(Array(repeating: 0x42, count: 100)) } throws: { error in
            (error as! ContainerError).code == .invalidInput
        }
    }

    /// G.711 in a MOV as FFmpeg writes it (`ulaw`/`alaw`, a sample a byte): read as an audio
    /// format (not an opaque entry), its samples gathered into runs of a chunk (at most
    /// ``MovieReader/maximumG711Run``), each run's bytes the file's in order and its times
    /// without a gap: the whole sound is what FFmpeg copies out of the file.
    @Test("G.711 in a MOV (FFmpeg's pcm_mulaw and pcm_alaw, mono 8 kHz and stereo 16 kHz): an audio format, runs of a chunk each, the bytes and times FFmpeg copies out",
          .requires(.ffmpeg), arguments: [("pcm_mulaw", "ulaw", 8000, 1), ("pcm_alaw", "alaw", 16000, 2)])
    func g711RunsAsFFmpegReadsThem(codec: String, entry: String, rate: Int, channels: Int) throws {
        let movie = try Checkout.temporaryFile([], suffix: ".mov")
        defer { try? FileManager.default.removeItem(atPath: movie) }
        let made = try run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate)",
                                      "-t", "3", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", codec, "-ac", "\(channels)", movie])
        try #require(made.status == 0, "\(made.stderrText)")
        let reader = try MovieReader(path: movie)
        let index = try #require(reader.tracks.firstIndex { $0.handlerType == "soun" })
        let track = reader.tracks[index]
        guard case .audio(let format) = track.descriptions.first else { Issue.record("\(String(describing: track.descriptions.first))"); return }
        #expect(format == AudioFormatDescription(codec: FourCharCode(stringLiteral: entry), sampleRate: rate, channelCount: channels, framesPerPacket: 1) && format.isG711 && !track.isAAC)
        #expect(reader.firstAudioTrackIndex == nil, "the first AAC track")
        let samples = try reader.sampleBuffers(track: index, editList: .shift)
        var bytes: [UInt8] = [], next: MediaTime?
        for sample in samples {
            #expect(sample.duration.value <= Int64(MovieReader.maximumG711Run) && Int(sample.duration.value) * channels == sample.data.bytes.count, "\(sample.timing)")
            if let next { #expect(sample.decodeTime == next, "a run at \(sample.decodeTime), the last ended at \(next)") }
            next = sample.decodeTime + sample.duration
            bytes += sample.data.bytes
        }
        #expect(samples.count > 1 && samples.count * 64 < bytes.count / channels, "\(samples.count) runs of \(bytes.count) bytes")
        let copied = try run("ffmpeg", ["-v", "error", "-i", movie, "-map", "0:a:0", "-c", "copy", "-f", entry == "ulaw" ? "mulaw" : "alaw", "-"]).stdout
        #expect(bytes == [UInt8](copied), "\(bytes.count) bytes read, FFmpeg copies \(copied.count)")
    }

    @Test("G.711 runs end where the file or the times are not contiguous, at the limit, and at a new sample description; a damaged size never overflows")
    func g711RunsStopWhereTheyMust() {
        func entry(_ offset: UInt64, _ time: Int64, size: UInt32 = 1, description: UInt32 = 1) -> MovieReader.SampleEntry {
            MovieReader.SampleEntry(offset: offset, size: size, decodeTime: time, compositionOffset: 0, duration: size, isSync: true, descriptionIndex: description, dependency: nil)
        }
        var samples = (0..<10).map { entry(100 + UInt64($0), Int64($0)) }   // one chunk: 10 samples
        samples += (10..<14).map { entry(500 + UInt64($0), Int64($0)) }     // the next chunk, elsewhere in the file
        samples.append(entry(600, 20))                                      // a gap in time
        samples.append(entry(601, 21, description: 2))                      // another description
        samples.append(entry(602, 22, size: UInt32.max))                    // a damaged size
        samples.append(entry(602 &+ UInt64(UInt32.max), 22 &+ Int64(UInt32.max)))
        let runs = Parser.gatheredRuns(samples, limit: 4)
        #expect(runs.map(\.size) == [4, 4, 2, 4, 1, 1, UInt32.max, 1], "\(runs.map(\.size))")
        #expect(runs.map(\.decodeTime) == [0, 4, 8, 10, 20, 21, 22, 22 + Int64(UInt32.max)])
        #expect(runs.reduce(0) { $0 + Int($1.duration) } == samples.reduce(0) { $0 + Int($1.duration) })
    }
}
