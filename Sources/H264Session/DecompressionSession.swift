import Dispatch
import H264Bitstream
public import H264Codec
public import MediaCore
import SystemIO

/// Decodes H.264 samples into pictures: the `VTDecompressionSession` analogue, over libavcodec.
///
/// Samples go in with `decode(_:)` in decoding order; every sample comes out as
/// exactly one ``DecodedFrame`` (a picture, a sample not shown, or a dropped-frame report),
/// pictures in presentation order. Outputs go to the handler given at creation, or, without
/// one, to ``frames``, an `AsyncSequence` for one consumer.
///
/// - **Synchronous** (the default with a handler): the caller's thread decodes, and the
///   handler runs before `decode(_:)` returns.
/// - **Asynchronous** (``Configuration/isAsynchronous``, and always without a handler): a
///   serial dispatch queue of the session's own decodes, off Swift's cooperative pool, and the
///   handler runs there.
///
/// Either way memory is bounded: at most ``Configuration/maximumFramesInFlight`` samples wait
/// for the decoder plus pictures wait for their consumer. At the bound, `decode` blocks (or, in
/// its async form, suspends) until the consumer catches up, so a slow consumer never makes the
/// session grow; a blocking `decode` whose outputs nobody consumes (the consumer was to run on
/// the same thread, after the loop) throws ``SessionError/outputsNotConsumed(waited:inFlight:)``
/// after ``Configuration/consumerWaitLimit`` rather than wait for ever. (The decoder itself holds a bounded number of pictures for reordering and
/// threading; `finishDelayedFrames()` gets them out.)
///
/// A damaged sample is that frame's status (``DecodedFrame/flags``, ``DecodedFrame/error``),
/// never the end of the stream. A sample whose format description differs from the session's
/// (new parameter sets, a new resolution mid-stream) is decoded with its parameter sets sent in
/// band first: the frames go on without a gap, at the new size, unless the configuration fixes
/// a size. ``canAccept(_:)`` says which descriptions can follow (the contract of
/// `VideoFormatDescription/canAccept(_:)`); for the others, finish this session and make a
/// new one.
public final class DecompressionSession: Sendable {
    /// How the session decodes and delivers.
    public struct Configuration: Sendable {
        /// The output pixel format; nil keeps the stream's own (no conversion, no copy).
        public var pixelFormat: PixelFormat?
        /// The output size (every picture scaled to it); nil keeps each picture's own.
        public var size: (width: Int, height: Int)?
        /// How libavcodec spreads the decoding over threads.
        public var threading: H264Decoder.Threading
        /// Decode on the session's own queue; `decode` returns once the sample is queued. A
        /// session made without an output handler (its frames consumed from ``frames``) is
        /// always asynchronous.
        public var isAsynchronous: Bool
        /// Samples queued plus pictures waiting for the consumer, at most (at least 1). (The
        /// pictures a drain lets out at once, beyond one per sample, wait only for room among
        /// the waiting pictures.)
        public var maximumFramesInFlight: Int
        /// The largest picture decoded: a sample whose SPS declares a larger one is dropped
        /// with an error saying so, before the decoder allocates for it.
        public var limits: PictureLimits
        /// Seconds the blocking `decode` waits for an absent consumer of ``frames`` to take a
        /// frame before it throws ``SessionError/outputsNotConsumed(waited:inFlight:)`` (nil:
        /// for ever). Only while frames wait and nobody is waiting for them.
        public var consumerWaitLimit: Double? = 2

        /// A configuration; `maximumFramesInFlight` is raised to at least 1.
        public init(pixelFormat: PixelFormat? = nil, size: (width: Int, height: Int)? = nil,
                    threading: H264Decoder.Threading = .init(), isAsynchronous: Bool = false, maximumFramesInFlight: Int = 8,
                    limits: PictureLimits = PictureLimits()) {
            self.pixelFormat = pixelFormat
            self.size = size
            self.threading = threading
            self.isAsynchronous = isAsynchronous
            self.maximumFramesInFlight = max(1, maximumFramesInFlight)
            self.limits = limits
        }
    }

    /// Receives each output, one per sample (`VTDecompressionOutputHandler`).
    public typealias OutputHandler = @Sendable (DecodedFrame) -> Void

