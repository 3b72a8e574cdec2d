public import H264Codec
import H264Bitstream
public import MediaCore
import SystemIO

/// A stream of compressed samples encoded again live, its sound passed through: what
/// `ffmpeg -re -i IN -c:v libx264 -c:a copy` sends to a live origin. The picture track (the
/// first H.264 video track) is decoded by a ``DecompressionSession`` and encoded by a
/// ``CompressionSession`` as it comes; every other track's samples (AAC sound, timed metadata)
/// go on unchanged, byte for byte with their times. The pictures keep their presentation
/// times exactly (so the sound stays where it was beside them), and the encoded samples keep
/// the picture track's ID.
///
/// The encoder is x264 with `tune=zerolatency` unless the settings name another tune (no
/// B-frames, no look-ahead: each picture's frame leaves the encoder before the next picture
/// comes); with ``Options/keyframeInterval`` an IDR picture starts each such interval from the
/// first picture, where a live segmenter cuts (FFmpeg users set `-g` for this by hand). The
/// picture size, pixel format, frame rate, colour description and aspect ratio are the
/// stream's (its first picture's, its SPS's); a later picture of another size is scaled to the
/// first's. A new SPS the decoder cannot take (another NAL length size) starts a new decoder;
/// the encoder goes on.
///
/// Nothing runs until the first `next()`. Memory is bounded: at most
/// ``Options/bufferLimit`` samples wait for the consumer, besides the sessions' own frames in
/// flight (a few pictures); a consumer that takes samples slowly (a paced origin) holds the
/// whole pipeline back, reading included. Dropping the iterator stops the work.
public struct TranscodedSamples<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == SampleBuffer {
    /// How the pictures are encoded again.
    public struct Options: Sendable {
        /// x264's settings. The picture size, pixel format, frame rate, colour description and
        /// aspect ratio are taken from the stream; the rest is used as given.
        public var encoder: EncoderSettings
        /// An IDR picture at the first picture and at every multiple of this much presentation
        /// time after it (a live segment's length); nil leaves keyframes to x264
        /// (`EncoderSettings.maximumKeyframeInterval`).
        public var keyframeInterval: MediaTime?
        /// The decoder's threading.
        public var decoderThreading: H264Decoder.Threading
        /// The largest picture decoded.
        public var limits: PictureLimits
        /// Samples (encoded pictures and passed ones) waiting for the consumer, at most.
        public var bufferLimit: Int

        /// Options encoding with `encoder`'s settings (whose size, format and rate are the
        /// stream's), keyframes every `keyframeInterval`, 64 samples waiting at most.
        public init(encoder: EncoderSettings, keyframeInterval: MediaTime? = nil, decoderThreading: H264Decoder.Threading = .init(),
                    limits: PictureLimits = PictureLimits(), bufferLimit: Int = 64) {
            self.encoder = encoder
            self.keyframeInterval = keyframeInterval
            self.decoderThreading = decoderThreading
            self.limits = limits
            self.bufferLimit = Swift.max(1, bufferLimit)
        }
    }

    /// The compressed samples encoded again.
    public let base: Base
    /// How.
    public let options: Options

    /// The samples of `base`, its picture encoded again with `options`.
    public init(_ base: Base, options: Options) {
        self.base = base
        self.options = options
    }

    /// An iterator that starts the work on its first call.
    public func makeAsyncIterator() -> Iterator { Iterator(Producer(self)) }

    /// The samples as they come out: encoded pictures in decoding order, the other tracks'
    /// samples in the order read (ahead of the pictures of the same time by the pipeline's
    /// delay, a few frames). Throws what the source threw, or a ``SessionError``.
    public struct Iterator: AsyncIteratorProtocol {
        private let producer: Producer

        init(_ producer: Producer) { self.producer = producer }

        /// The next sample, or nil after the last.
        public mutating func next() async throws -> SampleBuffer? {
            producer.start()
            return try await producer.channel.next()
        }
    }

    /// The task doing the work; cancelled when its iterator goes away.
    final class Producer: Sendable {
        let samples: TranscodedSamples
        let channel: SampleChannel
        private let task = Locked<Task<Void, Never>?>(nil)

        init(_ samples: TranscodedSamples) {
            self.samples = samples
            channel = SampleChannel(limit: samples.options.bufferLimit)
        }

        deinit {
            task.withLock { $0?.cancel() }
            channel.close()
        }

        func start() {
            task.withLock { task in
                guard task == nil else { return }
                let (samples, channel) = (self.samples, self.channel)
                task = Task {
                    do {
                        try await Work(samples: samples, channel: channel).run()
                        channel.finish(throwing: nil)
                    } catch {
                        channel.finish(throwing: error)
                    }
                }
            }
        }
    }

    /// One run: reads the source, decodes and encodes its picture, sends everything on.
    struct Work: Sendable {
        let samples: TranscodedSamples
        let channel: SampleChannel

