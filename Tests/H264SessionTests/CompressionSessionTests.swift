import Foundation
import H264Bitstream
import H264Codec
import H264Session
import MediaCore
import MediaIO
import Synchronization
import TestSupport
import Testing

/// A moving test picture: gradients and a bright square that travels, so motion search and
/// B-frames have something to do.
func testPicture(_ index: Int, width: Int = 160, height: Int = 96) -> PixelBuffer {
    let picture = PixelBuffer(format: .yuv420p, width: width, height: height)
    for plane in 0..<3 {
        picture.withUnsafeMutableBytes(ofPlane: plane) { bytes in
            let info = picture.planes[plane]
            for y in 0..<info.height {
                for x in 0..<info.width {
                    var value = plane == 0 ? (x * 2 + y + index * 3) & 0xFF : (plane == 1 ? 128 + (x - info.width / 2) / 2 : 128 + (y - info.height / 2) / 2)
                    let scale = plane == 0 ? 1 : 2
                    let sx = (index * 4) % width, sy = (index * 2) % height
                    if plane == 0, (sx..<(sx + 24)).contains(x * scale), (sy..<(sy + 24)).contains(y * scale) { value = 235 }
                    bytes[y * info.bytesPerRow + x] = UInt8(clamping: value)
                }
            }
        }
    }
    return picture
}

/// PSNR of the luma planes.
func lumaPSNR(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    var squared = 0.0
    a.withUnsafeBytes(ofPlane: 0) { pa in
        b.withUnsafeBytes(ofPlane: 0) { pb in
            for y in 0..<a.height {
                for x in 0..<a.width {
                    let d = Double(pa[y * a.planes[0].bytesPerRow + x]) - Double(pb[y * b.planes[0].bytesPerRow + x])
                    squared += d * d
                }
            }
        }
    }
    let mse = squared / Double(a.width * a.height)
    return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}

final class Gathered<T: Sendable>: Sendable {
    private let items = Mutex<[T]>([])
    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}

@Suite("CompressionSession", .timely)
struct CompressionSessionTests {
    static let rate = FrameRate(25, 1)
    static func settings(preset: String = "veryfast") -> EncoderSettings {
        var settings = EncoderSettings(width: 160, height: 96, frameRate: rate, preset: preset)
        settings.bFrames = 3
        settings.threads = 1
        return settings
    }

    static func time(_ index: Int) -> MediaTime { MediaTime(value: Int64(index), timescale: 25) }

    @Test("decode-order output with B-frames: DTS increasing, PTS ≥ DTS, every frame out after finish")
    func decodeOrder() throws {
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { frames.append($0) })
        for index in 0..<60 { try session.encode(testPicture(index), presentationTime: Self.time(index)) }
        session.finish()
        let samples = frames.all.map(\.sampleBuffer)
        #expect(samples.count == 60)
        #expect(frames.all.contains { $0.pictureType == .b || $0.pictureType == .referenceB })
        for (a, b) in zip(samples, samples.dropFirst()) { #expect(a.decodeTime < b.decodeTime) }
        for sample in samples { #expect(sample.presentationTime >= sample.decodeTime) }
        #expect(samples.map { $0.presentationTime.converted(toTimescale: 25).value }.sorted() == (0..<60).map(Int64.init))
        #expect(samples.first?.isSync == true)
        #expect(session.formatDescription?.width == 160)
        #expect(throws: SessionError.self) { try session.encode(testPicture(60), presentationTime: Self.time(60)) }
    }

    @Test("forced keyframes land where asked")
    func forcedKeyframes() throws {
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { frames.append($0) })
        let forced: Set<Int> = [17, 33, 34]
        for index in 0..<50 { try session.encode(testPicture(index), presentationTime: Self.time(index), forceKeyframe: forced.contains(index)) }
        session.finish()
        let sync = Set(frames.all.filter(\.sampleBuffer.isSync).map { Int($0.sampleBuffer.presentationTime.converted(toTimescale: 25).value) })
        #expect(forced.isSubset(of: sync))
        #expect(sync.contains(0))
    }

