// A 1080p decode consumed through a decompression session's `frames` sequence, by a consumer
// that keeps up or one that takes `delay` per frame: the session must hold memory to its
// in-flight bound whatever the consumer does. Benchmarks/frames-consumer.sh runs it under
// GNU time for the peak RSS.
//   FramesConsumer STREAM.264 [DELAY_MS]
import H264Kit
import Foundation

@main
struct FramesConsumer {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2 else {
            FileHandle.standardError.write(Data("usage: FramesConsumer STREAM.264 [DELAY_MS]\n".utf8))
            exit(2)
        }
        let delay = arguments.count > 2 ? Int(arguments[2]) ?? 0 : 0
        let reader = try SampleBufferReader(path: arguments[1])
        guard let first = try reader.next() else { exit(1) }
        let session = try DecompressionSession(formatDescription: first.videoFormatDescription!,
                                               configuration: .init(isAsynchronous: true, maximumFramesInFlight: 8))
        let frames = try session.frames
        let consumer = Task {
            var count = 0
            var checksum = 0
            for try await frame in frames {
                if let picture = frame.pixelBuffer { checksum &+= Int(picture.planes[0].base.load(as: UInt8.self)) }
                count += 1
                if delay > 0 { try? await Task.sleep(for: .milliseconds(delay)) }
            }
            return (count, checksum)
        }
        let clock = ContinuousClock()
        let start = clock.now
        try await session.decode(first)
        while let sample = try reader.next() { try await session.decode(sample) }
        await session.finish()
        let (count, _) = try await consumer.value
        let elapsed = clock.now - start
        print("\(count) frames in \(elapsed), most in flight \(session.maximumFramesInFlightReached)")
    }
}
