import Foundation
import H264Bitstream
import H264Codec
import H264Session
import ISOBMFF
import MediaCore
import SampleFlow
import TestSupport
import Testing

/// A stream encoded again live with its sound passed through (``TranscodedSamples``), without
/// a network: what comes out against the source's samples.
@Suite("TranscodedSamples", .requires(.ffmpeg))
struct TranscodedSamplesTests {
    /// 4 s of 320x240 at 25 fps (B-frames, a keyframe every 2 s) and 48 kHz stereo AAC starting 0.5 s in.
    static func source(_ directory: String) throws -> String {
        let path = directory + "/av.mp4"
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                               "-t", "4", "-ac", "2", "-af", "adelay=500:all=1", "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-pix_fmt", "yuv420p",
                               "-c:a", "aac", "-y", path])
        return path
    }

    static var allTracks: MediaSource.Options {
        var options = MediaSource.Options()
        options.tracks = .all
        return options
    }

    static var settings: EncoderSettings {
        var settings = EncoderSettings(width: 16, height: 16, frameRate: FrameRate(25, 1), preset: "ultrafast", rateControl: .constantQuality(30))
        settings.threads = 1
        return settings
    }

    static func read(_ path: String) async throws -> [SampleBuffer] {
        var all: [SampleBuffer] = []
        for try await sample in MediaFileSamples(path: path, options: Self.allTracks) { all.append(sample) }
        return all
    }

    @Test("the picture encoded again (every picture, its presentation time exactly, an IDR picture at each second asked for, zero latency: decoded as it is shown); the sound's samples byte for byte with their times, in order")
    func thePictureIsEncodedTheSoundPassed() async throws {
        let work = try TranscodeTests.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        let input = try await Self.read(source)
        var output: [SampleBuffer] = []
        for try await sample in TranscodedSamples(MediaFileSamples(path: source, options: Self.allTracks),
                                                  options: .init(encoder: Self.settings, keyframeInterval: MediaTime(value: 1, timescale: 1))) {
            output.append(sample)
        }
        let sourcePictures = input.filter { $0.videoFormatDescription != nil }, sourceSound = input.filter { $0.audioFormatDescription != nil }
        let pictures = output.filter { $0.videoFormatDescription != nil }, sound = output.filter { $0.audioFormatDescription != nil }
        #expect(pictures.count == 100 && sourcePictures.count == 100)
        let times: [MediaTime] = pictures.map(\.presentationTime).sorted(by: <)
        let sourceTimes: [MediaTime] = sourcePictures.map(\.presentationTime).sorted(by: <)
        #expect(times == sourceTimes, "the presentation times")
        #expect(pictures.allSatisfy { $0.decodeTime == $0.presentationTime }, "zerolatency: no reordering")
        #expect(pictures.allSatisfy { $0.trackID == sourcePictures[0].trackID })
        let start = sourcePictures.map(\.presentationTime).min(by: <)!.seconds
        let syncFrames: [Double] = pictures.filter(\.isSync).map { (($0.presentationTime.seconds - start) * 25).rounded() }
        #expect(syncFrames == [0, 25, 50, 75], "an IDR picture a second: \(syncFrames)")
        let format = try #require(pictures.first?.videoFormatDescription)
        #expect(format.width == 320 && format.height == 240)
        #expect(sound.count == sourceSound.count && sound.count > 150)
        let same = zip(sound, sourceSound).allSatisfy { (ours: SampleBuffer, theirs: SampleBuffer) -> Bool in
            ours.data.bytes == theirs.data.bytes && ours.timing == theirs.timing && ours.trackID == theirs.trackID
        }
        #expect(same, "the AAC frames as they were")
        // Written as a movie, FFmpeg decodes every picture.
        let movie = work + "/out.mp4"
        let writer = try MovieWriter(path: movie)
        for sample in output { try writer.append(sample) }
        _ = try writer.finish()
        #expect(try ffmpegFrameHashes(movie).count == 100)
    }

    @Test("a consumer that stops early (the iterator dropped after 20 samples) stops the work: nothing hangs, and a source many buffers long is not read to its end")
    func stoppingEarly() async throws {
        let work = try TranscodeTests.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        let read = Counter()
        let counted = CountedSamples(base: MediaFileSamples(path: source, options: Self.allTracks, loops: true), counter: read)
        var taken = 0
        for try await _ in TranscodedSamples(counted, options: .init(encoder: Self.settings, bufferLimit: 8)) {
            taken += 1
            if taken == 20 { break }
        }
        try await Task.sleep(for: .milliseconds(500))
        let afterStop = read.value
        try await Task.sleep(for: .milliseconds(500))
        #expect(read.value == afterStop, "reading stopped: \(afterStop) then \(read.value)")
        #expect(afterStop < 200, "bounded by the channel and the sessions' frames in flight: \(afterStop) samples read")
    }

    @Test("the source's error comes out after the samples before it")
    func theSourcesErrorComesOut() async throws {
        let work = try TranscodeTests.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        let failing = CountedSamples(base: MediaFileSamples(path: source, options: Self.allTracks), counter: Counter(), failAfter: 60)
        var taken = 0
        await #expect(throws: SourceFailure.self) {
            for try await _ in TranscodedSamples(failing, options: .init(encoder: Self.settings)) { taken += 1 }
        }
        #expect(taken > 0)
    }

    @Test("a picture decoded twice (a sample repeated, as damage or a bad splice brings): the second is left out, the stream goes on to its end with every picture")
    func aRepeatedPictureIsLeftOut() async throws {
        let work = try TranscodeTests.directory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let source = try Self.source(work)
        var input = try await Self.read(source)
        let index = try #require(input.lastIndex { $0.videoFormatDescription != nil })
        input.insert(input[index], at: index + 1)
        var pictures = 0
        for try await sample in TranscodedSamples(ArraySamples(samples: input), options: .init(encoder: Self.settings)) where sample.videoFormatDescription != nil {
            pictures += 1
        }
        #expect(pictures == 100)
    }

    /// Samples from an array, as a source.
    struct ArraySamples: AsyncSequence, Sendable {
        let samples: [SampleBuffer]
        func makeAsyncIterator() -> Iterator { Iterator(samples: samples) }
        struct Iterator: AsyncIteratorProtocol {
            let samples: [SampleBuffer]
            var index = 0
            mutating func next() async throws -> SampleBuffer? {
                guard index < samples.count else { return nil }
                defer { index += 1 }
                return samples[index]
            }
        }
    }

    struct SourceFailure: Error {}

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }

    /// A source that counts what is read from it, and fails after `failAfter` samples.
    struct CountedSamples: AsyncSequence, Sendable {
        let base: MediaFileSamples
        let counter: Counter
        var failAfter: Int?

        func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), counter: counter, failAfter: failAfter) }

        struct Iterator: AsyncIteratorProtocol {
            var base: MediaFileSamples.Iterator
            let counter: Counter
            let failAfter: Int?
            var read = 0

            mutating func next() async throws -> SampleBuffer? {
                if let failAfter, read >= failAfter { throw SourceFailure() }
                read += 1
                counter.add()
                return try await base.next()
            }
        }
    }
}
