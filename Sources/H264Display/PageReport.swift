/// What a page measured, as it reports it (a `status` message several times a second, and a
/// `report` at the end of playback): `preview --report` writes the last one as JSON.
public struct PageReport: Sendable, Hashable, Codable {
    /// Lateness percentiles in milliseconds: when a frame was drawn less when its presentation
    /// time came on the page's clock.
    public struct Lateness: Sendable, Hashable, Codable {
        /// The median.
        public var p50: Double
        /// The 95th percentile.
        public var p95: Double
        /// The largest.
        public var max: Double

        /// Percentiles.
        public init(p50: Double = 0, p95: Double = 0, max: Double = 0) {
            self.p50 = p50
            self.p95 = p95
            self.max = max
        }
    }

    /// Samples received over the WebSocket.
    public var framesReceived: Int
    /// Frames the `VideoDecoder` output.
    public var framesDecoded: Int
    /// Frames drawn on the canvas.
    public var framesPresented: Int
    /// Frames never drawn for lack of time or for damage: decoded late (a later frame was due
    /// too; a live page draws the newest), lost in the decoder to a decode error, or samples
    /// skipped after one until the next sync sample.
    public var framesDropped: Int
    /// Frames a flush discarded (a seek's or the application's): decoded and waiting for their
    /// time, or still in the decoder. Not late: ``framesDropped`` does not count them.
    public var framesFlushed: Int
    /// Decoder errors (a sample the browser could not decode).
    public var decodeErrors: Int
    /// When frames were drawn against when they were due.
    public var latenessMs: Lateness
    /// The codec string the decoder was configured with (`avc1.64001f`).
    public var codec: String
    /// The picture width.
    public var width: Int
    /// The picture height.
    public var height: Int
    /// The browser's `navigator.userAgent`.
    public var userAgent: String
    /// Samples waiting in the decoder (`decodeQueueSize`).
    public var decodeQueue: Int
    /// Decoded frames waiting for their time.
    public var framesWaiting: Int
    /// The page clock's media time, seconds.
    public var time: Double
    /// The presentation time of the frame on screen, seconds (nil before the first).
    public var presentedTime: Double?
    /// The page clock's rate (0: paused).
    public var rate: Double
    /// Whether the page has shown everything up to the end of the stream.
    public var ended: Bool
    /// Something the page noticed that did not stop playback (the browser's decoder returned
    /// fewer frames than it was given, without an error).
    public var warning: String?
    /// The intervals between the page's animation frames, ms: a browser with the time it needs
    /// runs them at the display's rate (16.7 ms at 60 Hz); far longer ones mean the machine was
    /// too busy for the page, and frames are late for that reason.
    public var frameLoopMs: Lateness?
    /// When the first frame was drawn, in milliseconds from the page's navigation start (the
    /// page's load, its WebSocket, the configuration and the first decode).
    public var firstFrameMs: Double?
    /// Where the time to the first frame went: milliseconds from the page's navigation to its
    /// script running (`script`), its WebSocket open (`socketOpen`), the decoder configured
    /// (`configuration`), the first sample in (`firstSample`), the first frame out of the
    /// decoder (`firstDecoded`) and drawn (`firstDrawn`).
    public var startupMs: [String: Double]?
    /// How fast the browser's decoder went while samples waited in it: frames out per second
    /// over the time it had a backlog (nil when it never had one, or for fewer than 5 frames:
    /// it kept up with what it was given). Near or below the stream's frame rate, the decoder
    /// cannot keep up, and frames are late and dropped for that reason.
    public var decodeFramesPerSecond: Double?
    /// Files: frames the decoder returned after their time had come while other samples waited
    /// in it (it fell behind at that moment, as a decoder sharing a busy machine does); each is
    /// dropped or drawn late. Nil from a page that did not count them, and for live sources.
    public var framesDecodedLate: Int?
    /// Files: samples that reached the page after their presentation time had come (the server
    /// or the network was late); their frames are dropped or drawn late. Nil as above.
    public var samplesReceivedLate: Int?
    /// Files: frames dropped because no animation frame of the page came within their time
    /// (the browser's frame loop stalled, the machine busy), decoded in time or not.
    public var framesDroppedBetweenAnimationFrames: Int?
    /// Why the stream cannot play here (the browser does not support its configuration), if so.
    public var error: String?
    /// Live sources: added latency in milliseconds, from a sample's arrival at the server to
    /// its drawing (p50, p95, max); nil for files.
    public var liveLatencyMs: Lateness?
    /// The page's JavaScript heap in bytes, where the browser says (`performance.memory`).
    public var heapBytes: Int?
    /// The sound the page played, when the stream has one it can decode (nil otherwise).
    public var sound: Sound?

