import Dispatch
import H264Bitstream
public import H264Codec
public import MediaCore
import SystemIO

/// An encoded frame out of a ``CompressionSession``: a sample buffer in decoding order
/// (4-byte NAL lengths, or start codes with `EncoderSettings/annexB`), with its
/// presentation and decoding times, sync flag and the format description of x264's SPS/PPS.
public struct CompressedFrame: Sendable {
    /// The encoded sample: data, timing, sync flag and format (`VTCompressionOutputCallback`'s sampleBuffer).
    public var sampleBuffer: SampleBuffer
    /// How x264 coded the picture: IDR, I, P, B or reference B.
    public var pictureType: H264Encoder.EncodedFrame.PictureType
    /// The frame's quantiser (QP), as x264 reports it.
    public var quantizer: Int
    /// The pass that made it (1 for a single-pass session).
    public var pass: Int
}

/// Encodes pictures with x264: the `VTCompressionSession` analogue.
///
/// Pictures go in with `encode(_:presentationTime:duration:forceKeyframe:)` in presentation
/// order; encoded frames come out in decoding order, to the handler given at creation or to
/// ``frames``, an `AsyncSequence` for one consumer. Each frame's presentation time is exactly
/// the time its picture was given (variable frame rates are kept); decode times follow the
/// presentation times of the pictures in order, shifted back by x264's reorder delay (what
/// x264 and FFmpeg do), so that no frame is decoded after it is shown.
///
/// Synchronous by default with a handler; asynchronous on its own dispatch queue, off the
/// cooperative pool, when asked, and always without a handler (its frames go to ``frames``,
/// consumed beside the encoding). A blocking `encode` never waits for ever on a consumer that
/// is not there (one that was to run on the same thread, after the loop): it throws
/// ``SessionError/outputsNotConsumed(waited:inFlight:)`` after
/// ``Configuration/consumerWaitLimit``. At most ``Configuration/maximumFramesInFlight``
/// pictures wait for the encoder plus frames wait for the consumer: a fast producer blocks (or
/// suspends) until the consumer catches up.
///
/// Pictures must have the session's size and pixel format (`EncoderSettings/width`,
/// `EncoderSettings/height`, `EncoderSettings/pixelFormat`) unless
/// ``Configuration/convertsPictures`` asks for them to be converted: the same rule as the
/// decompression session's output size, explicit in the configuration.
///
/// `completeFrames(until:)` gets every delayed frame out (`VTCompressionSessionCompleteFrames`);
/// the session goes on after it, the next picture starting a new GOP with an IDR.
/// Multi-pass (``Configuration/passes`` 2): ``beginPass()``, feed every picture, ``endPass()``,
/// which says whether another pass is wanted; the first pass analyses into a statistics file and
/// its frames are not delivered; the second encodes for real.
public final class CompressionSession: Sendable {
    /// What the session encodes and how it delivers.
    public struct Configuration: Sendable {
        /// What x264 encodes and how: size, pixel format, frame rate, rate control.
        public var settings: EncoderSettings
        /// Encode on the session's own queue; `encode` returns once the picture is queued. A
        /// session made without an output handler (its frames consumed from ``frames``) is
        /// always asynchronous.
        public var isAsynchronous: Bool
        /// Pictures queued plus frames waiting for the consumer, at most (at least 1).
        public var maximumFramesInFlight: Int
        /// 1, or 2 for a two-pass encode at `EncoderSettings/rateControl`'s bit rate.
        public var passes: Int
        /// Where the two-pass statistics go (x264 adds `.mbtree`); a temporary file when nil.
        public var statisticsPath: String?
        /// Convert pictures of another size or pixel format to the settings' (libswscale, as
        /// ffmpeg scales); otherwise such a picture is an error.
        public var convertsPictures: Bool
        /// Seconds the blocking `encode` waits for an absent consumer of ``frames`` to take a
        /// frame before it throws ``SessionError/outputsNotConsumed(waited:inFlight:)`` (nil:
        /// for ever). Only while frames wait and nobody is waiting for them.
        public var consumerWaitLimit: Double? = 2

