import Dispatch
import H264Bitstream
public import H264Codec
public import MediaCore
import Synchronization

/// Decodes H.264 samples into pictures: the `VTDecompressionSession` analogue, over libavcodec.
///
/// Samples go in with ``decode(_:)-(SampleBuffer)`` in decoding order; every sample comes out as
/// exactly one ``DecodedFrame`` (a picture, or a dropped-frame report), pictures in presentation
/// order. Outputs go to the handler given at creation, or, without one, to ``frames``, an
/// `AsyncSequence` for one consumer.
///
/// - **Synchronous** (the default): the caller's thread decodes, and the handler runs before
///   ``decode(_:)-(SampleBuffer)`` returns.
/// - **Asynchronous** (``Configuration/isAsynchronous``): a serial dispatch queue of the
///   session's own decodes, off Swift's cooperative pool, and the handler runs there.
///
/// Either way memory is bounded: at most ``Configuration/maximumFramesInFlight`` samples wait for
/// the decoder plus pictures wait for their consumer. At the bound, `decode` blocks (or, in its
/// async form, suspends) until the consumer catches up, so a slow consumer never makes the
/// session grow. (The decoder itself holds a bounded number of pictures for reordering and
/// threading; ``finishDelayedFrames()`` gets them out.)
///
/// A sample whose format description differs from the session's (new parameter sets, a new
/// resolution mid-stream) is decoded with its parameter sets sent in band first: the frames
/// go on without a gap, at the new size. ``canAccept(_:)`` says which descriptions can follow;
/// for the others, finish this session and make a new one.
public final class DecompressionSession: Sendable {
    public struct Configuration: Sendable {
        /// The output pixel format; nil keeps the stream's own (no conversion, no copy).
        public var pixelFormat: PixelFormat?
        /// The output size; nil keeps the stream's.
        public var size: (width: Int, height: Int)?
        public var threading: H264Decoder.Threading
        /// Decode on the session's own queue; `decode` returns once the sample is queued.
        public var isAsynchronous: Bool
        /// Samples queued plus pictures waiting for the consumer, at most. (The pictures a
        /// drain lets out at once, beyond one per sample, wait only for room among the waiting
        /// pictures.)
        public var maximumFramesInFlight: Int

        public init(pixelFormat: PixelFormat? = nil, size: (width: Int, height: Int)? = nil,
                    threading: H264Decoder.Threading = .init(), isAsynchronous: Bool = false, maximumFramesInFlight: Int = 8) {
            precondition(maximumFramesInFlight > 0, "maximumFramesInFlight must be positive")
            self.pixelFormat = pixelFormat
            self.size = size
            self.threading = threading
            self.isAsynchronous = isAsynchronous
            self.maximumFramesInFlight = maximumFramesInFlight
        }
    }

    public typealias OutputHandler = @Sendable (DecodedFrame) -> Void

    public let formatDescription: VideoFormatDescription
    public let configuration: Configuration
    private let engine: Mutex<Engine>
    private let pipeline: SessionPipeline<DecodedFrame, DecompressionError>

    /// A session delivering outputs to `outputHandler`.
    public convenience init(formatDescription: VideoFormatDescription, configuration: Configuration = Configuration(),
                            outputHandler: @escaping OutputHandler) throws(DecompressionError) {
        try self.init(formatDescription: formatDescription, configuration: configuration, handler: outputHandler)
    }

    /// A session delivering outputs to ``frames``.
    public convenience init(formatDescription: VideoFormatDescription, configuration: Configuration = Configuration()) throws(DecompressionError) {
        try self.init(formatDescription: formatDescription, configuration: configuration, handler: nil)
    }

    private init(formatDescription: VideoFormatDescription, configuration: Configuration, handler: OutputHandler?) throws(DecompressionError) {
        self.formatDescription = formatDescription
        self.configuration = configuration
        do {
            engine = Mutex(try Engine(formatDescription: formatDescription, configuration: configuration))
        } catch {
            throw DecompressionError(.decoderFailed, "cannot create the decoder", underlying: error)
        }
        pipeline = SessionPipeline(label: "H264Session.DecompressionSession", asynchronous: configuration.isAsynchronous,
                                   limit: configuration.maximumFramesInFlight, handler: handler)
    }

    deinit {
        invalidate()
    }

    /// Whether samples described by `description` can follow in this session: H.264 with the
    /// same NAL length size (other parameter sets, even another picture size, are fine).
    public func canAccept(_ description: VideoFormatDescription) -> Bool {
        Engine.canAccept(description, after: formatDescription)
    }

    /// Samples queued plus outputs waiting for the consumer, now.
    public var framesInFlight: Int { pipeline.inFlight }

    /// The most samples and outputs that were ever in flight at once.
    public var maximumFramesInFlightReached: Int { pipeline.highWater }

    // MARK: Decoding

    /// Decodes a sample, blocking while the in-flight bound is reached.
    public func decode(_ sample: SampleBuffer) throws(DecompressionError) {
        try checkAccepts(sample)
        try pipeline.acquire()
        submit(sample)
    }

    /// Decodes a sample, suspending while the in-flight bound is reached.
    public func decode(_ sample: SampleBuffer) async throws(DecompressionError) {
        try checkAccepts(sample)
        try await pipeline.acquire(cancelled: DecompressionError(.cancelled, "the task waiting to decode was cancelled"))
        submit(sample)
    }

