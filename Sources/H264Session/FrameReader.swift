public import SampleFlow
import Dispatch
import SystemIO
import H264Bitstream
public import H264Codec
import ISOBMFF
import MPEGTS
public import MediaCore

/// Decodes a whole input (an Annex-B stream, an MP4 or MOV file) to frames in presentation
/// order: a `MediaSource`, a ``DecompressionSession`` (made again when the stream changes to
/// a description the session cannot take), the edit list, and size changes, in one call.
///
/// Every sample gives one ``DecodedFrame`` (a picture, a sample not shown because of the edit
/// list, or a report of a sample that gave no picture); damage is a frame's status, never the
/// end. Read with ``next()`` or as an `AsyncSequence`. Memory is bounded by the decoder's own
/// reorder and threading depth.
public final class FrameReader {
    /// How the pictures come out.
    public struct Options: Sendable {
        /// How libavcodec spreads the decoding over threads.
        public var threading: H264Decoder.Threading
        /// Convert pictures to this pixel format (libswscale, as ffmpeg converts); nil keeps
        /// the stream's.
        public var pixelFormat: PixelFormat?
        /// What size the pictures come out at.
        public var size: OutputSize
        /// Keep at most one picture per this much presentation time (thumbnails every second,
        /// say): the picture on screen at each multiple of it, counted from time 0 (a picture
        /// without a duration: the first at or after each step from the previous one kept); nil
        /// keeps every picture.
        public var interval: MediaTime?
        /// The largest picture decoded (see ``DecompressionSession/Configuration/limits``).
        public var limits: PictureLimits
        /// Where the source's samples of other tracks go (a transcode copies its audio), in the
        /// order they come, on the thread reading; nil drops them (a source reading video alone
        /// has none).
        public var otherSamples: (@Sendable (SampleBuffer) -> Void)?

        /// Options; by default every picture, at the first picture's size, in the stream's pixel format.
        public init(threading: H264Decoder.Threading = .init(), pixelFormat: PixelFormat? = nil, size: OutputSize = .first, interval: MediaTime? = nil,
                    limits: PictureLimits = PictureLimits()) {
            self.threading = threading
            self.pixelFormat = pixelFormat
            self.size = size
            self.interval = interval
            self.limits = limits
        }
    }

    /// The size of the pictures after a size change mid-stream.
    public enum OutputSize: Sendable, Hashable {
        /// The first picture's size and format, as ffmpeg scales pictures after a size change.
        case first
        /// Each picture's own size.
        case native
        /// This size.
        case fixed(width: Int, height: Int)
    }

    /// The input being decoded.
    public let source: MediaSource
    /// How the pictures come out.
    public let options: Options
    private var session: DecompressionSession?
    private let outputs = Outputs()
    private var queue: [DecodedFrame] = []
    private var queueIndex = 0
    private var ended = false
    private var first: PictureGeometry?
    private var scaler: PixelConverter?
    private var nextKept: MediaTime?

    /// Decodes `path` ("-" for an Annex-B stream on standard input).
    public convenience init(path: String, options: Options = Options(), sourceOptions: MediaSource.Options = .decoding) throws(SessionError) {
        try self.init(source: try flowing { () throws(SampleFlowError) in try MediaSource(path: path, options: sourceOptions) }, options: options)
    }

    /// Decodes the samples of `source`. Throws ``SessionError/invalidOption(_:)`` for an
    /// interval that is not a positive time or a fixed size that is not positive.
    public init(source: MediaSource, options: Options = Options()) throws(SessionError) {
        if let interval = options.interval, !(interval.isNumeric && interval > .zero) {
            throw .invalidOption("the picture interval \(interval) is not a positive time")
        }
        if case .fixed(let width, let height) = options.size, width <= 0 || height <= 0 {
            throw .invalidOption("the picture size \(width)x\(height) is not positive")
        }
        self.source = source
        self.options = options
    }

    deinit { session?.invalidate() }