    @Test("async: a slow consumer holds the producer at the bound, and every frame comes out")
    func backPressure() async throws {
        var configuration = CompressionSession.Configuration(settings: Self.settings(preset: "ultrafast"), isAsynchronous: true, maximumFramesInFlight: 4)
        configuration.settings.bFrames = 0
        let session = try CompressionSession(configuration: configuration)
        let consumer = Task(executorPreference: TimelyExecutor.shared) {
            var count = 0
            for try await _ in try session.frames {
                count += 1
                try? await Task.sleep(for: .milliseconds(5))
            }
            return count
        }
        for index in 0..<40 {
            try await session.encode(testPicture(index), presentationTime: Self.time(index))
            #expect(session.framesInFlight <= 4)
        }
        await session.finish()
        #expect(try await consumer.value == 40)
        #expect(session.maximumFramesInFlightReached <= 4)
    }

    @Test("async: a consumer that breaks out of the frames loop invalidates the session: the producer gets an error instead of waiting for ever, and finish() returns")
    func consumerBreaksOut() async throws {
        let configuration = CompressionSession.Configuration(settings: Self.settings(), isAsynchronous: true, maximumFramesInFlight: 4)
        let session = try CompressionSession(configuration: configuration)
        let outcome = try await withDeadline(seconds: 60, "the producer or finish() waited for a consumer that had gone") { () -> (taken: Int, refused: Bool) in
            let consumer = Task(executorPreference: TimelyExecutor.shared) {
                var taken = 0
                for try await _ in try session.frames {
                    taken += 1
                    if taken == 2 { break }
                }
                return taken
            }
            var refused = false
            for index in 0..<200 {
                do { try await session.encode(testPicture(index), presentationTime: Self.time(index)) } catch {
                    guard case .invalidated? = error as? SessionError else { throw error }
                    refused = true
                    break
                }
            }
            await session.finish()
            return (try await consumer.value, refused)
        }
        #expect(outcome.taken == 2 && outcome.refused)
    }

    /// Pictures of the test pattern, as a live source's reader; `beforeEach` runs before each
    /// picture is handed over.
    final class PatternReader: PictureReader {
        let width = 160, height = 96, format = PixelFormat.yuv420p, frameRate = FrameRate(25, 1)
        let sampleAspectRatio: (width: Int, height: Int)? = nil
        let beforeEach: () -> Void
        var index = 0
        init(beforeEach: @escaping () -> Void) { self.beforeEach = beforeEach }
        func next() throws(MediaIOError) -> PixelBuffer? {
            beforeEach()
            defer { index += 1 }
            return testPicture(index)
        }
    }

    @Test("live pictures: with an IDR picture asked for before every picture, one comes at most every minimumKeyframeInterval (1/4 s at 25 fps: frames 0, 7, 14 ... 49, 8 of 50); with no minimum every picture is one")
    func keyframeRequestsAreSpacedOut() async throws {
        var settings = Self.settings(preset: "ultrafast")
        settings.maximumKeyframeInterval = 250
        func idrPictures(minimum: MediaTime) async throws -> [Int] {
            final class Source: Sendable { let live = Mutex<LivePictureSamples?>(nil) }
            let source = Source()
            let live = try LivePictureSamples(settings: settings, options: .init(paced: false, frameLimit: 50, minimumKeyframeInterval: minimum)) { () throws(MediaIOError) in
                PatternReader { source.live.withLock { $0?.requestKeyframe() } }
            }
            source.live.withLock { $0 = live }
            var sync: [Int] = []
            for try await sample in live where sample.isSync { sync.append(Int(sample.presentationTime.converted(toTimescale: 25).value)) }
            return sync
        }
        #expect(try await idrPictures(minimum: MediaTime(value: 1, timescale: 4)) == Array(stride(from: 0, through: 49, by: 7)))
        #expect(try await idrPictures(minimum: .zero) == Array(0..<50))
    }

