import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import H264Bitstream
public import H264Codec
public import MediaCore
import Synchronization

/// An encoded frame out of a ``CompressionSession``: a sample buffer in decoding order
/// (4-byte NAL lengths, or start codes with ``EncoderSettings/annexB``), with its
/// presentation and decoding times, sync flag and the format description of x264's SPS/PPS.
public struct CompressedFrame: Sendable {
    public var sampleBuffer: SampleBuffer
    public var pictureType: H264Encoder.EncodedFrame.PictureType
    public var quantizer: Int
    /// The pass that made it (1 for a single-pass session).
    public var pass: Int
}

/// Why a compression session failed.
public struct CompressionError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The settings are impossible (x264 or our checks refused them).
        case invalidSettings
        /// A picture that does not fit the session, or times out of order.
        case invalidFrame
        case encoderFailed
        /// The session was invalidated, or finished, or its consumer went away.
        case invalidated
        case cancelled
    }

    public var code: Code
    public var reason: String
    public var underlying: CodecError?

    public init(_ code: Code, _ reason: String, underlying: CodecError? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
    }

    public var description: String { underlying.map { "\(reason): \($0)" } ?? reason }
}

/// Encodes pictures with x264: the `VTCompressionSession` analogue.
///
/// Pictures go in with ``encode(_:presentationTime:duration:forceKeyframe:)`` in presentation
/// order; encoded frames come out in decoding order, to the handler given at creation or to
/// ``frames``, an `AsyncSequence` for one consumer. Synchronous by default; asynchronous on its
/// own dispatch queue, off the cooperative pool. At most ``Configuration/maximumFramesInFlight``
/// pictures wait for the encoder plus frames wait for the consumer: a fast producer blocks (or
/// suspends) until the consumer catches up. ``completeFrames()`` gets every delayed frame out.
///
/// Multi-pass (``Configuration/passes`` 2): ``beginPass()``, feed every picture, ``endPass()``,
/// which says whether another pass is wanted; the first pass analyses into a statistics file and
/// its frames are not delivered; the second encodes for real.
public final class CompressionSession: Sendable {
    public struct Configuration: Sendable {
        public var settings: EncoderSettings
        public var isAsynchronous: Bool
        public var maximumFramesInFlight: Int
        /// 1, or 2 for a two-pass encode at ``EncoderSettings/rateControl``'s bit rate.
        public var passes: Int
        /// Where the two-pass statistics go (x264 adds `.mbtree`); a temporary file when nil.
        public var statisticsPath: String?

        public init(settings: EncoderSettings, isAsynchronous: Bool = false, maximumFramesInFlight: Int = 8, passes: Int = 1, statisticsPath: String? = nil) {
            precondition(maximumFramesInFlight > 0, "maximumFramesInFlight must be positive")
            self.settings = settings
            self.isAsynchronous = isAsynchronous
            self.maximumFramesInFlight = maximumFramesInFlight
            self.passes = passes
            self.statisticsPath = statisticsPath
        }
    }

    public typealias OutputHandler = @Sendable (CompressedFrame) -> Void

    public let configuration: Configuration
    private let engine: Mutex<Engine>
    private let pipeline: SessionPipeline<CompressedFrame, CompressionError>
    private let statistics: String?
    /// What the callers have submitted: checked before a picture is queued, so a misuse is an
    /// error for the caller and not the end of the session.
    private let intake: Mutex<Intake>
    private struct Intake {
        var passOpen: Bool
        var completed = false
        var lastTime: MediaTime?
        var lastTick: Int64?
    }

    public convenience init(configuration: Configuration, outputHandler: @escaping OutputHandler) throws(CompressionError) {
        try self.init(configuration: configuration, handler: outputHandler)
    }

    public convenience init(configuration: Configuration) throws(CompressionError) {
        try self.init(configuration: configuration, handler: nil)
    }