    /// The next frame in presentation order, or nil at the end.
    public func next() throws(SessionError) -> DecodedFrame? {
        while true {
            while queueIndex < queue.count {
                var frame = queue[queueIndex]
                queueIndex += 1
                if try keep(&frame) { return frame }
            }
            queue = outputs.frames.withLock { taken in
                defer { taken.removeAll() }
                return taken
            }
            queueIndex = 0
            if !queue.isEmpty { continue }
            if ended { return nil }
            guard let sample = try flowing({ () throws(SampleFlowError) in try source.next() }) else {
                session?.finish()
                ended = true
                continue
            }
            // Frames are pictures: samples of other tracks go to whoever asked for them.
            guard let video = sample.videoFormatDescription else {
                options.otherSamples?(sample)
                continue
            }
            if let current = session, !current.canAccept(video) {
                // Another NAL length size: finish this session, go on in a new one.
                current.finish()
                session = nil
            }
            if session == nil {
                var configuration = DecompressionSession.Configuration(pixelFormat: options.pixelFormat, threading: options.threading, limits: options.limits)
                if case .fixed(let width, let height) = options.size { configuration.size = (width, height) }
                let outputs = self.outputs
                session = try DecompressionSession(formatDescription: video, configuration: configuration) { frame in
                    outputs.frames.withLock { $0.append(frame) }
                }
            }
            try session!.decode(sample)
        }
    }

    /// The first multiple of `interval` at or after `time`, in one step (a time far from 0 must
    /// not cost a loop per interval); nil when it does not fit a media time.
    private static func firstMultiple(of interval: MediaTime, atOrAfter time: MediaTime) -> MediaTime? {
        let ticks = time.converted(toTimescale: interval.timescale, rounding: .towardPositiveInfinity)
        guard ticks.isNumeric else { return nil }
        let count = ticks.value / interval.value + (ticks.value % interval.value > 0 ? 1 : 0)
        let (value, overflow) = count.multipliedReportingOverflow(by: interval.value)
        return overflow ? nil : MediaTime(value: value, timescale: interval.timescale)
    }

    /// Applies the interval and the first-size rule; false for a picture the interval skips.
    private func keep(_ frame: inout DecodedFrame) throws(SessionError) -> Bool {
        guard var picture = frame.pixelBuffer else { return true }
        if let interval = options.interval, frame.presentationTime.isNumeric {
            guard interval.isNumeric, interval > .zero else { throw .invalidOption("the interval \(interval) is not a positive time") }
            let time = frame.presentationTime
            if frame.duration.isNumeric, frame.duration > .zero, let point = Self.firstMultiple(of: interval, atOrAfter: time) {
                // The picture on screen at each multiple of the interval (from time 0): which
                // pictures are kept does not depend on where reading started, so a file cut into
                // chunks keeps the same ones as the whole.
                guard point < time + frame.duration, nextKept.map({ point >= $0 }) ?? true else { return false }
                nextKept = point + interval
            } else {
                // No duration: the first picture at or after each step from the first one kept.
                if let next = nextKept, time < next { return false }
                let from = nextKept ?? time
                let elapsed = (time - from).converted(toTimescale: interval.timescale, rounding: .towardNegativeInfinity)
                nextKept = from + interval * (elapsed.value / interval.value + 1)
            }
        }
        if let first {
            if options.size == .first, PictureGeometry(picture) != first {
                do {
                    if scaler == nil { scaler = try PixelConverter(format: first.format, size: (first.width, first.height)) }
                    picture = try scaler!.convert(picture)
                } catch {
                    throw .codecFailed(error)
                }
                frame.pixelBuffer = picture
            }
        } else {
            first = PictureGeometry(picture)
        }
        return true
    }
}

/// Frames the session's handler delivers, waiting for ``FrameReader/next()``.
private final class Outputs: Sendable {
    let frames = Locked<[DecodedFrame]>([])
}

extension FrameReader: AsyncSequence {
    /// A decoded frame.
    public typealias Element = DecodedFrame
    /// The error reading or decoding throws.
    public typealias Failure = SessionError

    /// Iterates the frames; decoding runs on a dispatch queue, off the cooperative pool.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: FrameReader

        /// The next frame in presentation order, or nil at the end.
        public mutating func next() async throws(SessionError) -> DecodedFrame? { try await next(isolation: nil) }

        /// The next frame in presentation order, or nil at the end.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SessionError) -> DecodedFrame? {
            nonisolated(unsafe) let reader = self.reader  // one iterator at a time uses it
            return try await offloaded { () throws(SessionError) -> DecodedFrame? in try reader.next() }
        }
    }

    /// An iterator over the frames, decoding off the cooperative pool.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: self) }
}
