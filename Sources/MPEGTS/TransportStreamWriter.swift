public import MediaCore
import SystemIO

/// Writes samples as a transport stream file (or to standard output, a pipe, a device), through
/// a ``TransportStreamMuxer``, as `MovieWriter` writes a movie.
///
/// A file is written under a temporary name and renamed into place by ``finish()``; a writer
/// let go unfinished, or ``cancel()``ed, leaves nothing. Standard output and pipes are written
/// as the samples come, a megabyte at a time (``Options/flushesEverySample`` for a live
/// receiver: each sample's packets at once). Memory: the output buffer and one sample.
public final class TransportStreamWriter {
    /// How to write.
    public struct Options: Sendable, Hashable {
        /// The stream's layout, PIDs and clock.
        public var muxer: TransportStreamMuxer.Options
        /// Write each sample's packets as soon as they are made (live output), not a megabyte
        /// at a time.
        public var flushesEverySample: Bool
        /// About how many bytes the stream will hold, when the caller knows (a remux: its
        /// input's size and a tenth for the packets' headers). That much disk is allocated
        /// before the stream is written, which spares the file system reserving it page by page;
        /// what the stream does not use is freed when it is finished. Nil (the default): nothing
        /// is reserved. A regular file on a file system that can (`fallocate`); elsewhere it
        /// changes nothing.
        public var expectedSize: UInt64?

        /// Options: FFmpeg's layout, written a megabyte at a time.
        public init(muxer: TransportStreamMuxer.Options = .init(), flushesEverySample: Bool = false, expectedSize: UInt64? = nil) {
            self.muxer = muxer
            self.flushesEverySample = flushesEverySample
            self.expectedSize = expectedSize
        }
    }

    /// What a writer wrote.
    public struct Summary: Sendable, Hashable {
        /// Samples written.
        public var sampleCount: Int
        /// Transport packets written.
        public var packetCount: Int
        /// Bytes written.
        public var fileSize: Int
        /// Program clock references written.
        public var clockReferenceCount: Int
        /// The time from the first sample's presentation to the last one's end.
        public var duration: MediaTime
    }

    /// The output's path ("-" for standard output).
    public let path: String
    /// How the stream is written.
    public let options: Options
    private var muxer: TransportStreamMuxer
    private var file: OutputFile?
    private var written = 0
    private var firstPresentation: MediaTime?
    private var end: MediaTime?

    /// Bytes gathered before a write.
    static let writeSize = 256 << 10

    /// Creates the stream at `path` ("-": standard output; a device or pipe is written in place).
    public init(path: String, options: Options = Options()) throws(ContainerError) {
        self.path = path
        self.options = options
        do { muxer = try TransportStreamMuxer(options: options.muxer) } catch {
            throw ContainerError(error, while: "setting up the muxer", path: path)
        }
        do { file = try OutputFile(path: path) } catch {
            throw ContainerError(error, while: "creating the stream", path: path)
        }
        if let size = options.expectedSize { file?.reserve(Int64(clamping: size)) }
    }

    deinit { file?.discard() }

    /// Samples appended so far.
    public var sampleCount: Int { muxer.sampleCount }

    /// Declares a track before its first sample (its language in the PMT; every track declared
    /// first, the first PMT names them all). See `TransportStreamMuxer.addStream(for:)`.
    public func addStream(for track: TrackDescription) throws(ContainerError) {
        do { try muxer.addStream(for: track) } catch { throw ContainerError(error, while: "adding track \(track.id)", path: path) }
    }

    /// The program's streams so far.
    public var streams: [TransportStreamMuxer.Stream] { muxer.streams }

    /// Appends the next sample, in decoding order.
    public func append(_ sample: SampleBuffer) throws(ContainerError) {
        guard file != nil else { throw ContainerError(.invalidInput, "the stream was finished or cancelled", path: path) }
        do { try muxer.write(sample) } catch {
            throw ContainerError(error, while: "muxing", path: path)
        }
        if firstPresentation == nil || sample.presentationTime < firstPresentation! { firstPresentation = sample.presentationTime }
        let sampleEnd = sample.presentationTime + (sample.duration.isNumeric ? sample.duration : .zero)
        if end == nil || sampleEnd > end! { end = sampleEnd }
        if muxer.pendingByteCount >= Self.writeSize || options.flushesEverySample { try flush() }
    }

    /// Writes what is gathered and puts the stream in place.
    public func finish() throws(ContainerError) -> Summary {
        guard let file else { throw ContainerError(.invalidInput, "the stream was finished or cancelled", path: path) }
        muxer.flush()  // the audio frames gathered for a PES packet
        try flush()
        do { try file.commit() } catch { throw ioError(error) }
        self.file = nil
        return Summary(sampleCount: muxer.sampleCount, packetCount: muxer.packetCount, fileSize: written, clockReferenceCount: muxer.clockReferenceCount,
                       duration: firstPresentation.flatMap { first in end.map { $0 - first } } ?? .zero)
    }

    /// Removes what was written (an unfinished temporary file).
    public func cancel() {
        file?.discard()
        file = nil
    }

    private func flush() throws(ContainerError) {
        guard let file, muxer.pendingByteCount > 0 else { return }
        let count = muxer.pendingByteCount
        do {
            try muxer.drain { (bytes) throws(SystemError) in
                var start = 0
                while start < bytes.count {
                    let end = min(bytes.count, start + Self.writeSize)
                    try file.write(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                    start = end
                }
            }
        } catch { throw ioError(error) }
        written += count
    }

    private func ioError(_ error: SystemError) -> ContainerError {
        ContainerError(error, while: "writing", path: path)
    }
}
