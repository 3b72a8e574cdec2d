public import H264Codec
public import MediaCore
public import MediaIO
import Synchronization
import SystemIO

/// Pictures encoded as a live camera's are: each picture goes to the compression session when
/// its presentation time comes (real time from the first, or as fast as they come with
/// ``Options/paced`` off), and its sample buffer comes out as soon as it is encoded. On
/// ``requestKeyframe()`` (a receiver's RTCP picture loss indication, a viewer joining) the next
/// picture is encoded as an IDR picture: seed 003's case study 4, images to the network, with
/// the session's `forceKeyframe` frame property.
///
/// The encoder is x264 with `tune=zerolatency` unless the settings name another tune: no
/// B-frames and no look-ahead, so each picture's frame leaves the encoder before the next
/// picture comes. The pictures come from a `PictureReader` (Y4M or raw), opened again for
/// each pass when looping, times rising across passes. Memory is bounded by the session's
/// frames in flight.
public struct LivePictureSamples: AsyncSequence, Sendable {
    /// How the pictures are taken.
    public struct Options: Sendable {
        /// Wait for each picture's time (true), or encode them as fast as they come.
        public var paced: Bool
        /// Start again at the first picture after the last, without end.
        public var loops: Bool
        /// Encode at most this many pictures.
        public var frameLimit: Int?
        /// The least media time between two IDR pictures made on request: a request sooner
        /// waits until then (it is not dropped), so receivers that ask again and again (a PLI
        /// with every packet, clients joining by the hundred) cost at most one IDR picture in
        /// this long rather than every picture being one.
        public var minimumKeyframeInterval: MediaTime

        /// Paced, one pass, no limit, requested IDR pictures at least 1/4 s apart.
        public init(paced: Bool = true, loops: Bool = false, frameLimit: Int? = nil, minimumKeyframeInterval: MediaTime = MediaTime(value: 1, timescale: 4)) {
            self.paced = paced
            self.loops = loops
            self.frameLimit = frameLimit
            self.minimumKeyframeInterval = minimumKeyframeInterval
        }
    }

    /// Opens the pictures (once per pass).
    public let openReader: @Sendable () throws(MediaIOError) -> any PictureReader
    /// What x264 encodes: the reader's size, format and rate are filled in.
    public let settings: EncoderSettings
    /// How the pictures are taken.
    public let options: Options
    private let keyframeRequests = KeyframeRequests()

    /// Live samples of the pictures `openReader` gives, encoded with `settings` (whose size,
    /// pixel format and frame rate are taken from the reader; pictures x264 does not take are
    /// converted, `H264Encoder.encodingFormat(for:)`). Fails when the pictures cannot
    /// be opened or the settings are impossible.
    public init(settings: EncoderSettings, options: Options = Options(), openReader: @escaping @Sendable () throws(MediaIOError) -> any PictureReader) throws(SessionError) {
        let reader: any PictureReader
        do { reader = try openReader() } catch { throw .mediaIO(error) }
        var settings = settings
        settings.width = reader.width
        settings.height = reader.height
        settings.pixelFormat = H264Encoder.encodingFormat(for: reader.format)
        settings.frameRate = reader.frameRate
        if settings.tune == nil { settings.tune = "zerolatency" }
        if settings.sampleAspectRatio == nil { settings.sampleAspectRatio = reader.sampleAspectRatio }
        do { try settings.validate() } catch { throw .invalidSettings(error) }
        self.settings = settings
        self.options = options
        self.openReader = openReader
    }

    /// Makes the next picture encoded an IDR picture (with its parameter sets), once.
    public func requestKeyframe() {
        keyframeRequests.requested.store(true, ordering: .relaxed)
        keyframeRequests.count.add(1, ordering: .relaxed)
    }

    /// Keyframe requests taken so far.
    public var keyframesRequested: Int { keyframeRequests.count.load(ordering: .relaxed) }

    /// An iterator that starts encoding on its first call.
    public func makeAsyncIterator() -> Iterator { Iterator(self) }

    /// The encoded samples as they come; the encoding stops when the iterator is dropped.
    public struct Iterator: AsyncIteratorProtocol {
        private let producer: Producer
        private var frames: CompressionSession.Frames.AsyncIterator?

        init(_ samples: LivePictureSamples) { producer = Producer(samples) }

        /// The next encoded sample, or nil after the last picture.
        public mutating func next() async throws -> SampleBuffer? {
            if frames == nil { frames = try producer.start().makeAsyncIterator() }
            guard let frame = try await frames?.next() else {
                if let error = producer.failure { throw error }
                return nil
            }
            return frame.sampleBuffer
        }
    }

    /// The task feeding the compression session; cancelled when its iterator goes away.
    final class Producer: Sendable {
        let samples: LivePictureSamples
        let task = Locked<Task<Void, Never>?>(nil)
        let error = Locked<SessionError?>(nil)

        init(_ samples: LivePictureSamples) { self.samples = samples }

        deinit { task.withLock { $0?.cancel() } }

        var failure: SessionError? { error.withLock { $0 } }

        func start() throws(SessionError) -> CompressionSession.Frames {
            let session = try CompressionSession(configuration: .init(settings: samples.settings, isAsynchronous: true, maximumFramesInFlight: 4,
                                                                      convertsPictures: true))
            let frames = try session.frames
            let samples = self.samples
            let started = Task { [weak self] in
                do throws(SessionError) {
                    try await Self.feed(session, samples)
                } catch {
                    self?.error.withLock { $0 = error }
                }
                // Stopped (the iterator went): nobody takes what the encoder still holds.
                if Task.isCancelled { session.invalidate() } else { await session.finish() }
            }
            task.withLock { $0 = started }
            return frames
        }

        static func feed(_ session: CompressionSession, _ samples: LivePictureSamples) async throws(SessionError) {
            let clock = ContinuousClock()
            let start = clock.now
            let frameDuration = samples.settings.frameRate.frameDuration
            var index: Int64 = 0
            var lastRequestedKeyframe: MediaTime?
            pass: while true {
                let reader: any PictureReader
                do { reader = try samples.openReader() } catch { throw .mediaIO(error) }
                var readThisPass = 0
                while samples.options.frameLimit.map({ index < $0 }) ?? true {
                    if Task.isCancelled { return }
                    let picture: PixelBuffer?
                    do { picture = try reader.next() } catch { throw .mediaIO(error) }
                    guard let picture else { break }
                    readThisPass += 1
                    let time = frameDuration * index
                    if samples.options.paced {
                        let due = start + .nanoseconds(time.converted(toTimescale: 1_000_000_000, rounding: .towardZero).value)
                        do { try await Task.sleep(until: due, clock: clock) } catch { return }
                    }
                    var keyframe = false
                    if samples.keyframeRequests.requested.load(ordering: .relaxed),
                       lastRequestedKeyframe.map({ time - $0 >= samples.options.minimumKeyframeInterval }) ?? true {
                        keyframe = samples.keyframeRequests.requested.exchange(false, ordering: .relaxed)
                        if keyframe { lastRequestedKeyframe = time }
                    }
                    do { try await session.encode(picture, presentationTime: time, duration: frameDuration, forceKeyframe: keyframe) } catch {
                        if case .cancelled = error { return }
                        throw error
                    }
                    index += 1
                }
                guard samples.options.loops, readThisPass > 0, samples.options.frameLimit.map({ index < $0 }) ?? true else { break pass }
            }
        }
    }
}

/// Requests for an IDR picture, shared between the samples' copies.
final class KeyframeRequests: Sendable {
    let requested = Atomic<Bool>(false)
    let count = Atomic<Int>(0)
}
