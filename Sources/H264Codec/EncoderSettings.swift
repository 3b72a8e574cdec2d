public import H264Bitstream
public import MediaCore

/// What an ``H264Encoder`` makes: the VTCompressionSession properties, checked before x264
/// sees them so an impossible combination is a clear error, not a half-written file.
public struct EncoderSettings: Sendable, Hashable {
    /// How x264 spends bits: a quality, a quantiser or a bit rate.
    public enum RateControl: Sendable, Hashable {
        /// Constant quality (x264 `--crf`).
        case constantQuality(Double)
        /// Constant quantiser (`--qp`).
        case constantQuantizer(Int)
        /// Average bit rate in kbit/s (`--bitrate`); two-pass when ``pass`` says so.
        case averageBitRate(Int)
    }

    /// The entropy coder: CAVLC, or CABAC (not in the Baseline profile).
    public enum Entropy: String, Sendable, Hashable { case cavlc, cabac }

    /// Multi-pass encoding through x264's statistics file (`--pass`, `--stats`).
    public enum Pass: Sendable, Hashable {
        /// Analyse, writing statistics (fast first pass, as the x264 CLI does).
        case first(statistics: String)
        /// Encode for real from the statistics.
        case last(statistics: String)
    }

    /// Picture width in pixels.
    public var width: Int
    /// Picture height in pixels.
    public var height: Int
    /// The format of the pictures given to the encoder; x264 takes planar YUV and NV12 at 8 or 10 bits.
    public var pixelFormat: PixelFormat
    /// The frame rate, which also sets the encoder's timebase (one tick per frame).
    public var frameRate: FrameRate
    /// The x264 preset, one of ``presets`` (`--preset`).
    public var preset: String
    /// x264 tunes, comma-separated, from ``tunes`` (`--tune`); nil for none.
    public var tune: String?
    /// The rate control mode and its target.
    public var rateControl: RateControl
    /// VBV: maximum rate (kbit/s) and buffer (kbit), the data-rate limits.
    public var maximumBitRate: Int?
    /// The VBV buffer size in kbit (`--vbv-bufsize`); set with ``maximumBitRate``.
    public var bufferSize: Int?
    /// "baseline", "main", "high", "high10", "high422", "high444"; nil: what the settings need.
    public var profile: String?
    /// "3.1", "4", "4.1", ...; nil: x264 picks from the size, rate and VBV.
    public var level: String?
    /// CAVLC or CABAC; nil keeps the preset's choice.
    public var entropy: Entropy?
    /// Zero latency: no lookahead, no reordering, frames out as they go in (`--tune zerolatency`).
    public var realTime: Bool
    /// B-frames between references; 0 turns reordering off; nil keeps the preset's.
    public var bFrames: Int?
    /// Largest distance between keyframes, in frames (`--keyint`).
    public var maximumKeyframeInterval: Int?
    /// Encoder threads (`--threads`); 0 lets x264 choose, nil keeps its default.
    public var threads: Int?
    /// Slices per picture (`--slices`); nil keeps the preset's.
    public var slices: Int?
    /// SPS and PPS before every keyframe (a receiver can join mid-stream).
    public var repeatParameterSets: Bool
    /// An access unit delimiter before each frame (`--aud`).
    public var accessUnitDelimiters: Bool
    /// Start codes instead of 4-byte length prefixes in the encoded frames.
    public var annexB: Bool
    /// The sample aspect ratio written in the VUI; nil leaves it unspecified.
    public var sampleAspectRatio: (width: Int, height: Int)?
    /// The colour description written in the VUI; nil leaves it unspecified.
    public var colour: ColourDescription?
    /// The pass of a multi-pass encode; nil for a single pass.
    public var pass: Pass?
    /// Further x264 options by their CLI names ("ref", "me", "subme", ...).
    public var extraOptions: [String: String]