    /// The format description the session was made with (`VTDecompressionSessionCreate`'s videoFormatDescription).
    public let formatDescription: VideoFormatDescription
    /// The configuration the session was made with.
    public let configuration: Configuration
    private let engine: Locked<Engine>
    private let pipeline: SessionPipeline<DecodedFrame>

    /// A session delivering outputs to `outputHandler`.
    public convenience init(formatDescription: VideoFormatDescription, configuration: Configuration = Configuration(),
                            outputHandler: @escaping OutputHandler) throws(SessionError) {
        try self.init(formatDescription: formatDescription, configuration: configuration, handler: outputHandler)
    }

    /// A session delivering outputs to ``frames``: asynchronous whatever the configuration
    /// says (the consumer runs beside the decoding, not on the thread that calls `decode`).
    public convenience init(formatDescription: VideoFormatDescription, configuration: Configuration = Configuration(isAsynchronous: true)) throws(SessionError) {
        try self.init(formatDescription: formatDescription, configuration: configuration, handler: nil)
    }

    private init(formatDescription: VideoFormatDescription, configuration: Configuration, handler: OutputHandler?) throws(SessionError) {
        // Without a handler the outputs go to `frames`, consumed beside the work: asynchronous,
        // whatever the configuration says.
        var configuration = configuration
        if handler == nil { configuration.isAsynchronous = true }
        self.formatDescription = formatDescription
        self.configuration = configuration
        do {
            engine = Locked(try Engine(formatDescription: formatDescription, configuration: configuration))
        } catch {
            throw .codecFailed(error)
        }
        pipeline = SessionPipeline(label: "H264Session.DecompressionSession", asynchronous: configuration.isAsynchronous,
                                   limit: configuration.maximumFramesInFlight, handler: handler,
                                   consumerWaitLimit: configuration.consumerWaitLimit)
    }

    deinit {
        invalidate()
    }

    /// Whether samples described by `description` can follow in this session (the contract of
    /// `VideoFormatDescription/canAccept(_:)`: H.264 with the same NAL length size; other
    /// parameter sets, even another picture size, are fine).
    public func canAccept(_ description: VideoFormatDescription) -> Bool {
        formatDescription.canAccept(description)
    }

    /// Samples queued plus outputs waiting for the consumer, now.
    public var framesInFlight: Int { pipeline.inFlight }

    /// The most samples and outputs that were ever in flight at once.
    public var maximumFramesInFlightReached: Int { pipeline.highWater }

    // MARK: Decoding

    /// Decodes a sample, blocking while the in-flight bound is reached.
    @available(*, noasync, message: "this blocks the thread; use the async form in async code")
    public func decode(_ sample: SampleBuffer) throws(SessionError) {
        try checkAccepts(sample)
        try pipeline.acquire()
        submit(sample)
    }

    /// Decodes a sample, suspending while the in-flight bound is reached.
    public func decode(_ sample: SampleBuffer) async throws(SessionError) {
        try checkAccepts(sample)
        try await pipeline.acquire(cancelled: .cancelled)
        submit(sample)
    }

    private func checkAccepts(_ sample: SampleBuffer) throws(SessionError) {
        guard let video = sample.videoFormatDescription else { throw .notVideo(sample.formatDescription) }
        guard canAccept(video) else { throw .formatNotAccepted(session: formatDescription, sample: video) }
    }

    private func submit(_ sample: SampleBuffer) {
        pipeline.submit { [self] () throws(SessionError) -> [DecodedFrame] in
            try self.engine.withLock { (engine) throws(SessionError) in try engine.decode(sample) }
        }
    }

    // MARK: Ending

    /// Gets out every picture the decoder holds back for reordering, and waits until they are
    /// delivered (`VTDecompressionSessionFinishDelayedFrames` and
    /// `WaitForAsynchronousFrames`). Call it before a discontinuity (a seek); decoding then
    /// starts afresh and the next sample should be a sync sample.
    /// (Blocking form.)
    @available(*, noasync, message: "this blocks the thread; use the async form in async code")
    public func finishDelayedFrames() {
        drain()
        pipeline.waitForQueue()
    }

    /// Gets out every delayed picture, suspending until they are delivered.
    public func finishDelayedFrames() async {
        drain()
        await pipeline.waitForQueue()
    }