    private init(configuration: Configuration, handler: OutputHandler?) throws(CompressionError) {
        guard (1...2).contains(configuration.passes) else { throw CompressionError(.invalidSettings, "\(configuration.passes) passes: 1 or 2") }
        if configuration.passes == 2 {
            guard case .averageBitRate = configuration.settings.rateControl else {
                throw CompressionError(.invalidSettings, "a two-pass encode targets a bit rate; set an average bit rate")
            }
            statistics = configuration.statisticsPath ?? "/tmp/h264kit-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).stats"
        } else {
            statistics = nil
        }
        self.configuration = configuration
        var settings = configuration.settings
        if let statistics { settings.pass = .first(statistics: statistics) }
        do { try settings.validate() } catch { throw CompressionError(.invalidSettings, error.reason) }
        // A single-pass session opens its encoder now, so bad settings fail here.
        let encoder: H264Encoder?
        if configuration.passes == 1 {
            do { encoder = try H264Encoder(settings: settings) } catch { throw CompressionError(.invalidSettings, "x264 refused the settings", underlying: error) }
        } else {
            encoder = nil
        }
        engine = Mutex(Engine(encoder: encoder, settings: configuration.settings, pass: configuration.passes == 1 ? 1 : 0, passes: configuration.passes))
        intake = Mutex(Intake(passOpen: configuration.passes == 1))
        pipeline = SessionPipeline(label: "H264Session.CompressionSession", asynchronous: configuration.isAsynchronous,
                                   limit: configuration.maximumFramesInFlight, handler: handler)
    }

    deinit {
        invalidate()
        if let statistics {
            unlink(statistics)
            unlink(statistics + ".mbtree")
            unlink(statistics + ".temp")
            unlink(statistics + ".mbtree.temp")
        }
    }

    /// The format of the encoded frames (x264's SPS and PPS); nil before the first pass begins.
    public var formatDescription: VideoFormatDescription? { engine.withLock { $0.formatDescription } }

    public var framesInFlight: Int { pipeline.inFlight }
    public var maximumFramesInFlightReached: Int { pipeline.highWater }

    // MARK: Encoding

    /// Encodes a picture (presentation order), blocking while the in-flight bound is reached.
    public func encode(_ picture: PixelBuffer, presentationTime: MediaTime, duration: MediaTime? = nil, forceKeyframe: Bool = false) throws(CompressionError) {
        try admit(presentationTime)
        try pipeline.acquire()
        submit(picture, presentationTime, duration, forceKeyframe)
    }

    /// Encodes a picture, suspending while the in-flight bound is reached.
    public func encode(_ picture: PixelBuffer, presentationTime: MediaTime, duration: MediaTime? = nil, forceKeyframe: Bool = false) async throws(CompressionError) {
        try admit(presentationTime)
        try await pipeline.acquire(cancelled: CompressionError(.cancelled, "the task waiting to encode was cancelled"))
        submit(picture, presentationTime, duration, forceKeyframe)
    }

    /// Checks a picture's place in the stream before it is queued.
    private func admit(_ time: MediaTime) throws(CompressionError) {
        try intake.withLock { (intake) throws(CompressionError) in
            guard intake.passOpen else {
                throw CompressionError(.invalidFrame, configuration.passes > 1 ? "call beginPass() before the pictures of a pass" : "the session is finished")
            }
            guard !intake.completed else {
                throw CompressionError(.invalidFrame, "the frames were completed; x264 cannot take more after a flush (make a new session)")
            }
            guard time.isNumeric else { throw CompressionError(.invalidFrame, "a picture needs a numeric presentation time") }
            if let last = intake.lastTime, !(time > last) {
                throw CompressionError(.invalidFrame, "presentation time \(time) is not after the previous picture's (\(last)); pictures go in in presentation order")
            }
            // x264 counts whole frame durations: two pictures must not share one.
            let tick = Engine.ticks(time, rate: configuration.settings.frameRate)
            if let last = intake.lastTick, tick <= last, let previous = intake.lastTime {
                throw CompressionError(.invalidFrame, "presentation time \(time) falls in the same \(configuration.settings.frameRate) fps frame as \(previous)")
            }
            intake.lastTime = time
            intake.lastTick = tick
        }
    }