    /// A report with nothing measured yet.
    public init(framesReceived: Int = 0, framesDecoded: Int = 0, framesPresented: Int = 0, framesDropped: Int = 0, framesFlushed: Int = 0, decodeErrors: Int = 0,
                latenessMs: Lateness = .init(), codec: String = "", width: Int = 0, height: Int = 0, userAgent: String = "", decodeQueue: Int = 0,
                framesWaiting: Int = 0, time: Double = 0, presentedTime: Double? = nil, rate: Double = 0, ended: Bool = false, error: String? = nil, liveLatencyMs: Lateness? = nil,
                heapBytes: Int? = nil) {
        self.framesReceived = framesReceived
        self.framesDecoded = framesDecoded
        self.framesPresented = framesPresented
        self.framesDropped = framesDropped
        self.framesFlushed = framesFlushed
        self.decodeErrors = decodeErrors
        self.latenessMs = latenessMs
        self.codec = codec
        self.width = width
        self.height = height
        self.userAgent = userAgent
        self.decodeQueue = decodeQueue
        self.framesWaiting = framesWaiting
        self.time = time
        self.presentedTime = presentedTime
        self.rate = rate
        self.ended = ended
        self.error = error
        self.liveLatencyMs = liveLatencyMs
        self.heapBytes = heapBytes
    }
}

extension PageReport {
    /// Reads a report as a page sends it, or as `preview --report` wrote it; a report written
    /// before ``framesFlushed`` was counted reads as having flushed none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        framesReceived = try container.decode(Int.self, forKey: .framesReceived)
        framesDecoded = try container.decode(Int.self, forKey: .framesDecoded)
        framesPresented = try container.decode(Int.self, forKey: .framesPresented)
        framesDropped = try container.decode(Int.self, forKey: .framesDropped)
        framesFlushed = try container.decodeIfPresent(Int.self, forKey: .framesFlushed) ?? 0
        decodeErrors = try container.decode(Int.self, forKey: .decodeErrors)
        latenessMs = try container.decode(Lateness.self, forKey: .latenessMs)
        codec = try container.decode(String.self, forKey: .codec)
        width = try container.decode(Int.self, forKey: .width)
        height = try container.decode(Int.self, forKey: .height)
        userAgent = try container.decode(String.self, forKey: .userAgent)
        decodeQueue = try container.decode(Int.self, forKey: .decodeQueue)
        framesWaiting = try container.decode(Int.self, forKey: .framesWaiting)
        time = try container.decode(Double.self, forKey: .time)
        presentedTime = try container.decodeIfPresent(Double.self, forKey: .presentedTime)
        rate = try container.decode(Double.self, forKey: .rate)
        ended = try container.decode(Bool.self, forKey: .ended)
        warning = try container.decodeIfPresent(String.self, forKey: .warning)
        frameLoopMs = try container.decodeIfPresent(Lateness.self, forKey: .frameLoopMs)
        firstFrameMs = try container.decodeIfPresent(Double.self, forKey: .firstFrameMs)
        startupMs = try container.decodeIfPresent([String: Double].self, forKey: .startupMs)
        decodeFramesPerSecond = try container.decodeIfPresent(Double.self, forKey: .decodeFramesPerSecond)
        framesDecodedLate = try container.decodeIfPresent(Int.self, forKey: .framesDecodedLate)
        samplesReceivedLate = try container.decodeIfPresent(Int.self, forKey: .samplesReceivedLate)
        framesDroppedBetweenAnimationFrames = try container.decodeIfPresent(Int.self, forKey: .framesDroppedBetweenAnimationFrames)
        error = try container.decodeIfPresent(String.self, forKey: .error)
        liveLatencyMs = try container.decodeIfPresent(Lateness.self, forKey: .liveLatencyMs)
        heapBytes = try container.decodeIfPresent(Int.self, forKey: .heapBytes)
        sound = try container.decodeIfPresent(Sound.self, forKey: .sound)
    }
}
