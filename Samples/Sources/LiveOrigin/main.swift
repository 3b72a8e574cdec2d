// A live HLS origin in code: a file published as if it were live (each sample at its decoding
// time on the wall clock), cut into CMAF segments as it comes and served over HTTP from memory.
// The first of the two tasks to end ends the other, and an error of either is this program's.
//
//     swift run LiveOrigin [FILE] [PORT]        # then: ffplay http://127.0.0.1:PORT/live/index.m3u8
//
// It prints the URLs once the server listens, publishes the file once (loops: false), keeps
// serving the finished playlist for a few seconds (a player may still be reading it), then
// stops.
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let input = arguments.first ?? #filePath.split(separator: "/").dropLast(3).joined(separator: "/").prefixed("/") + "/Media/testsrc2-320x240-bframes.264"
let port = arguments.dropFirst().first.flatMap(Int.init) ?? 8080

extension String {
    func prefixed(_ prefix: String) -> String { hasPrefix(prefix) ? self : prefix + self }
}

do {
    let origin = try HLSOrigin(options: .init(port: port, segmenter: .init(segmentDuration: MediaTime(value: 1, timescale: 1))))
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            try await origin.run(onListening: { url in
                print(url)
                print(origin.mediaPlaylistURL(port: port))
                fflush(nil)  // at once, for whoever reads them through a pipe or a file
            })
        }
        group.addTask {
            try await origin.publish(MediaFileSamples(path: input, loops: false), paced: true)
            try await Task.sleep(for: .seconds(8))  // the ended playlist stays up a while
        }
        try await group.next()  // the first to end (or throw) ends the other
        group.cancelAll()
    }
    let served = origin.statistics
    print("published and served: \(served.requests) requests, \(served.notFound) not found")
} catch {
    print("LiveOrigin: \(error)")
    exit(1)
}