    private func submit(_ picture: PixelBuffer, _ time: MediaTime, _ duration: MediaTime?, _ keyframe: Bool) {
        pipeline.submit { [self] () throws(CompressionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(CompressionError) in try engine.encode(picture, time, duration, keyframe) }
        }
    }

    // MARK: Live changes

    /// What x264 can change while it encodes (`x264_encoder_reconfig`), as
    /// `VTSessionSetProperty` changes a running session's data rate: the constant quality of a
    /// CRF encode, and the bit rate and VBV limits of an encode started with VBV (x264 keeps the
    /// rate of an encode without VBV). Nil leaves a value as it is.
    public struct LiveChange: Sendable, Hashable {
        /// CRF (only when the session encodes at constant quality).
        public var constantQuality: Double?
        /// Average bit rate, kbit/s (an average-bit-rate session with VBV limits).
        public var averageBitRate: Int?
        /// VBV maximum rate, kbit/s, and buffer size, kbit (a session started with both).
        public var maximumBitRate: Int?
        public var bufferSize: Int?

        public init(constantQuality: Double? = nil, averageBitRate: Int? = nil, maximumBitRate: Int? = nil, bufferSize: Int? = nil) {
            self.constantQuality = constantQuality
            self.averageBitRate = averageBitRate
            self.maximumBitRate = maximumBitRate
            self.bufferSize = bufferSize
        }
    }

    /// Changes the rate control, in order with the pictures: x264 applies it to every frame it
    /// has not encoded yet, those already waiting in its lookahead included (as VideoToolbox
    /// applies a property to the frames it has not compressed). Checked here: a change x264
    /// would ignore is an error, not a no-op.
    public func change(_ change: LiveChange) throws(CompressionError) {
        let settings = configuration.settings
        let hasVBV = settings.maximumBitRate != nil && settings.bufferSize != nil
        var options: [(String, String)] = []
        if let crf = change.constantQuality {
            guard case .constantQuality = settings.rateControl else {
                throw CompressionError(.invalidSettings, "constant quality can change only in a session that encodes at constant quality (CRF)")
            }
            guard (0...51).contains(crf) else { throw CompressionError(.invalidSettings, "CRF \(crf): expected 0 to 51") }
            options.append(("crf", "\(crf)"))
        }
        if let rate = change.averageBitRate {
            guard case .averageBitRate = settings.rateControl, hasVBV else {
                throw CompressionError(.invalidSettings, "the bit rate can change only in an average-bit-rate session started with VBV limits (maximum bit rate and buffer size): x264 keeps the rate of an encode without VBV")
            }
            guard configuration.passes == 1 else { throw CompressionError(.invalidSettings, "the bit rate of a two-pass encode cannot change") }
            guard rate > 0 else { throw CompressionError(.invalidSettings, "bit rate \(rate): expected a positive kbit/s") }
            options.append(("bitrate", "\(rate)"))
        }
        if change.maximumBitRate != nil || change.bufferSize != nil {
            guard hasVBV else { throw CompressionError(.invalidSettings, "VBV limits can change only in a session started with them (x264 cannot turn VBV on)") }
            if let rate = change.maximumBitRate {
                guard rate > 0 else { throw CompressionError(.invalidSettings, "maximum bit rate \(rate): expected a positive kbit/s") }
                options.append(("vbv-maxrate", "\(rate)"))
            }
            if let size = change.bufferSize {
                guard size > 0 else { throw CompressionError(.invalidSettings, "buffer size \(size): expected a positive kbit") }
                options.append(("vbv-bufsize", "\(size)"))
            }
        }
        guard !options.isEmpty else { return }
        try intake.withLock { (intake) throws(CompressionError) in
            guard intake.passOpen && !intake.completed else { throw CompressionError(.invalidSettings, "the session is not encoding") }
        }
        let changes = options
        pipeline.perform { [self] () throws(CompressionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(CompressionError) in try engine.reconfigure(changes) }
            return []
        }
    }

    /// Gets every delayed frame out (in synchronous mode, before returning). The stream ends
    /// there: a later picture is an error (x264 does not resume after a flush).
    public func completeFrames() {
        intake.withLock { $0.completed = true }
        pipeline.perform { [self] () throws(CompressionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(CompressionError) in try engine.flush() }
        }
    }

