extension PageReport {
    /// What a page measured of the sound it played (a file's AAC track, decoded with WebCodecs'
    /// `AudioDecoder` and played through Web Audio on the control timebase).
    public struct Sound: Sendable, Hashable, Codable {
        /// The codec string the decoder was configured with (`mp4a.40.2`).
        public var codec: String
        /// The sample rate the decoder was configured with.
        public var sampleRate: Int
        /// The channels the decoder was configured with.
        public var channels: Int
        /// Frames received over the WebSocket (those before a seek's target included).
        public var received: Int
        /// Blocks the decoder output.
        public var decoded: Int
        /// Blocks started on the audio context (again after each pause, seek or rate change).
        public var started: Int
        /// Blocks whose time had passed when they could start (before the clock's start, or the
        /// page fell behind): not heard.
        public var skipped: Int
        /// Blocks started afresh on the clock because the chain of blocks before them had
        /// drifted from it by more than 10 ms (the audio device's clock against the page's).
        public var rechained: Int
        /// Errors decoding or playing sound.
        public var decodeErrors: Int
        /// The audio context's state (`running`; `suspended` until a gesture in most browsers).
        public var contextState: String
        /// The A/V skew in milliseconds of real time, absolute: at each frame drawn while sound
        /// played, the media time heard (output latency included) less the frame's presentation
        /// time, over the rate.
        public var skewMs: Lateness
        /// The signed mean of the same (positive: the sound ahead of the picture).
        public var meanSkewMs: Double
        /// How many frames the skew was measured at.
        public var skewSamples: Int
        /// The last sound error, if any.
        public var error: String?

        /// A sound report with nothing measured.
        public init(codec: String = "", sampleRate: Int = 0, channels: Int = 0, received: Int = 0, decoded: Int = 0, started: Int = 0, skipped: Int = 0,
                    rechained: Int = 0, decodeErrors: Int = 0, contextState: String = "", skewMs: Lateness = .init(), meanSkewMs: Double = 0,
                    skewSamples: Int = 0, error: String? = nil) {
            self.codec = codec
            self.sampleRate = sampleRate
            self.channels = channels
            self.received = received
            self.decoded = decoded
            self.started = started
            self.skipped = skipped
            self.rechained = rechained
            self.decodeErrors = decodeErrors
            self.contextState = contextState
            self.skewMs = skewMs
            self.meanSkewMs = meanSkewMs
            self.skewSamples = skewSamples
            self.error = error
        }
    }
}