    /// Settings for pictures of the given size, format and rate; the rest take x264's preset defaults.
    public init(width: Int, height: Int, pixelFormat: PixelFormat = .yuv420p, frameRate: FrameRate, preset: String = "medium", tune: String? = nil,
                rateControl: RateControl = .constantQuality(23)) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.frameRate = frameRate
        self.preset = preset
        self.tune = tune
        self.rateControl = rateControl
        realTime = false
        repeatParameterSets = false
        accessUnitDelimiters = false
        annexB = false
        extraOptions = [:]
    }

    /// Whether two settings give x264 the same options, size, format, rate and framing (not preset, tune, profile).
    public static func == (a: EncoderSettings, b: EncoderSettings) -> Bool { a.x264Options.elementsEqual(b.x264Options, by: ==) && a.fixed == b.fixed }
    /// Hashes the same fields `==` compares.
    public func hash(into hasher: inout Hasher) { for (name, value) in x264Options { hasher.combine(name); hasher.combine(value) }; hasher.combine(fixed) }
    private var fixed: [String] {
        [String(width), String(height), pixelFormat.name, frameRate.description, preset, tune ?? "", profile ?? "", String(realTime),
         String(repeatParameterSets), String(accessUnitDelimiters),
         String(annexB), sampleAspectRatio.map { "\($0.width):\($0.height)" } ?? "", colour.map { "\($0)" } ?? ""]
    }

    /// The presets x264 knows, fastest first.
    public static let presets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]
    /// The tunes x264 knows.
    public static let tunes = ["film", "animation", "grain", "stillimage", "psnr", "ssim", "fastdecode", "zerolatency"]
    /// The profiles ``profile`` accepts, as `x264_param_apply_profile` names them.
    public static let profiles = ["baseline", "main", "high", "high10", "high422", "high444"]
    /// Options `x264_encoder_reconfig` takes while encoding.
    static let liveOptions: Set<String> = ["crf", "bitrate", "vbv-maxrate", "vbv-bufsize", "qp"]

    /// The options as the x264 CLI would pass them to `x264_param_parse`, in a fixed order.
    public var x264Options: [(String, String)] {
        var options: [(String, String)] = []
        switch rateControl {
        case .constantQuality(let crf): options.append(("crf", String(crf)))
        case .constantQuantizer(let qp): options.append(("qp", String(qp)))
        case .averageBitRate(let kbps): options.append(("bitrate", String(kbps)))
        }
        if let maximumBitRate { options.append(("vbv-maxrate", String(maximumBitRate))) }
        if let bufferSize { options.append(("vbv-bufsize", String(bufferSize))) }
        if let level { options.append(("level", level)) }
        if let entropy { options.append(("cabac", entropy == .cabac ? "1" : "0")) }
        if let bFrames { options.append(("bframes", String(bFrames))) }
        if let maximumKeyframeInterval { options.append(("keyint", String(maximumKeyframeInterval))) }
        if let threads { options.append(("threads", String(threads))) }
        if let slices { options.append(("slices", String(slices))) }
        switch pass {
        case .first(let statistics): options.append(("pass", "1")); if !statistics.isEmpty { options.append(("stats", statistics)) }
        case .last(let statistics): options.append(("pass", "2")); if !statistics.isEmpty { options.append(("stats", statistics)) }
        case nil: break
        }
        for (name, value) in extraOptions.sorted(by: { $0.key < $1.key }) { options.append((name, value)) }
        return options
    }

    /// The preset and tune string x264 takes (`zerolatency` added for real time).
    var tuneString: String? {
        var tunes = tune.map { [$0] } ?? []
        if realTime && !tunes.contains("zerolatency") { tunes.append("zerolatency") }
        return tunes.isEmpty ? nil : tunes.joined(separator: ",")
    }

    /// H.264 Table A-1: the largest frame (macroblocks) and macroblock rate of each level.
    static let levelLimits: [(name: String, idc: Int, maxFrameSize: Int, maxMacroblockRate: Int)] = [
        ("1", 10, 99, 1485), ("1b", 9, 99, 1485), ("1.1", 11, 396, 3000), ("1.2", 12, 396, 6000), ("1.3", 13, 396, 11880),
        ("2", 20, 396, 11880), ("2.1", 21, 792, 19800), ("2.2", 22, 1620, 20250), ("3", 30, 1620, 40500), ("3.1", 31, 3600, 108000),
        ("3.2", 32, 5120, 216000), ("4", 40, 8192, 245760), ("4.1", 41, 8192, 245760), ("4.2", 42, 8704, 522240), ("5", 50, 22080, 589824),
        ("5.1", 51, 36864, 983040), ("5.2", 52, 36864, 2073600), ("6", 60, 139264, 4177920), ("6.1", 61, 139264, 8355840), ("6.2", 62, 139264, 16711680),
    ]

    /// Checks the settings; the error says which setting and what would work.
    public func validate() throws(CodecError) {
        func fail(_ reason: String) -> CodecError { CodecError(.invalidConfiguration, reason) }
        guard width > 0, height > 0, width <= 16384, height <= 16384 else { throw fail("size \(width)x\(height) is not in 1...16384") }
        if let chroma = pixelFormat.chromaFormat {
            guard width % chroma.horizontalSubsampling == 0, height % chroma.verticalSubsampling == 0 else {
                throw fail("\(pixelFormat) needs an even \(chroma.verticalSubsampling == 2 ? "width and height" : "width"); the size is \(width)x\(height)")
            }
        }
        guard H264Encoder.colourSpace(pixelFormat) != nil else { throw fail("x264 does not take \(pixelFormat) (convert to yuv420p first)") }
        guard frameRate.numerator > 0, frameRate.denominator > 0, frameRate.numerator <= UInt64(UInt32.max), frameRate.denominator <= UInt64(UInt32.max) else {
            throw fail("frame rate \(frameRate) is out of range")
        }
        guard Self.presets.contains(preset) else { throw fail("preset \(preset): expected one of \(Self.presets.joined(separator: ", "))") }
        if let tune {
            for part in tune.split(separator: ",") where !Self.tunes.contains(String(part)) {
                throw fail("tune \(part): expected one of \(Self.tunes.joined(separator: ", "))")
            }
        }
        switch rateControl {
        case .constantQuality(let crf): guard (-12...51).contains(crf) else { throw fail("CRF \(crf) is not in -12...51") }
        case .constantQuantizer(let qp): guard (0...81).contains(qp) else { throw fail("QP \(qp) is not in 0...81") }
        case .averageBitRate(let kbps): guard kbps > 0 else { throw fail("bit rate \(kbps) kbit/s is not positive") }
        }
        if let maximumBitRate, maximumBitRate <= 0 { throw fail("maximum bit rate \(maximumBitRate) is not positive") }
        if let bufferSize, bufferSize <= 0 { throw fail("buffer size \(bufferSize) is not positive") }
        if (maximumBitRate == nil) != (bufferSize == nil) { throw fail("a data-rate limit needs both the maximum rate and the buffer size (--maxrate and --bufsize)") }
        if case .constantQuantizer = rateControl, maximumBitRate != nil { throw fail("a data-rate limit does not apply to constant-QP encoding") }
        if let bFrames, !(0...16).contains(bFrames) { throw fail("B-frames \(bFrames) is not in 0...16") }
        if let maximumKeyframeInterval, maximumKeyframeInterval < 1 { throw fail("keyframe interval \(maximumKeyframeInterval) is not positive") }
        if let threads, !(0...128).contains(threads) { throw fail("threads \(threads) is not in 0...128 (0: automatic)") }
        if let slices, !(0...((height + 15) / 16)).contains(slices) { throw fail("\(slices) slices do not fit \((height + 15) / 16) macroblock rows") }
        if let pass {
            switch pass {
            case .first(let path), .last(let path): guard !path.isEmpty else { throw fail("a multi-pass encode needs a statistics file") }
            }
            guard case .averageBitRate = rateControl else { throw fail("multi-pass encoding targets a bit rate (--bitrate)") }
        }
        if let profile {
            guard Self.profiles.contains(profile) else { throw fail("profile \(profile): expected one of \(Self.profiles.joined(separator: ", "))") }
            let chroma = pixelFormat.chromaFormat ?? .yuv420
            let needs: String? = chroma == .yuv444 ? "high444" : chroma == .yuv422 ? (profile == "high444" ? nil : "high422")
                : pixelFormat.bitDepth > 8 ? (["high422", "high444"].contains(profile) ? nil : "high10") : nil
            if let needs, needs != profile {
                throw fail("profile \(profile) cannot carry \(pixelFormat); use \(needs)")
            }
            if profile == "baseline" {
                if let bFrames, bFrames > 0 { throw fail("profile baseline has no B-frames; use --bframes 0 or profile main") }
                if entropy == .cabac { throw fail("profile baseline has no CABAC; use CAVLC or profile main") }
            }
            if profile == "baseline" || profile == "main", case .constantQuantizer(0) = rateControl { throw fail("lossless (QP 0) needs profile high444") }
        }
        if let level {
            guard let limits = Self.levelLimits.first(where: { $0.name == level || $0.name + ".0" == level }) else {
                throw fail("level \(level): expected one of \(Self.levelLimits.map(\.name).joined(separator: ", "))")
            }
            let macroblocks = ((width + 15) / 16) * ((height + 15) / 16)
            let perSecond = Double(macroblocks) * Double(frameRate.numerator) / Double(frameRate.denominator)
            let fitting = Self.levelLimits.first { $0.idc != 9 && $0.maxFrameSize >= macroblocks && Double($0.maxMacroblockRate) >= perSecond }
            let advice = fitting.map { "use level \($0.name) or higher, or leave the level out" } ?? "no level allows it"
            guard macroblocks <= limits.maxFrameSize else {
                throw fail("level \(level) allows frames of \(limits.maxFrameSize) macroblocks; \(width)x\(height) has \(macroblocks): \(advice)")
            }
            guard perSecond <= Double(limits.maxMacroblockRate) else {
                throw fail("level \(level) allows \(limits.maxMacroblockRate) macroblocks per second; \(width)x\(height) at \(frameRate) fps needs \(Int(perSecond)): \(advice)")
            }
        }
    }
}
