import Foundation
import H264Bitstream
import H264Codec
import H264Session
import MediaCore
import Synchronization
import TestSupport
import Testing

func samples(of stream: [UInt8]) throws -> [SampleBuffer] {
    try SampleBufferBuilder.samples(fromAnnexB: stream, frameRate: .stream(fallback: FrameRate(25, 1))).samples
}

func hashes(_ frames: [DecodedFrame]) throws -> [String] {
    try frames.compactMap(\.pixelBuffer).map { picture in
        var md5 = try MD5()
        picture.forEachPackedRow { md5.update($0) }
        return md5.finalize()
    }
}

/// ffmpeg's frame hashes of an Annex-B stream.
func ffmpegHashes(_ stream: [UInt8]) throws -> [String]? {
    let path = try Checkout.temporaryFile(stream)
    defer { try? FileManager.default.removeItem(atPath: path) }
    // -autoscale 0: every picture at its own size (ffmpeg scales to the first size by default).
    return try ffmpegFrameHashes(path, format: "h264", extra: ["-autoscale", "0"])
}

/// Collects outputs from a handler (called on the session's queue or the caller's thread).
final class Collector: Sendable {
    let frames = Mutex<[DecodedFrame]>([])
    func append(_ frame: DecodedFrame) { frames.withLock { $0.append(frame) } }
    var all: [DecodedFrame] { frames.withLock { $0 } }
}

@Suite struct DecompressionSessionTests {
    static let fixture = "cisco-bframe-cabac.264"

    @Test(arguments: [false, true])
    func everySampleComesOutOnceInPresentationOrder(asynchronous: Bool) throws {
        let stream = try Checkout.fixture(Self.fixture)
        let input = try samples(of: stream)
        let collector = Collector()
        let session = try DecompressionSession(
            formatDescription: input[0].formatDescription,
            configuration: .init(threading: .init(count: 2), isAsynchronous: asynchronous),
            outputHandler: collector.append)
        for sample in input { try session.decode(sample) }
        session.waitForAsynchronousFrames()
        let frames = collector.all
        #expect(frames.count == input.count)
        #expect(Set(frames.map(\.sampleIndex)) == Set(input.indices))
        #expect(frames.map(\.presentationTime) == input.map(\.presentationTime).sorted { $0 < $1 })
        #expect(frames.allSatisfy { !$0.isDropped && $0.duration == input[0].duration })
        if let expected = try ffmpegHashes(stream) { #expect(try hashes(frames) == expected) }
    }

    /// The classic bug: frames held for reordering must come out at the end.
    @Test func theLastFramesComeOutAtFinish() async throws {
        guard let stream = try x264Stream(frames: 24, size: "160x120", arguments: ["--bframes", "3", "--b-pyramid", "normal"]) else { return }
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].formatDescription, configuration: .init(isAsynchronous: true, maximumFramesInFlight: 64))
        let consumer = Task {
            var frames: [DecodedFrame] = []
            for await frame in session.frames { frames.append(frame) }
            return frames
        }
        for sample in input { try await session.decode(sample) }
        await session.finish()
        let frames = await consumer.value
        #expect(frames.count == 24)
        #expect(frames.last?.presentationTime == input.map(\.presentationTime).max { $0 < $1 })
        if let expected = try ffmpegHashes(stream) { #expect(try hashes(frames) == expected) }
    }

