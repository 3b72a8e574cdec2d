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
    frames.compactMap(\.pixelBuffer).map { picture in
        var md5 = MD5()
        picture.forEachPackedRow { md5.update($0) }
        return md5.finalize()
    }
}

/// ffmpeg's frame hashes of an Annex-B stream.
func ffmpegHashes(_ stream: [UInt8]) throws -> [String] {
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

@Suite(.requires(.ffmpeg, .x264)) struct DecompressionSessionTests {
    static let fixture = "cisco-bframe-cabac.264"

    @Test(arguments: [false, true])
    func everySampleComesOutOnceInPresentationOrder(asynchronous: Bool) throws {
        let stream = try Checkout.fixture(Self.fixture)
        let input = try samples(of: stream)
        let collector = Collector()
        let session = try DecompressionSession(
            formatDescription: input[0].videoFormatDescription!,
            configuration: .init(threading: .init(count: 2), isAsynchronous: asynchronous),
            outputHandler: collector.append)
        for sample in input { try session.decode(sample) }
        session.finishDelayedFrames()
        let frames = collector.all
        #expect(frames.count == input.count)
        #expect(Set(frames.map(\.sampleIndex)) == Set(input.indices))
        #expect(frames.map(\.presentationTime) == input.map(\.presentationTime).sorted { $0 < $1 })
        #expect(frames.allSatisfy { !$0.isDropped && $0.duration == input[0].duration })
        #expect(try hashes(frames) == ffmpegHashes(stream))
    }

    /// The classic bug: frames held for reordering must come out at the end.
    @Test func theLastFramesComeOutAtFinish() async throws {
        let stream = try x264Stream(frames: 24, size: "160x120", arguments: ["--bframes", "3", "--b-pyramid", "normal"])
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!, configuration: .init(isAsynchronous: true, maximumFramesInFlight: 64))
        let consumer = Task {
            var frames: [DecodedFrame] = []
            for try await frame in try session.frames { frames.append(frame) }
            return frames
        }
        for sample in input { try await session.decode(sample) }
        await session.finish()
        let frames = try await consumer.value
        #expect(frames.count == 24)
        #expect(frames.last?.presentationTime == input.map(\.presentationTime).max { $0 < $1 })
        #expect(try hashes(frames) == ffmpegHashes(stream))
    }

    /// A consumer slower than the decoder: the producer is held at the bound, memory stays flat.
    @Test func aSlowConsumerHoldsTheProducerAtTheBound() async throws {
        let asynchronous = true
        let stream = try x264Stream(frames: 40, size: "160x120", arguments: ["--bframes", "2"])
        let input = try samples(of: stream)
        let bound = 3
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!,
                                               configuration: .init(isAsynchronous: asynchronous, maximumFramesInFlight: bound))
        let observed = Mutex(0)
        let consumer = Task {
            var count = 0
            for try await _ in try session.frames {
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
        #expect(try await consumer.value == 40)
        #expect(observed.withLock { $0 } <= bound)
        #expect(session.maximumFramesInFlightReached <= bound)
        #expect(session.maximumFramesInFlightReached >= 1)
    }

    /// A new resolution mid-stream: the session takes the new description and no frame is lost.
    @Test func aResolutionChangeMidStream() throws {
        let first = try x264Stream(frames: 10, size: "160x120", arguments: ["--bframes", "2"])
        let second = try x264Stream(frames: 10, size: "320x240", arguments: ["--bframes", "2"])
        let stream = first + second
        let input = try samples(of: stream)
        #expect(input[0].formatDescription != input[19].formatDescription)
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!)
        #expect(session.canAccept(input[19].videoFormatDescription!))
        #expect(input[0].videoFormatDescription!.canAccept(input[19].videoFormatDescription!), "one contract: the description's canAccept agrees")
        let collector = Collector()
        let handlerSession = try DecompressionSession(formatDescription: input[0].videoFormatDescription!, outputHandler: collector.append)
        for sample in input { try handlerSession.decode(sample) }
        handlerSession.finish()
        let frames = collector.all
        #expect(frames.count == 20 && frames.allSatisfy { !$0.isDropped })
        #expect(frames.compactMap { $0.pixelBuffer?.width } == Array(repeating: 160, count: 10) + Array(repeating: 320, count: 10))
        #expect(try hashes(frames) == ffmpegHashes(stream))
        session.invalidate()
    }

    @Test func anotherLengthSizeIsNotAccepted() throws {
        let stream = try Checkout.fixture(Self.fixture)
        let four = try samples(of: stream)
        let two = try SampleBufferBuilder.samples(fromAnnexB: stream, options: .init(nalUnitLengthSize: 2), frameRate: .fixed(FrameRate(25, 1))).samples
        let session = try DecompressionSession(formatDescription: four[0].videoFormatDescription!, outputHandler: { _ in })
        #expect(!session.canAccept(two[0].videoFormatDescription!))
        #expect(!four[0].videoFormatDescription!.canAccept(two[0].videoFormatDescription!))
        #expect { try session.decode(two[0]) } throws: { if case .formatNotAccepted = $0 as? SessionError { true } else { false } }
    }

    /// Cancelling the task that consumes `frames` releases a producer waiting at the bound.
    @Test func cancellingTheConsumerReleasesTheProducer() async throws {
        let stream = try x264Stream(frames: 30, size: "160x120", arguments: [])
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!,
                                               configuration: .init(isAsynchronous: true, maximumFramesInFlight: 2))
        let started = Mutex(false)
        let consumer = Task {
            for try await _ in try session.frames {
                started.withLock { $0 = true }
                try? await Task.sleep(for: .seconds(60))  // never takes a second frame
            }
        }
        let producer = Task { () -> SessionError? in
            do throws(SessionError) {
                for sample in input { try await session.decode(sample) }
                return nil
            } catch {
                return error
            }
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        consumer.cancel()
        let error = await producer.value
        #expect(error.map { if case .invalidated = $0 { true } else { false } } == true)
        _ = await consumer.result
    }

    /// Cancelling a producer suspended at the bound ends its wait with `cancelled`.
    @Test func cancellingAWaitingProducer() async throws {
        let stream = try x264Stream(frames: 10, size: "160x120", arguments: [])
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!,
                                               configuration: .init(isAsynchronous: true, maximumFramesInFlight: 1))
        let producer = Task { () -> SessionError? in
            do throws(SessionError) {
                for sample in input { try await session.decode(sample) }  // nobody consumes
                return nil
            } catch {
                return error
            }
        }
        while session.framesInFlight < 1 { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(20))
        producer.cancel()
        #expect(await producer.value.map { if case .cancelled = $0 { true } else { false } } == true)
        session.invalidate()
    }

    @Test func aConversionOnTheWayOut() throws {
        let stream = try Checkout.fixture(Self.fixture)
        let input = try samples(of: stream)
        let collector = Collector()
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!,
                                               configuration: .init(pixelFormat: .rgb24, size: (width: 320, height: 240)),
                                               outputHandler: collector.append)
        for sample in input { try session.decode(sample) }
        session.finish()
        #expect(collector.all.count == input.count)
        #expect(collector.all.allSatisfy { $0.pixelBuffer?.format == .rgb24 && $0.pixelBuffer?.width == 320 && $0.pixelBuffer?.height == 240 })
    }

    /// Samples before the first sync sample give no picture: each is reported dropped.
    @Test func samplesWithoutAPictureAreReportedDropped() throws {
        let stream = try x264Stream(frames: 20, size: "160x120", arguments: ["--keyint", "10", "--bframes", "0"])
        let input = try samples(of: stream)
        // Start in the middle of the first GOP: five P samples first.
        let cut = Array(input[5...])
        let collector = Collector()
        let session = try DecompressionSession(formatDescription: cut[0].videoFormatDescription!, outputHandler: collector.append)
        for sample in cut { try session.decode(sample) }
        session.finish()
        let frames = collector.all
        #expect(frames.count == cut.count, "one output per sample")
        let dropped = frames.filter(\.isDropped)
        #expect(!dropped.isEmpty && dropped.allSatisfy { $0.sampleIndex < 5 })
        #expect(try hashes(frames) == ffmpegHashes(AnnexBWriter.annexB(from: cut)), "the pictures ffmpeg shows, no more")
    }

    // MARK: Regressions (issue "library first")

    /// A consumer slower than the decoder must not keep the frames it has taken alive: the
    /// session let go of an output only when its queue ran empty, which a lagging consumer never
    /// lets happen (a 1080p decode grew to about 1 GB).
    @Test func framesTakenByASlowConsumerAreLetGo() async throws {
        let stream = try x264Stream(frames: 60, size: "160x120", arguments: ["--bframes", "2"])
        let input = try samples(of: stream)
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!,
                                               configuration: .init(isAsynchronous: true, maximumFramesInFlight: 4))
        final class Weak: @unchecked Sendable { weak var buffer: PixelBuffer? }
        let consumer = Task { () -> Int in
            var taken: [Weak] = []
            var mostAlive = 0
            for try await frame in try session.frames {
                let reference = Weak()
                reference.buffer = frame.pixelBuffer
                taken.append(reference)
                try? await Task.sleep(for: .milliseconds(3))  // slower than the decoder
                // Every frame but the one just taken is gone from the consumer's hands.
                mostAlive = max(mostAlive, taken.dropLast().filter { $0.buffer != nil }.count)
            }
            return mostAlive
        }
        for sample in input { try await session.decode(sample) }
        await session.finish()
        let mostAlive = try await consumer.value
        #expect(mostAlive <= 4, "\(mostAlive) taken frames were still held by the session")
    }

    /// Wrong use is a thrown error at the call, or made impossible: a session without a handler
    /// is asynchronous whatever its configuration says (a synchronous one used to hang at the
    /// ninth frame with nobody consuming, then was refused); a session with a handler has no
    /// output sequence (iterating it trapped); the sequence has one consumer.
    @Test func misuseIsAThrownError() async throws {
        let input = try samples(of: try Checkout.fixture(Self.fixture))
        let description = input[0].videoFormatDescription!
        // Without a handler a session is asynchronous whatever the configuration says (the
        // docs' promise): its frames come out.
        let single = try DecompressionSession(formatDescription: description, configuration: .init(threading: .single))
        #expect(single.configuration.isAsynchronous)
        let frames = try single.frames
        let consumer = Task { var count = 0; for try await _ in frames { count += 1 }; return count }
        for sample in input.prefix(5) { try await single.decode(sample) }
        await single.finish()
        #expect(try await consumer.value == 5)
        let withHandler = try DecompressionSession(formatDescription: description, outputHandler: { _ in })
        #expect { _ = try withHandler.frames } throws: { if case .outputsGoToHandler = $0 as? SessionError { true } else { false } }
        let asynchronous = try DecompressionSession(formatDescription: description)
        _ = try asynchronous.frames
        #expect { _ = try asynchronous.frames } throws: { if case .outputSequenceTaken = $0 as? SessionError { true } else { false } }
        asynchronous.invalidate()
    }

    /// A frame the decoder fails on while finishing (frame threads report it from a later
    /// call) is that frame's status: the pictures after it still come out, as ffmpeg's do.
    @Test func aFailedFrameAtTheEndDoesNotLoseTheFramesAfterIt() throws {
        var stream = try x264Stream(frames: 30, size: "320x240", arguments: ["--bframes", "2", "--keyint", "30"])
        // Garbage in the middle of the slice of a late frame.
        let units = AnnexB.nalUnits(in: stream).filter { stream[$0.payload.lowerBound] & 0x1F == 1 }
        let victim = units[units.count - 4].payload
        for i in (victim.lowerBound + 8)..<min(victim.upperBound, victim.lowerBound + 40) { stream[i] = 0xFF }
        let input = try samples(of: stream)
        for threads in [H264Decoder.Threading(count: 4), .single] {
            let collector = Collector()
            let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!, configuration: .init(threading: threads),
                                                   outputHandler: collector.append)
            for sample in input { try session.decode(sample) }
            session.finish()
            let frames = collector.all
            #expect(frames.count == input.count, "one output per sample")
            let path = try Checkout.temporaryFile(stream)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let ffmpeg = try run("ffmpeg", ["-v", "quiet", "-threads", "\(threads.count)", "-f", "h264", "-i", path, "-f", "framemd5", "-"])
            let expected = ffmpeg.stdoutText.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
            #expect(frames.filter { $0.pixelBuffer != nil }.count == expected, "\(threads.count) threads")
        }
    }
}

