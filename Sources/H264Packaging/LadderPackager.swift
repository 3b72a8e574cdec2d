import H264Bitstream
import H264Codec
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import SampleFlow
import SystemIO

/// Packages an input as a ladder of renditions for HLS (and DASH): `h264kit package --ladder`
/// as one call. Each height is encoded by a `Transcoder` (x264, the preset given, a bit rate
/// from Apple's HLS authoring table with a VBV cap) with a keyframe at every segment boundary
/// and none between (keyint = min-keyint, no scene cuts), so that the renditions' segments
/// align; then each is packaged as ``HLSPackager`` packages one input, and one multivariant
/// playlist lists them all. The encoded renditions are written to temporary movies beside the
/// output and removed as they are packaged.
public struct LadderPackager: Sendable {
    /// How to encode and package.
    public struct Options: Sendable {
        /// Segments, DASH, the input's reading.
        public var packaging: HLSPackager.Options
        /// The renditions' heights (their widths keep the input's aspect, even).
        public var heights: [Int]
        /// The x264 preset.
        public var preset: String
        /// Bit rates (kbit/s) by height; a height not listed gets Apple's table's nearest.
        public var bitRates: [Int: Int]

        /// Options for `heights` at `preset`, Apple's bit rates.
        public init(packaging: HLSPackager.Options = .init(), heights: [Int], preset: String = "veryfast", bitRates: [Int: Int] = [:]) {
            self.packaging = packaging
            self.heights = heights
            self.preset = preset
            self.bitRates = bitRates
        }
    }

    /// How far a ladder has come.
    public struct Progress: Sendable, Hashable {
        /// The rendition being encoded ("720p").
        public var rendition: String
        /// Its frames encoded so far.
        public var frames: Int
    }

    /// Apple's HLS authoring bit rates (kbit/s) for 30 fps H.264, by height.
    public static let appleBitRates: [Int: Int] = [2160: 16_800, 1440: 11_600, 1080: 7_800, 720: 4_500, 540: 2_000, 480: 1_100, 360: 730, 240: 365]

    /// How to encode and package.
    public var options: Options

    /// A packager with `options`.
    public init(options: Options) { self.options = options }

    /// Encodes and packages the input at `path` with the multivariant playlist at `output`.
    /// Cancelling the calling task stops it, whichever rendition it is at, removes what it wrote
    /// and throws `StreamingError.source(.cancelled)`.
    public func run(path: String, to output: String, progress: (Progress) -> Void = { _ in }) throws(StreamingError) -> HLSPackager.Summary {
        let packaging = options.packaging
        try HLSPackager.checkOutput(output, dash: packaging.dashManifest, format: packaging.segmenter.format)
        guard !options.heights.isEmpty else { throw .invalidOption("a ladder of no rendition") }
        // The input's size and rate, from its first sample.
        let first: SampleBuffer
        let rate: FrameRate
        do throws(SampleFlowError) {
            let source = try MediaSource(path: path, options: packaging.source)
            guard let sample = try source.next() else { throw .noSamples(input: source.name, reason: "no samples to encode") }
            first = sample
            rate = source.frameRate ?? sample.videoFormatDescription?.sps.frameRate ?? .assumedWithoutTiming
        } catch {
            throw .source(error)
        }
        let format = try first.requireVideo(input: path)
        let files = WrittenFiles()
        var renditions: [HLSPackager.Rendition] = []
        do throws(StreamingError) {
            try files.makeDirectory(for: output)
            for height in options.heights.sorted(by: >) {
                let name = "\(height)p"
                // The input's aspect, to an even width (as ffmpeg's scale=-2).
                let width = max(2, Int((Double(format.width) * Double(height) / Double(max(format.height, 1)) / 2).rounded()) * 2)
                let keyint = max(1, Int((packaging.segmenter.segmentDuration.seconds * rate.framesPerSecond).rounded()))
                let kbps = options.bitRates[height] ?? Self.appleBitRates.min { abs($0.key - height) < abs($1.key - height) }!.value
                var settings = EncoderSettings(width: width, height: height, frameRate: rate, preset: options.preset, rateControl: .averageBitRate(kbps))
                settings.maximumBitRate = kbps * 3 / 2
                settings.bufferSize = kbps * 2
                settings.maximumKeyframeInterval = keyint
                settings.extraOptions = ["min-keyint": String(keyint), "scenecut": "0"]
                let encoded = HLSPackager.sibling(output, name, ".encoding.mp4")
                defer { removeFile(encoded) }
                do {
                    var transcoding = Transcoder.Options(encoder: settings, size: (width, height), source: .decoding)
                    transcoding.audio = .none  // a rendition is the picture (sound: a later rendition group)
                    _ = try Transcoder(options: transcoding).run(path: path, into: .movie(path: encoded, options: .init())) { state in
                        progress(Progress(rendition: name, frames: state.frames))
                    }
                } catch {
                    throw .rendition(name, underlying: error)
                }
                let source: MediaSource
                do { source = try MediaSource(path: encoded, options: .init(editList: .shift)) } catch { throw .source(error) }
                guard let rendition = try HLSPackager.package(source, as: name, beside: output, options: packaging.segmenter, files: files).rendition else {
                    throw .rendition(name, underlying: StreamingError.source(.noSamples(input: encoded, reason: "no pictures encoded")))
                }
                renditions.append(rendition)
            }
            if Task.isCancelled { throw .source(.cancelled) }
            let others = (try? MediaSource.otherTracks(path: path)) ?? []
            let warnings = others.map { "track \($0.id) (\($0.mediaType), \($0.format.codecName)\($0.language.map { ", \($0)" } ?? "")): left out: a ladder carries the video alone so far" }
            return try HLSPackager.finish(renditions, playlist: output, dash: packaging.dashManifest, warnings: warnings, files: files)
        } catch {
            files.removeAll()
            // Stopped by the caller, in whichever rendition's encode or packaging.
            if Task.isCancelled { throw .source(.cancelled) }
            throw error
        }
    }
}