    private func drain() {
        pipeline.perform { [self] () throws(SessionError) -> [DecodedFrame] in
            try self.engine.withLock { (engine) throws(SessionError) in try engine.drain() }
        }
    }

    /// Ends the stream: every remaining frame is delivered, then ``frames`` ends. Decoding after
    /// this is an error.
    public func finish() async {
        await finishDelayedFrames()
        pipeline.end(with: .invalidated)
    }

    /// Ends the stream, blocking until every remaining frame is delivered.
    @available(*, noasync, message: "this blocks the thread; use the async form in async code")
    public func finish() {
        finishDelayedFrames()
        pipeline.end(with: .invalidated)
    }

    /// Stops at once: queued samples are dropped, ``frames`` ends, waiting producers get an error.
    public func invalidate() {
        pipeline.end(with: .invalidated)
    }

    // MARK: The AsyncSequence of outputs

    /// The outputs of a session made without a handler, for its one consumer. The sequence ends
    /// after `finish()` (every frame delivered) or ``invalidate()``, and throws if the decoder
    /// failed as a whole. Cancelling the consuming task invalidates the session, and so does
    /// letting go of the sequence and every iterator of it (a `break` out of its loop; a
    /// sequence asked for and never iterated): nobody would take its frames, so producers
    /// waiting on the bound get an error instead of waiting for ever. Asking a session with a
    /// handler, or asking twice, throws.
    public var frames: Frames {
        get throws(SessionError) {
            try pipeline.takeSequence()
            return SessionOutputs(pipeline: pipeline)
        }
    }

    /// The sequence of outputs that ``frames`` gives.
    public typealias Frames = SessionOutputs<DecodedFrame>
}

/// The decoder and what it needs to match pictures to samples; used under the session's mutex.
private struct Engine: ~Copyable {
    var decoder: H264Decoder
    /// Set up only when the configuration asks for another format or size.
    var converter: PixelConverter
    let converts: Bool
    let limits: PictureLimits
    var description: VideoFormatDescription
    /// Timing of samples sent and not yet out, by their index (the packet timestamp).
    var pending: [Int: Pending] = [:]
    var nextIndex = 0
    /// A failure libavcodec reported for a picture it did not output (frame threads report a
    /// damaged frame's error from a later call): told with the next dropped sample.
    var unattributedError: CodecError?
    /// Samples that produced no picture are reported dropped once this many wait behind them.
    static let pendingLimit = 64
    /// Consecutive failed receives before the decoder is taken for empty (no picture comes
    /// out of a failure, so this only bounds the loop).
    static let receiveErrorLimit = 64

    struct Pending {
        var presentation: MediaTime
        var duration: MediaTime
        var hidden: Bool
        var error: CodecError?
        var messages: [String] = []
    }

    init(formatDescription: VideoFormatDescription, configuration: DecompressionSession.Configuration) throws(CodecError) {
        let converter = try PixelConverter(format: configuration.pixelFormat ?? .yuv420p, size: configuration.size)
        decoder = try H264Decoder(formatDescription: formatDescription, threading: configuration.threading, limits: configuration.limits)
        self.converter = converter
        limits = configuration.limits
        converts = configuration.pixelFormat != nil || configuration.size != nil
        description = formatDescription
    }