    @Test("round trip: encode, decode with the decompression session, PSNR above 35 dB")
    func roundTrip() throws {
        let encoded = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { encoded.append($0) })
        let pictures = (0..<30).map { testPicture($0) }
        for (index, picture) in pictures.enumerated() { try session.encode(picture, presentationTime: Self.time(index)) }
        session.finish()
        let format = try #require(session.formatDescription)
        let decoded = Gathered<DecodedFrame>()
        let decoder = try DecompressionSession(formatDescription: format, outputHandler: { decoded.append($0) })
        for frame in encoded.all { try decoder.decode(frame.sampleBuffer) }
        decoder.finish()
        let outputs = decoded.all
        #expect(outputs.count == 30)
        for output in outputs {
            let index = Int(output.presentationTime.converted(toTimescale: 25).value)
            let pixels = try #require(output.pixelBuffer)
            #expect(lumaPSNR(pictures[index], pixels) > 35, "frame \(index)")
        }
    }

    @Test("impossible settings are refused before anything is encoded")
    func refusals() throws {
        var lowLevel = EncoderSettings(width: 1920, height: 1080, frameRate: Self.rate)
        lowLevel.level = "3"
        let level = #expect(throws: SessionError.self) { try CompressionSession(configuration: .init(settings: lowLevel), outputHandler: { _ in }) }
        #expect(level.map { "\($0)" }?.contains("level 3 allows frames of 1620 macroblocks") == true)
        #expect(level.map { "\($0)" }?.contains("use level 4 or higher") == true)
        var baseline = Self.settings()
        baseline.profile = "baseline"
        let bFrames = #expect(throws: SessionError.self) { try CompressionSession(configuration: .init(settings: baseline), outputHandler: { _ in }) }
        #expect(bFrames.map { "\($0)" }?.contains("baseline has no B-frames") == true)
        var odd = Self.settings()
        odd.width = 161
        #expect(throws: SessionError.self) { try CompressionSession(configuration: .init(settings: odd), outputHandler: { _ in }) }
        var preset = Self.settings()
        preset.preset = "warp"
        #expect(throws: SessionError.self) { try CompressionSession(configuration: .init(settings: preset), outputHandler: { _ in }) }
        var tenBit = Self.settings()
        tenBit.pixelFormat = .yuv(.yuv420, bitDepth: 10)
        tenBit.profile = "high"
        #expect(throws: SessionError.self) { try CompressionSession(configuration: .init(settings: tenBit), outputHandler: { _ in }) }
        #expect(throws: SessionError.self) { try CompressionSession(configuration: .init(settings: Self.settings(), passes: 2), outputHandler: { _ in }) }
    }

    @Test("two passes: the analysis pass delivers nothing, the second lands near the target")
    func twoPass() throws {
        var settings = Self.settings()
        settings.rateControl = .averageBitRate(40)
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: settings, passes: 2), outputHandler: { frames.append($0) })
        #expect(throws: SessionError.self) { try session.encode(testPicture(0), presentationTime: .zero) }
        var passes = 0
        var again = true
        while again {
            try session.beginPass()
            passes += 1
            for index in 0..<100 { try session.encode(testPicture(index), presentationTime: Self.time(index)) }
            again = try session.endPass()
        }
        #expect(passes == 2)
        let outputs = frames.all
        #expect(outputs.count == 100)
        #expect(outputs.allSatisfy { $0.pass == 2 })
        let bits = Double(outputs.reduce(0) { $0 + $1.sampleBuffer.data.count } * 8)
        let kbps = bits / 4 / 1000
        // Four seconds of a tiny synthetic picture: rate control has little room; the 5% figure is
        // measured on real-sized content by the encode command tests.
        #expect(abs(kbps - 40) / 40 < 0.15, "\(kbps) kbit/s")
    }

    @Test("pictures in another format or size are converted when the session is asked to, and refused otherwise")
    func conversion() throws {
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: Self.settings(), convertsPictures: true), outputHandler: { frames.append($0) })
        let nv12 = PixelBuffer(format: .nv12, width: 320, height: 192)
        for index in 0..<5 { try session.encode(nv12, presentationTime: Self.time(index)) }
        session.finish()
        #expect(frames.all.count == 5)
        // The one contract: a size or format change is explicit in the configuration.
        let strict = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { _ in })
        #expect { try strict.encode(nv12, presentationTime: .zero) } throws: { error in
            guard case .pictureMismatch(let expected, let got) = error as? SessionError else { return false }
            return expected == PictureGeometry(width: 160, height: 96, format: .yuv420p) && got == PictureGeometry(nv12)
        }
    }

    @Test("misuse is a thrown error, never a hang: a session without a handler is asynchronous whatever its configuration says; a handler session has no frames")
    func misuse() throws {
        let unhandled = try CompressionSession(configuration: .init(settings: Self.settings()))
        #expect(unhandled.configuration.isAsynchronous)
        _ = try unhandled.frames
        unhandled.invalidate()
        let handled = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { _ in })
        #expect { _ = try handled.frames } throws: { if case .outputsGoToHandler = $0 as? SessionError { true } else { false } }
    }

    /// The frames sequence taken, then 20 pictures fed with the blocking `encode` on the same
    /// thread before anything consumes them (the consumer was to run after the loop): the 9th
    /// waited for ever. Now it throws, saying why, after ``consumerWaitLimit`` (2 s).
    @Test("misuse: blocking encodes with the frames consumer never running end in a clear error, not a hang")
    func blockingEncodeWithoutAConsumerThrows() async throws {
        let session = try CompressionSession(configuration: .init(settings: Self.settings(preset: "ultrafast"), isAsynchronous: true))
        let frames = try session.frames
        let outcome = try await withDeadline(seconds: 30, "the blocking encode waited for ever") { () -> (encoded: Int, error: SessionError?) in
            try await offThePool {
                var encoded = 0
                do {
                    for index in 0..<20 {
                        try session.encode(testPicture(index), presentationTime: Self.time(index))
                        encoded += 1
                    }
                } catch {
                    return (encoded, error as? SessionError)
                }
                return (encoded, nil)
            }
        }
        guard case .outputsNotConsumed(let waited, _)? = outcome.error else {
            Issue.record("expected outputsNotConsumed, got \(String(describing: outcome.error)) after \(outcome.encoded) pictures")
            return
        }
        #expect(waited == 2 && outcome.encoded >= 8 && outcome.encoded < 20)
        #expect("\(outcome.error!)".contains("consume frames on another task"))
        // A consumer that comes later still gets what was encoded.
        session.invalidate()
        var taken = 0
        for try await _ in frames { taken += 1 }
        #expect(taken >= 1)
    }

    @Test("presentation times come out exactly as given, variable frame rate included; decode times never pass them")
    func exactTimes() throws {
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { frames.append($0) })
        // Irregular spacing in a 90 kHz timescale (a VFR phone recording).
        var times: [MediaTime] = []
        var t: Int64 = 0
        for index in 0..<40 {
            times.append(MediaTime(value: t, timescale: 90000))
            t += [3003, 3000, 3600, 2999, 6006][index % 5]
        }
        for (index, time) in times.enumerated() { try session.encode(testPicture(index), presentationTime: time) }
        session.finish()
        let samples = frames.all.map(\.sampleBuffer)
        #expect(samples.map(\.presentationTime).sorted { $0 < $1 } == times)
        for (a, b) in zip(samples, samples.dropFirst()) { #expect(a.decodeTime < b.decodeTime) }
        for sample in samples { #expect(sample.presentationTime >= sample.decodeTime) }
    }

    @Test("completeFrames(until:) gets every frame out and the session goes on with an IDR")
    func completeFramesThenGoOn() throws {
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: Self.settings()), outputHandler: { frames.append($0) })
        for index in 0..<20 { try session.encode(testPicture(index), presentationTime: Self.time(index)) }
        session.completeFrames(until: Self.time(19))
        #expect(frames.all.count == 20)
        for index in 20..<40 { try session.encode(testPicture(index), presentationTime: Self.time(index)) }
        session.finish()
        let samples = frames.all.map(\.sampleBuffer)
        #expect(samples.count == 40)
        #expect(samples[20].isSync && samples[20].presentationTime == Self.time(20))
        for (a, b) in zip(samples, samples.dropFirst()) { #expect(a.decodeTime < b.decodeTime) }
        for sample in samples { #expect(sample.presentationTime >= sample.decodeTime) }
    }

    /// Bytes of the frames shown among the first 20 and the last 40 of 80 pictures, with
    /// `change` made after the 40th picture (nil: no change), asynchronous so that the change
    /// must keep its place among queued pictures. x264 applies a change to every frame it has
    /// not encoded yet, those waiting in its lookahead too; the first 20 are encoded long before
    /// (within 10%: x264's rate control does not give them the same bytes once reconfigured).
    static func sizes(_ settings: EncoderSettings, change: CompressionSession.LiveChange?) throws -> (early: Int, late: Int) {
        let frames = Gathered<CompressedFrame>()
        let session = try CompressionSession(configuration: .init(settings: settings, isAsynchronous: true), outputHandler: { frames.append($0) })
        for index in 0..<80 {
            if index == 40, let change { try session.change(change) }
            try session.encode(testPicture(index), presentationTime: time(index))
        }
        session.finish()
        let all = frames.all.map { ($0.sampleBuffer.presentationTime, $0.sampleBuffer.data.count) }
        #expect(all.count == 80)
        return (all.filter { $0.0 < time(20) }.reduce(0) { $0 + $1.1 }, all.filter { $0.0 >= time(40) }.reduce(0) { $0 + $1.1 })
    }

    @Test("live changes: CRF of a constant-quality session, rate and VBV of a VBV session")
    func liveChanges() throws {
        var crf = Self.settings()
        crf.rateControl = .constantQuality(40)
        let steady = try Self.sizes(crf, change: nil)
        let sharper = try Self.sizes(crf, change: .init(constantQuality: 12))
        #expect(abs(sharper.early - steady.early) * 10 < steady.early, "the first frames, encoded before the change: \(steady.early) → \(sharper.early) bytes")
        #expect(sharper.late > steady.late * 3, "CRF 40 → 12: \(steady.late) → \(sharper.late) bytes")

        var vbv = Self.settings()
        vbv.rateControl = .averageBitRate(30)
        vbv.maximumBitRate = 30
        vbv.bufferSize = 60
        let capped = try Self.sizes(vbv, change: nil)
        let raised = try Self.sizes(vbv, change: .init(averageBitRate: 600, maximumBitRate: 600, bufferSize: 1200))
        #expect(abs(raised.early - capped.early) * 10 < capped.early)
        #expect(raised.late > capped.late * 2, "30 → 600 kbit/s: \(capped.late) → \(raised.late) bytes")
    }

    @Test("live changes x264 would ignore are errors")
    func liveChangesThatCannotApply() throws {
        var abr = Self.settings()
        abr.rateControl = .averageBitRate(100)
        let session = try CompressionSession(configuration: .init(settings: abr), outputHandler: { _ in })
        #expect(throws: SessionError.self) { try session.change(.init(constantQuality: 20)) }
        #expect(throws: SessionError.self) { try session.change(.init(averageBitRate: 200)) }  // no VBV
        #expect(throws: SessionError.self) { try session.change(.init(maximumBitRate: 200)) }
        var crf = Self.settings()
        crf.rateControl = .constantQuality(23)
        let quality = try CompressionSession(configuration: .init(settings: crf), outputHandler: { _ in })
        #expect(throws: SessionError.self) { try quality.change(.init(constantQuality: 60)) }
        quality.finish()
        #expect(throws: SessionError.self) { try quality.change(.init(constantQuality: 20)) }
    }
}