        func run() async throws {
            let options = samples.options
            var source = samples.base.makeAsyncIterator()
            var pictureTrack: TrackID?
            var decoder: (session: DecompressionSession, stage: Task<Void, any Error>)?
            let encoding = Encoding(options: options, channel: channel)
            defer {
                decoder?.session.invalidate()
                decoder?.stage.cancel()
                encoding.stop()
            }
            while let sample = try await source.next() {
                try Task.checkCancellation()
                guard let video = sample.videoFormatDescription, pictureTrack.map({ $0 == sample.trackID }) ?? true else {
                    // (Another video track is not the picture encoded: it goes on as it is too.)
                    try await channel.send(sample)
                    continue
                }
                pictureTrack = sample.trackID
                if let current = decoder, !current.session.canAccept(video) {
                    await current.session.finish()
                    try await current.stage.value
                    decoder = nil
                }
                if decoder == nil {
                    let session = try DecompressionSession(formatDescription: video, configuration: .init(threading: options.decoderThreading, isAsynchronous: true,
                                                                                                        maximumFramesInFlight: 4, limits: options.limits))
                    let frames = try session.frames
                    let track = sample.trackID
                    let stage = Task {
                        for try await frame in frames { try await encoding.encode(frame, description: video, track: track) }
                    }
                    decoder = (session, stage)
                }
                do { try await decoder!.session.decode(sample) } catch {
                    // (A stage that failed ended the decoder: its error, not the decoder's end.)
                    if let current = decoder { try await current.stage.value }
                    throw error
                }
            }
            if let current = decoder {
                await current.session.finish()
                try await current.stage.value
                decoder = nil
            }
            try await encoding.finish()
        }
    }

    /// The encoder, made at the first picture, and the task that sends its frames on.
    final class Encoding: Sendable {
        let options: Options
        let channel: SampleChannel
        private struct State {
            var session: CompressionSession?
            var forwarding: Task<Void, any Error>?
            var first: MediaTime?
            var lastKeyframeInterval: Int64 = -1
            /// The last picture's presentation time given to the encoder.
            var last: MediaTime?
            var stopped = false
        }
        /// Pictures left out: without a time, or not after the one before (a damaged stream's).
        private let skipped = Locked(0)

        /// The decoded pictures left out because their time was missing or not after the one
        /// before (damage), so far.
        var picturesSkipped: Int { skipped.withLock { $0 } }
        private let state = Locked(State())

        init(options: Options, channel: SampleChannel) {
            self.options = options
            self.channel = channel
        }

        func encode(_ frame: DecodedFrame, description: VideoFormatDescription, track: TrackID) async throws {
            // (A picture the decoder could not make is left out; a concealed one is encoded.)
            guard let picture = frame.pixelBuffer, !frame.isDropped, !frame.flags.contains(.notDisplayed) else { return }
            let time = frame.presentationTime
            let taken = try state.withLock { (state) throws(SessionError) -> (CompressionSession, Bool)? in
                if state.stopped { throw .cancelled }
                // (A damaged stream's picture without a time, or shown at or before the last:
                // left out, counted, the stream goes on; the encoder takes rising times only.)
                guard time.isNumeric, state.last.map({ time > $0 }) ?? true else { return nil }
                state.last = time
                if state.session == nil {
                    let session = try CompressionSession(configuration: .init(settings: settings(for: picture, frame: frame, description: description),
                                                                              isAsynchronous: true, maximumFramesInFlight: 4, convertsPictures: true))
                    let frames = try session.frames
                    let channel = channel
                    state.session = session
                    state.forwarding = Task {
                        for try await encoded in frames {
                            var sample = encoded.sampleBuffer
                            sample.trackID = track
                            try await channel.send(sample)
                        }
                    }
                }
                var keyframe = false
                if let interval = options.keyframeInterval, interval > .zero, time.isNumeric {
                    let first = state.first ?? time
                    state.first = first
                    let index = Int64(((time - first).seconds / interval.seconds + 1e-9).rounded(.down))
                    if index > state.lastKeyframeInterval {
                        keyframe = true
                        state.lastKeyframeInterval = index
                    }
                }
                return (state.session!, keyframe)
            }
            guard let (session, keyframe) = taken else {
                skipped.withLock { $0 += 1 }
                return
            }
            try await session.encode(picture, presentationTime: time, duration: frame.duration.isNumeric && frame.duration > .zero ? frame.duration : nil,
                                     forceKeyframe: keyframe)
        }

        /// Encodes what x264 still holds and waits until every frame is sent on.
        func finish() async throws {
            let (session, forwarding) = state.withLock { ($0.session, $0.forwarding) }
            await session?.finish()
            try await forwarding?.value
        }

        func stop() {
            let (session, forwarding) = state.withLock { state in
                state.stopped = true
                return (state.session, state.forwarding)
            }
            session?.invalidate()
            forwarding?.cancel()
        }

        /// x264's settings for pictures like `picture`: the options' with the stream's size,
        /// format, rate (its SPS's, else the frame's duration), colour and aspect ratio.
        private func settings(for picture: PixelBuffer, frame: DecodedFrame, description: VideoFormatDescription) throws(SessionError) -> EncoderSettings {
            var settings = options.encoder
            settings.width = picture.width
            settings.height = picture.height
            settings.pixelFormat = H264Encoder.encodingFormat(for: picture.format)
            if let rate = description.frameRate {
                settings.frameRate = rate
            } else if frame.duration.isNumeric, frame.duration > .zero, frame.duration.timescale > 0, frame.duration.value > 0 {
                settings.frameRate = FrameRate(UInt64(frame.duration.timescale), UInt64(frame.duration.value))
            }
            if settings.tune == nil { settings.tune = "zerolatency" }
            if let colour = description.colour {
                settings.colour = ColourDescription(primaries: colour.primaries, transfer: colour.transfer, matrix: colour.matrix, fullRange: colour.fullRange)
            }
            if settings.sampleAspectRatio == nil, let sar = description.sampleAspectRatio, sar.width > 0, sar.height > 0, !(sar.width == 1 && sar.height == 1) {
                settings.sampleAspectRatio = (sar.width, sar.height)
            }
            do { try settings.validate() } catch { throw .invalidSettings(error) }
            return settings
        }
    }
}