        /// A configuration; `maximumFramesInFlight` is raised to at least 1.
        public init(settings: EncoderSettings, isAsynchronous: Bool = false, maximumFramesInFlight: Int = 8, passes: Int = 1,
                    statisticsPath: String? = nil, convertsPictures: Bool = false) {
            self.settings = settings
            self.isAsynchronous = isAsynchronous
            self.maximumFramesInFlight = max(1, maximumFramesInFlight)
            self.passes = passes
            self.statisticsPath = statisticsPath
            self.convertsPictures = convertsPictures
        }
    }

    /// Receives each encoded frame, in decoding order (`VTCompressionOutputHandler`).
    public typealias OutputHandler = @Sendable (CompressedFrame) -> Void

    /// The configuration the session was made with.
    public let configuration: Configuration
    private let engine: Locked<Engine>
    private let pipeline: SessionPipeline<CompressedFrame>
    private let statistics: String?
    /// What the callers have submitted: checked before a picture is queued, so a misuse is an
    /// error for the caller and not the end of the session.
    private let intake: Locked<Intake>
    private struct Intake {
        var passOpen: Bool
        var lastTime: MediaTime?
    }

    /// A session delivering frames to `outputHandler`.
    public convenience init(configuration: Configuration, outputHandler: @escaping OutputHandler) throws(SessionError) {
        try self.init(configuration: configuration, handler: outputHandler)
    }

    /// A session delivering frames to ``frames``; it must be asynchronous.
    public convenience init(configuration: Configuration) throws(SessionError) {
        try self.init(configuration: configuration, handler: nil)
    }

    private init(configuration: Configuration, handler: OutputHandler?) throws(SessionError) {
        // Without a handler the outputs go to `frames`, consumed beside the work: asynchronous,
        // whatever the configuration says.
        var configuration = configuration
        if handler == nil { configuration.isAsynchronous = true }
        guard (1...2).contains(configuration.passes) else {
            throw .invalidSettings(CodecError(.invalidConfiguration, "\(configuration.passes) passes: 1 or 2"))
        }
        if configuration.passes == 2 {
            guard case .averageBitRate = configuration.settings.rateControl else {
                throw .invalidSettings(CodecError(.invalidConfiguration, "a two-pass encode targets a bit rate; set an average bit rate"))
            }
            let directory = ProcessEnvironment.temporaryDirectory
            statistics = configuration.statisticsPath ?? "\(directory)/h264kit-\(processID)-\(UInt32.random(in: 0...UInt32.max)).stats"
        } else {
            statistics = nil
        }
        self.configuration = configuration
        var settings = configuration.settings
        if let statistics { settings.pass = .first(statistics: statistics) }
        do { try settings.validate() } catch { throw .invalidSettings(error) }
        // A single-pass session opens its encoder now, so bad settings fail here.
        let encoder: H264Encoder?
        if configuration.passes == 1 {
            do { encoder = try H264Encoder(settings: settings) } catch { throw .invalidSettings(error) }
        } else {
            encoder = nil
        }
        engine = Locked(Engine(encoder: encoder, settings: configuration.settings, converts: configuration.convertsPictures,
                              pass: configuration.passes == 1 ? 1 : 0, passes: configuration.passes))
        intake = Locked(Intake(passOpen: configuration.passes == 1))
        pipeline = SessionPipeline(label: "H264Session.CompressionSession", asynchronous: configuration.isAsynchronous,
                                   limit: configuration.maximumFramesInFlight, handler: handler,
                                   consumerWaitLimit: configuration.consumerWaitLimit)
    }

    deinit {
        invalidate()
        // Statistics the session named itself are removed; a path the caller chose is kept
        // (as the x264 CLI keeps a --stats file), its temporary files aside.
        if let statistics {
            for suffix in configuration.statisticsPath == nil ? ["", ".mbtree", ".temp", ".mbtree.temp"] : [".temp", ".mbtree.temp"] {
                removeFile(statistics + suffix)
            }
        }
    }