    /// Completes the frames and waits until every output has been delivered.
    public func waitForAsynchronousFrames() {
        completeFrames()
        pipeline.waitForQueue()
    }

    public func waitForAsynchronousFrames() async {
        completeFrames()
        await pipeline.waitForQueue()
    }

    /// Ends the stream: every remaining frame is delivered, then ``frames`` ends.
    public func finish() {
        waitForAsynchronousFrames()
        pipeline.end(with: CompressionError(.invalidated, "the session is finished"))
    }

    public func finish() async {
        await waitForAsynchronousFrames()
        pipeline.end(with: CompressionError(.invalidated, "the session is finished"))
    }

    /// Stops at once: queued pictures are dropped, ``frames`` ends, producers get an error.
    public func invalidate() {
        pipeline.end(with: CompressionError(.invalidated, "the session was invalidated"))
    }

    // MARK: Multi-pass

    /// Starts the next pass of a two-pass session: the first analyses, the second encodes.
    public func beginPass() throws(CompressionError) {
        pipeline.waitForQueue()
        if let failure = pipeline.failure { throw failure }
        let pass = try engine.withLock { (engine) throws(CompressionError) -> Int in
            guard engine.encoder == nil, engine.pass < configuration.passes else {
                throw CompressionError(.invalidSettings, engine.encoder != nil ? "a pass is under way; end it first" : "all \(configuration.passes) passes are done")
            }
            return engine.pass + 1
        }
        var settings = configuration.settings
        if let statistics { settings.pass = pass == 1 ? .first(statistics: statistics) : .last(statistics: statistics) }
        var encoder: H264Encoder?
        do { encoder = try H264Encoder(settings: settings) } catch {
            throw CompressionError(.invalidSettings, "x264 refused the settings for pass \(pass)", underlying: error)
        }
        intake.withLock { $0 = Intake(passOpen: true) }
        engine.withLock { engine in
            engine.pass = pass
            engine.formatDescription = encoder?.formatDescription
            engine.encoder = encoder.take()
            engine.lastDecodeTime = nil
        }
    }

    /// Ends the current pass: its delayed frames come out (or, in an analysis pass, are
    /// discarded) and the statistics are written. Returns whether another pass is wanted.
    public func endPass() throws(CompressionError) -> Bool {
        completeFrames()
        pipeline.waitForQueue()
        intake.withLock { $0.passOpen = false }
        if let failure = pipeline.failure { throw failure }
        return engine.withLock { engine in
            engine.encoder = nil  // closing writes x264's statistics
            return engine.pass < configuration.passes
        }
    }

    // MARK: The AsyncSequence of outputs

    /// The encoded frames of a session made without a handler, in decoding order, for one
    /// consumer. Ends after ``finish()`` or ``invalidate()``; cancelling the consumer
    /// invalidates the session.
    public var frames: Frames {
        SessionOutputs { [pipeline] in await pipeline.next(cancelled: CompressionError(.invalidated, "the consumer of the session's frames was cancelled")) }
    }

    public typealias Frames = SessionOutputs<CompressedFrame>

}

/// The encoder and the timing it needs, used under the session's mutex.
private struct Engine: ~Copyable {
    var encoder: H264Encoder?
    let settings: EncoderSettings
    /// 0 before the first pass of a multi-pass session.
    var pass: Int
    var formatDescription: VideoFormatDescription?
    var converter: PixelConverter?
    /// Durations given with pictures, by their timestamp.
    var durations: [Int64: MediaTime] = [:]
    var lastDecodeTime: Int64?
    let frameDuration: MediaTime
    var multiPass: Bool { pass == 0 || encoderPasses > 1 }
    let encoderPasses: Int

    init(encoder: consuming H264Encoder?, settings: EncoderSettings, pass: Int, passes: Int) {
        encoderPasses = passes
        formatDescription = encoder?.formatDescription
        self.encoder = encoder
        self.settings = settings
        self.pass = pass
        frameDuration = MediaTime(value: Int64(settings.frameRate.denominator), timescale: Int32(clamping: settings.frameRate.numerator))
    }