/// Picture sizes a stream declares are checked before libavcodec allocates for them.
@Suite("Decoding: picture limits") struct PictureLimitTests {
    /// An SPS declaring 32768x4080 (133 million pixels) and a slice using it: the sample is
    /// dropped with an error naming the SPS, the size and the limit, and nothing that size is
    /// allocated (it used to take ~800 MB before any picture existed); the next sample of a
    /// sane size decodes.
    @Test func anSPSOverTheLimitIsRefusedBeforeTheDecoderAllocates() throws {
        var huge = Synthetic.SPSOptions()
        huge.widthInMbs = 2048
        huge.heightInMapUnits = 255
        let stream = Synthetic.annexB([Synthetic.sps(huge), Synthetic.pps(), Synthetic.slice(.init(idr: true, type: 2, frameNum: 0), sps: huge)])
        let input = try samples(of: stream)
        #expect(input.count == 1)
        #expect(input[0].videoFormatDescription!.width == 32768 && input[0].videoFormatDescription!.height == 4080)
        let collector = Collector()
        let session = try DecompressionSession(formatDescription: input[0].videoFormatDescription!, outputHandler: collector.append)
        try session.decode(input[0])
        session.finish()
        let frames = collector.all
        #expect(frames.count == 1)
        #expect(frames.first?.isDropped == true)
        let reason = frames.first?.error.map { "\($0)" } ?? ""
        #expect(reason.contains("SPS 0 declares 32768x4080 (133693440 pixels), over the limit of 35651584 pixels"), "\(reason)")
    }
}
