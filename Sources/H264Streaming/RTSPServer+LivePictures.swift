import H264Network
public import H264Session
import MediaCore

extension RTSPServer {
    /// Serves `pictures` (encoded live) at `path` as one stream every client joins, and runs
    /// the server until the pictures end or the task is cancelled: `h264kit stream PICTURES.y4m
    /// rtsp://…` as one call.
    ///
    /// The first picture gives the stream's description (its parameter sets go in DESCRIBE's
    /// answer); a client that joins or sends a picture loss indication makes the next picture
    /// an IDR picture (`LivePictureSamples.requestKeyframe()`). When the pictures end, every
    /// client gets an RTCP BYE, and the server stops half a second later, once they are out.
    /// `onListening` gets the TCP port once the server listens.
    public func run(live pictures: LivePictureSamples, at path: String, onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws(StreamingError) {
        var iterator = pictures.makeAsyncIterator()
        let first: SampleBuffer?
        do { first = try await iterator.next() } catch {
            if Task.isCancelled { return }  // stopped before anything was served
            throw .samples(error)
        }
        if Task.isCancelled { return }
        guard let first else { throw .invalidOption("no pictures to serve") }
        let stream = try RTSPBroadcast(formatDescription: try first.requireVideo(input: "the pictures"), packetizer: options.packetizer) { pictures.requestKeyframe() }
        try serve(.broadcast(stream), at: path)
        try stream.send(first)
        let rest = RemainingPictures(iterator: iterator)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.run(onListening: onListening) }
                group.addTask {
                    _ = try await stream.send(contentsOf: rest)
                    try await Task.sleep(for: .milliseconds(500))  // the BYEs out
                }
                // The pictures' end stops the server; the server's failure stops the pictures.
                try await group.next()
                group.cancelAll()
            }
        } catch is CancellationError {
        } catch {
            throw .sending(error)
        }
    }
}

/// The rest of a live sequence whose first picture was taken.
private struct RemainingPictures: AsyncSequence, @unchecked Sendable {  // one task iterates it
    let iterator: LivePictureSamples.Iterator
    func makeAsyncIterator() -> LivePictureSamples.Iterator { iterator }
}