    private func checkAccepts(_ sample: SampleBuffer) throws(DecompressionError) {
        guard canAccept(sample.formatDescription) else {
            throw DecompressionError(.formatNotAccepted, "the session decodes \(formatDescription.nalUnitLengthSize)-byte NAL lengths; this sample's description is \(sample.formatDescription)")
        }
    }

    private func submit(_ sample: SampleBuffer) {
        pipeline.submit { [self] () throws(DecompressionError) -> [DecodedFrame] in
            try self.engine.withLock { (engine) throws(DecompressionError) in try engine.decode(sample) }
        }
    }

    // MARK: Ending

    /// Gets out every picture the decoder holds back for reordering (in synchronous mode, before
    /// returning). Call it at the end of the stream or before a discontinuity; decoding then
    /// starts afresh and the next sample should be a sync sample.
    public func finishDelayedFrames() {
        pipeline.perform { [self] () throws(DecompressionError) -> [DecodedFrame] in
            try self.engine.withLock { (engine) throws(DecompressionError) in try engine.drain() }
        }
    }

    /// Finishes delayed frames and waits until every output has been delivered (to the handler
    /// or into ``frames``).
    public func waitForAsynchronousFrames() {
        finishDelayedFrames()
        pipeline.waitForQueue()
    }

    /// Finishes delayed frames and waits, suspending, until every output has been delivered.
    public func waitForAsynchronousFrames() async {
        finishDelayedFrames()
        await pipeline.waitForQueue()
    }

    /// Ends the stream: every remaining frame is delivered, then ``frames`` ends. Decoding after
    /// this is an error.
    public func finish() async {
        await waitForAsynchronousFrames()
        pipeline.end(with: DecompressionError(.invalidated, "the session is finished"))
    }

    /// Ends the stream, blocking until every remaining frame is delivered.
    public func finish() {
        waitForAsynchronousFrames()
        pipeline.end(with: DecompressionError(.invalidated, "the session is finished"))
    }

    /// Stops at once: queued samples are dropped, ``frames`` ends, waiting producers get an error.
    public func invalidate() {
        pipeline.end(with: DecompressionError(.invalidated, "the session was invalidated"))
    }

    // MARK: The AsyncSequence of outputs

    /// The outputs of a session made without a handler, for one consumer. The sequence ends
    /// after ``finish()`` (every frame delivered) or ``invalidate()``. Cancelling the consuming
    /// task invalidates the session: nobody would take its frames, so producers waiting on the
    /// bound get an error instead of waiting for ever.
    public var frames: Frames {
        SessionOutputs { [pipeline] in await pipeline.next(cancelled: DecompressionError(.invalidated, "the consumer of the session's frames was cancelled")) }
    }

    public typealias Frames = SessionOutputs<DecodedFrame>

}

/// The decoder and what it needs to match pictures to samples; used under the session's mutex.
private struct Engine: ~Copyable {
    var decoder: H264Decoder
    /// Set up only when the configuration asks for another format or size.
    var converter: PixelConverter
    let converts: Bool
    var description: VideoFormatDescription
    /// Timing of samples sent and not yet out, by their index (the packet timestamp).
    var pending: [Int: (presentation: MediaTime, duration: MediaTime, error: CodecError?, messages: [String])] = [:]
    var nextIndex = 0
    /// Samples that produced no picture are reported dropped once this many wait behind them.
    static let pendingLimit = 64

    init(formatDescription: VideoFormatDescription, configuration: DecompressionSession.Configuration) throws(CodecError) {
        let converter = try PixelConverter(format: configuration.pixelFormat ?? .yuv420p, size: configuration.size)
        decoder = try H264Decoder(formatDescription: formatDescription, threading: configuration.threading)
        self.converter = converter
        converts = configuration.pixelFormat != nil || configuration.size != nil
        description = formatDescription
    }

    static func canAccept(_ description: VideoFormatDescription, after first: VideoFormatDescription) -> Bool {
        (description.codec == "avc1" || description.codec == "avc3") && description.nalUnitLengthSize == first.nalUnitLengthSize
    }

    mutating func decode(_ sample: SampleBuffer) throws(DecompressionError) -> [DecodedFrame] {
        let index = nextIndex
        nextIndex += 1
        pending[index] = (sample.presentationTime, sample.duration, nil, [])
        var data = sample.data
        if sample.formatDescription != description {
            // New parameter sets go in band before the sample, as a stream would carry them.
            description = sample.formatDescription
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

    mutating func drain() throws(DecompressionError) -> [DecodedFrame] {
        var outputs: [DecodedFrame] = []
        do { try decoder.sendEndOfStream() } catch { throw DecompressionError(.decoderFailed, "cannot drain the decoder", underlying: error) }
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

    private mutating func receiveAll(into outputs: inout [DecodedFrame]) throws(DecompressionError) {
        while true {
            let picture: DecodedPicture?
            do { picture = try decoder.receive() } catch {
                throw DecompressionError(.decoderFailed, "the decoder failed", underlying: error)
            }
            guard let picture else { return }
            let index = picture.timestamp.map(Int.init) ?? -1
            let timing = pending.removeValue(forKey: index) ?? (.invalid, .invalid, nil, [])
            var pixels = picture.pixelBuffer
            if converts {
                do { pixels = try converter.convert(pixels) } catch {
                    throw DecompressionError(.decoderFailed, "cannot convert the picture", underlying: error)
                }
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
        return DecodedFrame(pixelBuffer: nil, presentationTime: timing.presentation, duration: timing.duration,
                            flags: .dropped, errorFlags: [], error: timing.error, messages: timing.messages, sampleIndex: index)
    }
}

