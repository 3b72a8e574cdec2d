import Benchmark
import Foundation
import H264Bitstream
import H264Codec
import ISOBMFF
import MPEGTS
import MediaCore

/// The sample stream embedded in the repository (320x240, B-frames, 30000/1001 fps).
let sampleStream: [UInt8] = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    let url = root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264")
    guard let data = try? Data(contentsOf: url) else { fatalError("cannot read \(url.path)") }
    return [UInt8](data)
}()

/// About 8 MB of Annex-B: the sample stream end to end, for the scanners.
let largeStream: [UInt8] = Array(repeating: sampleStream, count: (8 << 20) / sampleStream.count + 1).flatMap { $0 }

/// Exp-Golomb codes as slice headers are full of: 64 Ki ue(v) and se(v) values.
let expGolombPayload: [UInt8] = {
    var writer = BitWriter()
    for value in 0..<(1 << 15) {
        writer.ue(UInt32(value % 300))
        writer.se(Int32(value % 61) - 30)
    }
    writer.rbspTrailingBits()
    return writer.bytes
}()

/// The stream's first SPS, without its start code.
let firstSPS: [UInt8] = {
    var found: [UInt8] = []
    largeStream.withUnsafeBytes { raw in
        AnnexB.forEachNALUnit(in: raw) { nal in
            if found.isEmpty, raw[nal.payload.lowerBound] & 0x1F == 7 { found = Array(raw[nal.payload]) }
        }
    }
    return found
}()

/// Samples of the stream, built once for the mux and decode benchmarks.
let samples: [SampleBuffer] = {
    guard let built = try? SampleBufferBuilder.samples(fromAnnexB: sampleStream, frameRate: .stream(fallback: FrameRate(25, 1))).samples else {
        fatalError("the sample stream does not build")
    }
    return built
}()

/// A decoder kept across iterations, fed one sample per iteration (the stream loops at its IDR).
final class DecoderState: @unchecked Sendable {
    var decoder: H264Decoder
    var next = 0
    init() throws { decoder = try H264Decoder(formatDescription: samples[0].formatDescription, threading: .single) }
}

/// An encoder kept across iterations, given one 640x360 picture per iteration.
final class EncoderState: @unchecked Sendable {
    var encoder: H264Encoder
    let pictures: [PixelBuffer]
    var next: Int64 = 0
    init() throws {
        var settings = EncoderSettings(width: 640, height: 360, frameRate: FrameRate(25, 1), preset: "ultrafast", rateControl: .constantQuality(23))
        settings.threads = 1
        encoder = try H264Encoder(settings: settings)
        // Eight pictures of a moving gradient with a little noise, encoded round and round.
        var seed: UInt32 = 1
        pictures = (0..<8).map { t in
            let picture = PixelBuffer(format: .yuv420p, width: 640, height: 360)
            for plane in picture.planes.indices {
                picture.withUnsafeMutableBytes(ofPlane: plane) { bytes in
                    let info = picture.planes[plane]
                    for y in 0..<info.height {
                        for x in 0..<info.width {
                            seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5
                            bytes[y * info.bytesPerRow + x] = UInt8(truncatingIfNeeded: x + y + 6 * t + Int(seed & 7))
                        }
                    }
                }
            }
            return picture
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    // Time is reported, and checked loosely (machines differ); allocations are checked closely.
    // Names stay to letters, digits and "-": the thresholds files are named after them.
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        maxDuration: .seconds(2),
        maxIterations: 10_000,
        thresholds: [
            .wallClock: BenchmarkThresholds(relative: [.p50: 35, .p75: 50]),
            .throughput: BenchmarkThresholds(relative: [.p50: 35]),
            .mallocCountTotal: BenchmarkThresholds(relative: [.p50: 5], absolute: [.p50: 20]),
            .peakMemoryResident: BenchmarkThresholds(relative: [.p50: 25]),
        ]
    )

    Benchmark("StartCodeScan-8MB") { benchmark in
        for _ in benchmark.scaledIterations {
            var count = 0
            largeStream.withUnsafeBytes { raw in AnnexB.forEachNALUnit(in: raw) { _ in count += 1 } }
            blackHole(count)
        }
    }

    Benchmark("BitReader-64Ki-ExpGolomb") { benchmark in
        for _ in benchmark.scaledIterations {
            var sum: Int64 = 0
            let span = expGolombPayload.span
            var reader = BitReader(span)
            for _ in 0..<(1 << 15) {
                sum &+= Int64((try? reader.ue()) ?? 0)
                sum &+= Int64((try? reader.se()) ?? 0)
            }
            blackHole(sum)
        }
    }

    Benchmark("SPSParse", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? SequenceParameterSet(nalUnit: firstSPS.span))
        }
    }

    Benchmark("SampleBuilding-8MB") { benchmark in
        for _ in benchmark.scaledIterations {
            let built = try? SampleBufferBuilder.samples(fromAnnexB: largeStream, frameRate: .stream(fallback: FrameRate(25, 1)))
            blackHole(built?.samples.count)
        }
    }

    Benchmark("Mux-90-samples-MP4") { benchmark in
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-benchmark-\(getpid()).mp4").path
        for _ in benchmark.scaledIterations {
            let writer = try MovieWriter(path: path, options: .init())
            for sample in samples { try writer.append(sample) }
            blackHole(try writer.finish())
        }
        unlink(path)
    }

    let decoding = try? DecoderState()
    Benchmark("DecodePerFrame-320x240") { benchmark in
        guard let state = decoding else { fatalError("no decoder") }
        for _ in benchmark.scaledIterations {
            let sample = samples[state.next % samples.count]
            while try !state.decoder.send(sample.data, timestamp: Int64(state.next)) {
                while let picture = try state.decoder.receive() { blackHole(picture) }
            }
            while let picture = try state.decoder.receive() { blackHole(picture) }
            state.next += 1
        }
    }

    let encoding = try? EncoderState()
    Benchmark("EncodePerFrame-640x360-ultrafast") { benchmark in
        guard let state = encoding else { fatalError("no encoder") }
        for _ in benchmark.scaledIterations {
            let picture = state.pictures[Int(state.next % Int64(state.pictures.count))]
            blackHole(try state.encoder.encode(picture, timestamp: state.next))
            state.next += 1
        }
    }
}