    /// A consumer slower than the decoder: the producer is held at the bound, memory stays flat.
    @Test(arguments: [false, true])
    func aSlowConsumerHoldsTheProducerAtTheBound(asynchronous: Bool) async throws {
        guard let stream = try x264Stream(frames: 40, size: "160x120", arguments: ["--bframes", "2"]) else { return }
        let input = try samples(of: stream)
        let bound = 3
        let session = try DecompressionSession(formatDescription: input[0].formatDescription,
                                               configuration: .init(isAsynchronous: asynchronous, maximumFramesInFlight: bound))
        let observed = Mutex(0)
        let consumer = Task {
            var count = 0
            for await _ in session.frames {
                count += 1
                observed.withLock { $0 = max($0, session.framesInFlight) }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return count
        }
        for sample in input {
            try await session.decode(sample)
            observed.withLock { $0 = max($0, session.framesInFlight) }
        }
        await session.finish()
        #expect(await consumer.value == 40)
        #expect(observed.withLock { $0 } <= bound)
        #expect(session.maximumFramesInFlightReached <= bound)
        #expect(session.maximumFramesInFlightReached >= 1)
    }

    /// A new resolution mid-stream: the session takes the new description and no frame is lost.
    @Test func aResolutionChangeMidStream() throws {
        guard let first = try x264Stream(frames: 10, size: "160x120", arguments: ["--bframes", "2"]),
              let second = try x264Stream(frames: 10, size: "320x240", arguments: ["--bframes", "2"]) else { return }
        let stream = first + second
        let input = try samples(of: stream)
        #expect(input[0].formatDescription != input[19].formatDescription)
        let session = try DecompressionSession(formatDescription: input[0].formatDescription)
        #expect(session.canAccept(input[19].formatDescription))
        let collector = Collector()
        let handlerSession = try DecompressionSession(formatDescription: input[0].formatDescription, outputHandler: collector.append)
        for sample in input { try handlerSession.decode(sample) }
        handlerSession.finish()
        let frames = collector.all
        #expect(frames.count == 20 && frames.allSatisfy { !$0.isDropped })
        #expect(frames.compactMap { $0.pixelBuffer?.width } == Array(repeating: 160, count: 10) + Array(repeating: 320, count: 10))
        if let expected = try ffmpegHashes(stream) { #expect(try hashes(frames) == expected) }
        session.invalidate()
    }

    @Test func anotherLengthSizeIsNotAccepted() throws {
        let stream = try Checkout.fixture(Self.fixture)
        let four = try samples(of: stream)
        let two = try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(nalUnitLengthSize: 2), frameRate: .fixed(FrameRate(25, 1))).samples
        let session = try DecompressionSession(formatDescription: four[0].formatDescription, outputHandler: { _ in })
        #expect(!session.canAccept(two[0].formatDescription))
        #expect { try session.decode(two[0]) } throws: { ($0 as? DecompressionError)?.code == .formatNotAccepted }
    }

    /// Cancelling the task that consumes `frames` releases a producer waiting at the bound.
    @Test func cancellingTheConsumerReleasesTheProducer() async throws {
        guard let stream = try x264Stream(frames: 30, size: "160x120", arguments: []) else { return }
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].formatDescription,
                                               configuration: .init(isAsynchronous: true, maximumFramesInFlight: 2))
        let started = Mutex(false)
        let consumer = Task {
            for await _ in session.frames {
                started.withLock { $0 = true }
                try? await Task.sleep(for: .seconds(60))  // never takes a second frame
            }
        }
        let producer = Task { () -> DecompressionError? in
            do throws(DecompressionError) {
                for sample in input { try await session.decode(sample) }
                return nil
            } catch {
                return error
            }
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        consumer.cancel()
        let error = await producer.value
        #expect(error?.code == .invalidated)
        await consumer.value
    }

    /// Cancelling a producer suspended at the bound ends its wait with `cancelled`.
    @Test func cancellingAWaitingProducer() async throws {
        guard let stream = try x264Stream(frames: 10, size: "160x120", arguments: []) else { return }
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].formatDescription,
                                               configuration: .init(isAsynchronous: true, maximumFramesInFlight: 1))
        let producer = Task { () -> DecompressionError? in
            do throws(DecompressionError) {
                for sample in input { try await session.decode(sample) }  // nobody consumes
                return nil
            } catch {
                return error
            }
        }
        while session.framesInFlight < 1 { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(20))
        producer.cancel()
        #expect(await producer.value?.code == .cancelled)
        session.invalidate()
    }

    @Test func aConversionOnTheWayOut() throws {
        let stream = try Checkout.fixture(Self.fixture)
        let input = try samples(of: stream)
        let collector = Collector()
        let session = try DecompressionSession(formatDescription: input[0].formatDescription,
                                               configuration: .init(pixelFormat: .rgb24, size: (width: 320, height: 240)),
                                               outputHandler: collector.append)
        for sample in input { try session.decode(sample) }
        session.finish()
        #expect(collector.all.count == input.count)
        #expect(collector.all.allSatisfy { $0.pixelBuffer?.format == .rgb24 && $0.pixelBuffer?.width == 320 && $0.pixelBuffer?.height == 240 })
    }

    /// Samples before the first sync sample give no picture: each is reported dropped.
    @Test func samplesWithoutAPictureAreReportedDropped() throws {
        guard let stream = try x264Stream(frames: 20, size: "160x120", arguments: ["--keyint", "10", "--bframes", "0"]) else { return }
        let input = try samples(of: stream)
        // Start in the middle of the first GOP: five P samples first.
        let cut = Array(input[5...])
        let collector = Collector()
        let session = try DecompressionSession(formatDescription: cut[0].formatDescription, outputHandler: collector.append)
        for sample in cut { try session.decode(sample) }
        session.finish()
        let frames = collector.all
        #expect(frames.count == cut.count, "one output per sample")
        let dropped = frames.filter(\.isDropped)
        #expect(!dropped.isEmpty && dropped.allSatisfy { $0.sampleIndex < 5 })
        if let expected = try ffmpegHashes(AnnexBWriter.annexB(from: cut)) {
            #expect(try hashes(frames) == expected, "the pictures ffmpeg shows, no more")
        }
    }
}
