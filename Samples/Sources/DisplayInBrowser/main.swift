// Case study 1 of seed 003: "Displaying an H.264 stream in a layer in your application" —
// AVSampleBufferDisplayLayer, with a web browser as the display. The program enqueues sample
// buffers into a DisplayLayer as fast as the layer says it is ready for them; the page (open
// the printed URL in Chrome, Edge or Firefox) decodes them with WebCodecs and draws each frame
// when the layer's control timebase reaches its presentation time. The program drives that
// timebase from code: play, pause, then a seek to an exact frame (flush, set the time, enqueue
// from the sync sample before it with the frames before the target hidden), then play to the end.
//
//     swift run DisplayInBrowser [IN.264|IN.mp4] [PORT]      # then open the URL it prints
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let input = arguments.first { !$0.allSatisfy(\.isNumber) } ?? "Media/testsrc2-320x240-bframes.264"
let port = arguments.compactMap { Int($0) }.first ?? 0

do {
    // 1. The stream, as sample buffers in decode order (a short file: kept in memory, so that
    //    the seek below can go back in it).
    let source = try MediaSource(path: input)
    var samples: [SampleBuffer] = []
    while let sample = try source.next() { samples.append(sample) }
    guard let first = samples.first else { throw SampleError("\(input) has no video") }

    // 2. The layer and the server that shows it to every page that opens the URL.
    let layer = DisplayLayer()
    let server = try DisplayServer(options: .init(port: port))
    server.show(layer)
    let serving = Task { try await server.run { url in printNow(url) } }
    print("waiting for a page to open the URL…")
    while layer.statistics.pagesWatching == 0 { try await Task.sleep(for: .milliseconds(50)) }

    // 3. The producer: enqueue while the layer is ready (requestMediaDataWhenReady). The layer
    //    is ready while a page has less than a second of samples waiting, so memory stays flat.
    //    `hiddenBefore`: frames shown before this time are decoded but not drawn (a seek).
    func feed(from index: Int, hiddenBefore target: MediaTime = .negativeInfinity) -> Task<Void, any Error> {
        Task {
            for sample in samples[index...] {
                try await layer.requestMediaDataWhenReady()
                layer.enqueue(sample, hidden: sample.presentationTime < target)
            }
            layer.endOfStream()
        }
    }
    let minimumTime = samples.map(\.presentationTime).min { $0 < $1 } ?? first.presentationTime

    // 4. Play from the first frame at normal speed.
    layer.setRate(1, time: minimumTime)
    var producer = feed(from: 0)
    print("playing")
    try await Task.sleep(for: .seconds(1.5))

    // 5. Pause: rate 0. The page holds the frame on screen; its clock stops.
    layer.setRate(0)
    try await Task.sleep(for: .milliseconds(300))
    let paused = layer.pageReports.first?.time ?? 0
    try await Task.sleep(for: .seconds(1))
    print("paused at \(paused) s; a second later the page's clock says \(layer.pageReports.first?.time ?? 0) s")

    // 6. Seek to frame 60 (presentation order): stop the producer, flush every queue, set the
    //    time, and enqueue again from the sync sample at or before the target.
    producer.cancel()
    _ = await producer.result
    let times = samples.map(\.presentationTime).sorted { $0 < $1 }
    let target = times[min(60, times.count - 1)]
    let syncIndex = samples.indices.last { samples[$0].isSync && samples[$0].presentationTime <= target } ?? 0
    layer.flush()
    layer.setTime(target)
    producer = feed(from: syncIndex, hiddenBefore: target)
    try await Task.sleep(for: .milliseconds(500))
    print("seeked to \(target.seconds) s (decoding from sample \(syncIndex)); the page shows \(layer.pageReports.first?.presentedTime ?? -1) s")

    // 7. Play to the end; the page reports when it has shown the last frame.
    layer.setRate(1)
    try await producer.value
    try await layer.waitUntilPlaybackEnded()
    if let report = layer.pageReports.first {
        print("the page: \(report.framesPresented) frames presented, \(report.framesDropped) dropped late, \(report.framesFlushed) flushed by the seek, \(report.decodeErrors) decode errors, "
              + "late p95 \(report.latenessMs.p95) ms, \(report.codec) \(report.width)x\(report.height)")
        if let error = report.error { throw SampleError("the page could not play it: \(error)") }
    }
    serving.cancel()
} catch {
    print("DisplayInBrowser: \(error)")
    exit(1)
}

/// Writes a line to standard output at once (print's output waits in a buffer when it goes
/// to a pipe; a script reads the URL from one).
func printNow(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { bytes in _ = write(1, bytes.baseAddress, bytes.count) }
}

/// An error of this program's own.
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