    /// The format of the encoded frames (x264's SPS and PPS); nil before the first pass begins.
    public var formatDescription: VideoFormatDescription? { engine.withLock { $0.formatDescription } }

    /// Pictures queued plus frames waiting for the consumer, now.
    public var framesInFlight: Int { pipeline.inFlight }
    /// The most pictures and frames that were ever in flight at once.
    public var maximumFramesInFlightReached: Int { pipeline.highWater }

    // MARK: Encoding

    /// Encodes a picture (presentation order), blocking while the in-flight bound is reached.
    @available(*, noasync, message: "this blocks the thread; use the async form in async code")
    public func encode(_ picture: PixelBuffer, presentationTime: MediaTime, duration: MediaTime? = nil, forceKeyframe: Bool = false) throws(SessionError) {
        try admit(picture, presentationTime)
        try pipeline.acquire()
        admitted(presentationTime)
        submit(picture, presentationTime, duration, forceKeyframe)
    }

    /// Encodes a picture, suspending while the in-flight bound is reached.
    public func encode(_ picture: PixelBuffer, presentationTime: MediaTime, duration: MediaTime? = nil, forceKeyframe: Bool = false) async throws(SessionError) {
        try admit(picture, presentationTime)
        try await pipeline.acquire(cancelled: .cancelled)
        admitted(presentationTime)
        submit(picture, presentationTime, duration, forceKeyframe)
    }

    /// Checks a picture's geometry and place in the stream before it is queued.
    private func admit(_ picture: PixelBuffer, _ time: MediaTime) throws(SessionError) {
        let settings = configuration.settings
        if !configuration.convertsPictures, picture.width != settings.width || picture.height != settings.height || picture.format != settings.pixelFormat {
            throw .pictureMismatch(expected: PictureGeometry(width: settings.width, height: settings.height, format: settings.pixelFormat), got: PictureGeometry(picture))
        }
        try intake.withLock { (intake) throws(SessionError) in
            guard intake.passOpen else {
                throw configuration.passes > 1 ? .outOfOrder(.encodeBeforeBeginPass) : .invalidated
            }
            guard time.isNumeric else { throw .presentationTimeOutOfOrder(time, previous: nil) }
            if let last = intake.lastTime, !(time > last) { throw .presentationTimeOutOfOrder(time, previous: last) }
        }
    }

    /// Records a picture's time once it has its place in flight (a picture whose wait failed
    /// may be given again).
    private func admitted(_ time: MediaTime) {
        intake.withLock { $0.lastTime = time }
    }