    mutating func decode(_ sample: SampleBuffer) throws(SessionError) -> [DecodedFrame] {
        let index = nextIndex
        nextIndex += 1
        pending[index] = Pending(presentation: sample.presentationTime, duration: sample.duration, hidden: sample.attachments.doNotDisplay)
        guard let format = sample.videoFormatDescription else {
            pending[index]?.error = CodecError(.decodeFailed, "a \(sample.formatDescription.codecName) sample is not H.264 video")
            return [dropped(index)]
        }
        guard limits.allows(width: format.codedWidth, height: format.codedHeight) else {
            // Refused before libavcodec allocates pictures of that size; the stream goes on.
            pending[index]?.error = CodecError(.decodeFailed, limits.refusal(width: format.codedWidth, height: format.codedHeight,
                                                                              declaredBy: "SPS \(format.sps.seqParameterSetId)"))
            return [dropped(index)]
        }
        var data = sample.data
        if format != description {
            // New parameter sets go in band before the sample, as a stream would carry them.
            description = format
            var prefix: [UInt8] = []
            for set in description.sequenceParameterSets + description.pictureParameterSets {
                // A parameter set too long for the length size could not be in the description.
                try? AVCC.append(nalUnit: set.span, lengthSize: description.nalUnitLengthSize, to: &prefix)
            }
            data = BlockBuffer(chaining: [BlockBuffer(prefix), data])
        }
        var outputs: [DecodedFrame] = []
        var sent = false
        while !sent {
            let accepted: Result<Bool, CodecError>
            do { accepted = .success(try decoder.send(data, timestamp: Int64(index), duration: 0)) } catch { accepted = .failure(error) }
            switch accepted {
            case .success(true):
                sent = true
            case .success(false):
                // The decoder is full: take its pictures, then send again.
                try receiveAll(into: &outputs)
            case .failure(let error):
                // A sample the decoder rejects is reported (dropped, with the reason); the stream goes on.
                pending[index]?.error = error
                sent = true
            }
        }
        let messages = decoder.takeMessages()
        if !messages.isEmpty {
            if pending[index] != nil { pending[index]!.messages += messages }
            else if let i = outputs.lastIndex(where: { $0.sampleIndex == index }) { outputs[i].messages += messages; outputs[i].flags.insert(.concealed) }
        }
        try receiveAll(into: &outputs)
        if pending.count > Self.pendingLimit {
            // The oldest samples will not come out any more.
            for stale in pending.keys.sorted().prefix(pending.count - Self.pendingLimit) { outputs.append(dropped(stale)) }
        }
        return outputs
    }

    mutating func drain() throws(SessionError) -> [DecodedFrame] {
        var outputs: [DecodedFrame] = []
        do { try decoder.sendEndOfStream() } catch { unattributedError = error }
        try receiveAll(into: &outputs)
        // Damage met while the held pictures were finished (frame threads decode late).
        let messages = decoder.takeMessages()
        if !messages.isEmpty {
            let last = nextIndex - 1
            if let i = outputs.lastIndex(where: { $0.sampleIndex == last }) ?? outputs.indices.last {
                outputs[i].messages += messages
                outputs[i].flags.insert(.concealed)
            } else if pending[last] != nil {
                pending[last]!.messages += messages
            }
        }
        decoder.reset()
        for index in pending.keys.sorted() { outputs.append(dropped(index)) }
        return outputs
    }

    /// Takes every picture the decoder has ready. A failed receive is one picture's failure
    /// (libavcodec goes on with the next), never the end of the session.
    private mutating func receiveAll(into outputs: inout [DecodedFrame]) throws(SessionError) {
        var failures = 0
        while failures < Self.receiveErrorLimit {
            let picture: DecodedPicture?
            do { picture = try decoder.receive() } catch {
                unattributedError = error
                failures += 1
                continue
            }
            guard let picture else { return }
            failures = 0
            let index = picture.timestamp.map(Int.init) ?? -1
            let timing = pending.removeValue(forKey: index) ?? Pending(presentation: .invalid, duration: .invalid, hidden: false)
            if timing.hidden {
                outputs.append(DecodedFrame(pixelBuffer: nil, presentationTime: timing.presentation, duration: timing.duration, flags: .notDisplayed,
                                            errorFlags: picture.errorFlags, messages: timing.messages, sampleIndex: index))
                continue
            }
            var pixels = picture.pixelBuffer
            if converts {
                do { pixels = try converter.convert(pixels) } catch { throw .codecFailed(error) }
            }
            outputs.append(DecodedFrame(
                pixelBuffer: pixels, presentationTime: timing.presentation, duration: timing.duration,
                flags: picture.isConcealed || !timing.messages.isEmpty ? .concealed : [], errorFlags: picture.errorFlags,
                error: nil, messages: timing.messages, sampleIndex: index,
                isInterlaced: picture.isInterlaced, topFieldFirst: picture.topFieldFirst))
        }
    }

    private mutating func dropped(_ index: Int) -> DecodedFrame {
        let timing = pending.removeValue(forKey: index)!
        let error = timing.error ?? unattributedError
        if timing.error == nil { unattributedError = nil }
        return DecodedFrame(pixelBuffer: nil, presentationTime: timing.presentation, duration: timing.duration,
                            flags: timing.hidden ? [.dropped, .notDisplayed] : .dropped, errorFlags: [], error: error, messages: timing.messages, sampleIndex: index)
    }
}