    /// x264's timestamps tick once per frame duration.
    static func ticks(_ time: MediaTime, rate: FrameRate) -> Int64 {
        time.multiplied(byRatio: Int64(rate.numerator), Int64(rate.denominator)).converted(toTimescale: 1, rounding: .halfAwayFromZero).value
    }

    mutating func encode(_ picture: PixelBuffer, _ time: MediaTime, _ duration: MediaTime?, _ keyframe: Bool) throws(CompressionError) -> [CompressedFrame] {
        guard encoder != nil else {
            throw CompressionError(.invalidFrame, pass == 0 ? "call beginPass() before the first picture of a multi-pass session" : "the pass has ended; call beginPass()")
        }
        // Order and completion were checked when the picture was admitted.
        let timestamp = Self.ticks(time, rate: settings.frameRate)
        if let duration { durations[timestamp] = duration }
        var input = picture
        if picture.format != settings.pixelFormat || picture.width != settings.width || picture.height != settings.height {
            do {
                if converter == nil { converter = try PixelConverter(format: settings.pixelFormat, size: (settings.width, settings.height)) }
                input = try converter!.convert(picture)
            } catch {
                throw CompressionError(.invalidFrame, "cannot convert a \(picture.width)x\(picture.height) \(picture.format) picture to \(settings.pixelFormat)", underlying: error)
            }
        }
        let frame: H264Encoder.EncodedFrame?
        do { frame = try encoder!.encode(input, timestamp: timestamp, forceKeyframe: keyframe) } catch {
            throw CompressionError(.encoderFailed, "x264 failed on the picture at \(time)", underlying: error)
        }
        guard let frame, let output = try output(frame) else { return [] }
        return [output]
    }

    mutating func reconfigure(_ options: [(String, String)]) throws(CompressionError) {
        guard encoder != nil else { throw CompressionError(.invalidSettings, "no encoder is open") }
        do { try encoder!.reconfigure(options) } catch {
            throw CompressionError(.invalidSettings, "x264 refused the change", underlying: error)
        }
    }

    mutating func flush() throws(CompressionError) -> [CompressedFrame] {
        guard encoder != nil else { return [] }
        var outputs: [CompressedFrame] = []
        while true {
            let frame: H264Encoder.EncodedFrame?
            do { frame = try encoder!.flush() } catch { throw CompressionError(.encoderFailed, "x264 failed while flushing", underlying: error) }
            guard let frame else { break }
            if let output = try output(frame) { outputs.append(output) }
        }
        return outputs
    }

    /// The frame as a sample; nil in an analysis pass, whose frames are not delivered.
    private mutating func output(_ frame: H264Encoder.EncodedFrame) throws(CompressionError) -> CompressedFrame? {
        if let lastDecodeTime, frame.decodeTimestamp <= lastDecodeTime {
            throw CompressionError(.encoderFailed, "x264 gave decode time \(frame.decodeTimestamp) after \(lastDecodeTime)")
        }
        lastDecodeTime = frame.decodeTimestamp
        if multiPass && pass == 1 {
            durations.removeValue(forKey: frame.presentationTimestamp)
            return nil
        }
        let duration = durations.removeValue(forKey: frame.presentationTimestamp) ?? frameDuration
        let timing = SampleTiming(presentationTime: frameDuration * frame.presentationTimestamp,
                                  decodeTime: frameDuration * frame.decodeTimestamp, duration: duration)
        let sample = SampleBuffer(data: BlockBuffer(frame.data), formatDescription: formatDescription!, timing: timing,
                                  attachments: SampleAttachments(isSync: frame.isKeyframe, dependsOnOthers: frame.pictureType == .idr || frame.pictureType == .i ? false : true,
                                                                 isDependedOnByOthers: frame.pictureType == .b ? false : nil))
        return CompressedFrame(sampleBuffer: sample, pictureType: frame.pictureType, quantizer: frame.quantizer, pass: max(pass, 1))
    }
}