    private func submit(_ picture: PixelBuffer, _ time: MediaTime, _ duration: MediaTime?, _ keyframe: Bool) {
        pipeline.submit { [self] () throws(SessionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(SessionError) in try engine.encode(picture, time, duration, keyframe) }
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
        /// VBV buffer size, kbit (a session started with both VBV limits).
        public var bufferSize: Int?

        /// A change of the given values; nil leaves a value as it is.
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
    public func change(_ change: LiveChange) throws(SessionError) {
        let settings = configuration.settings
        let hasVBV = settings.maximumBitRate != nil && settings.bufferSize != nil
        var options: [(String, String)] = []
        if let crf = change.constantQuality {
            guard case .constantQuality = settings.rateControl else { throw .unsupportedChange(.constantQualityWithoutCRF) }
            guard (0...51).contains(crf) else { throw .unsupportedChange(.outOfRange(name: "CRF", value: crf)) }
            options.append(("crf", "\(crf)"))
        }
        if let rate = change.averageBitRate {
            guard case .averageBitRate = settings.rateControl, hasVBV else { throw .unsupportedChange(.bitRateWithoutVBV) }
            guard configuration.passes == 1 else { throw .unsupportedChange(.bitRateOfMultiPass) }
            guard rate > 0 else { throw .unsupportedChange(.outOfRange(name: "bit rate", value: Double(rate))) }
            options.append(("bitrate", "\(rate)"))
        }
        if change.maximumBitRate != nil || change.bufferSize != nil {
            guard hasVBV else { throw .unsupportedChange(.vbvWithoutVBV) }
            if let rate = change.maximumBitRate {
                guard rate > 0 else { throw .unsupportedChange(.outOfRange(name: "maximum bit rate", value: Double(rate))) }
                options.append(("vbv-maxrate", "\(rate)"))
            }
            if let size = change.bufferSize {
                guard size > 0 else { throw .unsupportedChange(.outOfRange(name: "buffer size", value: Double(size))) }
                options.append(("vbv-bufsize", "\(size)"))
            }
        }
        guard !options.isEmpty else { return }
        try intake.withLock { (intake) throws(SessionError) in
            guard intake.passOpen else { throw .outOfOrder(.changeWhenNotEncoding) }
        }
        let changes = options
        pipeline.perform { [self] () throws(SessionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(SessionError) in try engine.reconfigure(changes) }
            return []
        }
    }

    // MARK: Completing and ending

    /// Gets out every frame the encoder delays, and waits until they are delivered
    /// (`VTCompressionSessionCompleteFrames`). x264 cannot stop part-way through its lookahead,
    /// so the frames of every picture given so far come out, those after `time` included; the
    /// session then goes on, the next picture starting a new GOP with an IDR (same parameter
    /// sets, decode times continuing).
    /// (Blocking form.)
    @available(*, noasync, message: "this blocks the thread; use the async form in async code")
    public func completeFrames(until time: MediaTime = .positiveInfinity) {
        complete()
        pipeline.waitForQueue()
    }

    /// Gets out every delayed frame, suspending until they are delivered.
    public func completeFrames(until time: MediaTime = .positiveInfinity) async {
        complete()
        await pipeline.waitForQueue()
    }

    private func complete() {
        pipeline.perform { [self] () throws(SessionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(SessionError) in try engine.flush(reopening: true) }
        }
    }

    /// Ends the stream: every remaining frame is delivered, then ``frames`` ends. Blocks until
    /// then.
    @available(*, noasync, message: "this blocks the thread; use the async form in async code")
    public func finish() {
        pipeline.perform { [self] () throws(SessionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(SessionError) in try engine.flush(reopening: false) }
        }
        pipeline.waitForQueue()
        intake.withLock { $0.passOpen = false }
        pipeline.end(with: .invalidated)
    }

    /// Ends the stream, suspending until every remaining frame is delivered.
    public func finish() async {
        pipeline.perform { [self] () throws(SessionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(SessionError) in try engine.flush(reopening: false) }
        }
        await pipeline.waitForQueue()
        intake.withLock { $0.passOpen = false }
        pipeline.end(with: .invalidated)
    }

    /// Stops at once: queued pictures are dropped, ``frames`` ends, producers get an error.
    public func invalidate() {
        intake.withLock { $0.passOpen = false }
        pipeline.end(with: .invalidated)
    }

    // MARK: Multi-pass

    /// Starts the next pass of a two-pass session: the first analyses, the second encodes.
    public func beginPass() throws(SessionError) {
        pipeline.waitForQueue()
        if let failure = pipeline.failure { throw failure }
        let pass = try engine.withLock { (engine) throws(SessionError) -> Int in
            guard engine.encoder == nil else { throw .outOfOrder(.beginPassDuringPass) }
            guard engine.pass < configuration.passes else { throw .outOfOrder(.beginPassAfterLastPass) }
            return engine.pass + 1
        }
        var settings = configuration.settings
        if let statistics { settings.pass = pass == 1 ? .first(statistics: statistics) : .last(statistics: statistics) }
        var encoder: H264Encoder?
        do { encoder = try H264Encoder(settings: settings) } catch { throw .invalidSettings(error) }
        intake.withLock { $0 = Intake(passOpen: true) }
        engine.withLock { engine in engine.startPass(pass, encoder: encoder.take()) }
    }

    /// Ends the current pass: its delayed frames come out (or, in an analysis pass, are
    /// discarded) and the statistics are written. Returns whether another pass is wanted.
    public func endPass() throws(SessionError) -> Bool {
        pipeline.perform { [self] () throws(SessionError) -> [CompressedFrame] in
            try engine.withLock { (engine) throws(SessionError) in try engine.flush(reopening: false) }
        }
        pipeline.waitForQueue()
        intake.withLock { $0.passOpen = false }
        if let failure = pipeline.failure { throw failure }
        return engine.withLock { engine in
            engine.encoder = nil  // closing writes x264's statistics
            return engine.pass < configuration.passes
        }
    }

    // MARK: The AsyncSequence of outputs

    /// The encoded frames of a session made without a handler, in decoding order, for its one
    /// consumer. Ends after `finish()` or ``invalidate()`` (and throws if x264 failed);
    /// cancelling the consumer invalidates the session, and so does letting go of the sequence
    /// and every iterator of it (a `break` out of its loop; a sequence asked for and never
    /// iterated). Asking a session with a handler, or asking twice, throws.
    public var frames: Frames {
        get throws(SessionError) {
            try pipeline.takeSequence()
            return SessionOutputs(pipeline: pipeline)
        }
    }

    /// The sequence of encoded frames that ``frames`` gives.
    public typealias Frames = SessionOutputs<CompressedFrame>
}

/// The encoder and the timing it needs, used under the session's mutex.
///
/// Timing: pictures are numbered as they come (x264 is given the number as its pts, at the
/// nominal rate for its rate control), and each frame's presentation time is its picture's
/// own time. Decode times follow x264's rule for real timestamps (what FFmpeg writes): with a
/// reorder delay of D frames (x264's first frame has dts −D), the k-th frame out is decoded at
/// the presentation time of picture k − D, and the first D frames at picture k's time shifted
/// back by the distance from picture 0 to picture D. Never after a frame is shown, for
/// variable rates too (x264 keeps every frame's picture number at least k − D).
private struct Engine: ~Copyable {
    var encoder: H264Encoder?
    let settings: EncoderSettings
    let converts: Bool
    /// 0 before the first pass of a multi-pass session.
    var pass: Int
    let encoderPasses: Int
    var formatDescription: VideoFormatDescription?
    var converter: PixelConverter?
    /// Open a new encoder at the next picture (after ``flush(reopening:)``).
    var reopens = false
    /// Presentation time and duration of each picture given and not yet retired, by number.
    var pictures: [Int64: (time: MediaTime, duration: MediaTime?)] = [:]
    var nextPicture: Int64 = 0
    /// Frames out so far (the next frame's decode-order number).
    var nextFrame: Int64 = 0
    /// The reorder delay in frames, from x264's first frame.
    var delay: Int64?
    /// The first picture's time, and the shift of the first D decode times (picture D's time
    /// minus picture 0's).
    var firstTime: MediaTime?
    var shift: MediaTime?
    let frameDuration: MediaTime
    var lastDecodeTime: MediaTime?

    var multiPass: Bool { pass == 0 || encoderPasses > 1 }

    init(encoder: consuming H264Encoder?, settings: EncoderSettings, converts: Bool, pass: Int, passes: Int) {
        encoderPasses = passes
        formatDescription = encoder?.formatDescription
        self.encoder = encoder
        self.settings = settings
        self.converts = converts
        self.pass = pass
        frameDuration = settings.frameRate.frameDuration
    }

    mutating func startPass(_ pass: Int, encoder: consuming H264Encoder?) {
        self.pass = pass
        formatDescription = encoder?.formatDescription
        self.encoder = encoder
        pictures = [:]
        nextPicture = 0
        nextFrame = 0
        delay = nil
        firstTime = nil
        shift = nil
        lastDecodeTime = nil
    }

    mutating func encode(_ picture: PixelBuffer, _ time: MediaTime, _ duration: MediaTime?, _ keyframe: Bool) throws(SessionError) -> [CompressedFrame] {
        if reopens {
            do { encoder = try H264Encoder(settings: settings) } catch { throw .invalidSettings(error) }
            reopens = false
        }
        guard encoder != nil else { throw .outOfOrder(pass == 0 ? .encodeBeforeBeginPass : .encodeAfterEndPass) }
        var input = picture
        if converts && (picture.format != settings.pixelFormat || picture.width != settings.width || picture.height != settings.height) {
            do {
                if converter == nil { converter = try PixelConverter(format: settings.pixelFormat, size: (settings.width, settings.height)) }
                input = try converter!.convert(picture)
            } catch {
                throw .codecFailed(error)
            }
        }
        let number = nextPicture
        nextPicture += 1
        pictures[number] = (time, duration)
        if firstTime == nil { firstTime = time }
        let frame: H264Encoder.EncodedFrame?
        do { frame = try encoder!.encode(input, timestamp: number, forceKeyframe: keyframe) } catch { throw .codecFailed(error) }
        guard let frame, let output = try output(frame) else { return [] }
        return [output]
    }

    mutating func reconfigure(_ options: [(String, String)]) throws(SessionError) {
        guard encoder != nil else { throw .outOfOrder(.changeWhenNotEncoding) }
        do { try encoder!.reconfigure(options) } catch { throw .invalidSettings(error) }
    }

    /// Every delayed frame; with `reopening`, the next picture opens a new encoder.
    mutating func flush(reopening: Bool) throws(SessionError) -> [CompressedFrame] {
        guard encoder != nil, !reopens else { return [] }
        var outputs: [CompressedFrame] = []
        while true {
            let frame: H264Encoder.EncodedFrame?
            do { frame = try encoder!.flush() } catch { throw .codecFailed(error) }
            guard let frame else { break }
            if let output = try output(frame) { outputs.append(output) }
        }
        if reopening && !multiPass { reopens = true }
        return outputs
    }

    /// The presentation time of picture `number`, extrapolated at the nominal rate past the
    /// last picture given (the reorder shift of a stream shorter than the delay).
    private func time(ofPicture number: Int64) -> MediaTime {
        if let known = pictures[number]?.time { return known }
        let last = nextPicture - 1
        guard let lastTime = pictures[last]?.time else { return firstTime ?? .zero }
        return lastTime + frameDuration * (number - last)
    }

    /// The frame as a sample; nil in an analysis pass, whose frames are not delivered.
    private mutating func output(_ frame: H264Encoder.EncodedFrame) throws(SessionError) -> CompressedFrame? {
        let k = nextFrame
        nextFrame += 1
        if delay == nil { delay = max(0, k - frame.decodeTimestamp) }
        if shift == nil, let firstTime { shift = time(ofPicture: delay!) - firstTime }
        guard let presentation = pictures[frame.presentationTimestamp] else {
            throw .codecFailed(CodecError(.encodeFailed, "x264 gave a frame for picture \(frame.presentationTimestamp), which it was not given"))
        }
        let decodeTime = k > delay! ? time(ofPicture: k - delay!) : time(ofPicture: k) - shift!
        if let lastDecodeTime, !(decodeTime > lastDecodeTime) {
            throw .codecFailed(CodecError(.encodeFailed, "decode time \(decodeTime) after \(lastDecodeTime)"))
        }
        lastDecodeTime = decodeTime
        // Pictures before the oldest one still to come out are done with.
        if k >= delay! + 2 { pictures.removeValue(forKey: k - delay! - 2) }
        if multiPass && pass == 1 { return nil }
        let duration = presentation.duration ?? pictures[frame.presentationTimestamp + 1].map { $0.time - presentation.time } ?? frameDuration
        let sample = SampleBuffer(
            data: BlockBuffer(frame.data), formatDescription: formatDescription!,
            timing: SampleTiming(presentationTime: presentation.time, decodeTime: decodeTime, duration: duration),
            attachments: SampleAttachments(isSync: frame.isKeyframe, dependsOnOthers: frame.pictureType == .idr || frame.pictureType == .i ? false : true,
                                           isDependedOnByOthers: frame.pictureType == .b ? false : nil))
        return CompressedFrame(sampleBuffer: sample, pictureType: frame.pictureType, quantizer: frame.quantizer, pass: max(pass, 1))
    }
}
