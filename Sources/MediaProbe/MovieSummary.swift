public import ISOBMFF
import MPEGTS
import H264Bitstream
import MediaCore

/// What an MP4 or MOV file holds: brands, top-level boxes, tracks (codec, size, samples,
/// duration, rate, rotation, timecode), metadata. `h264kit inspect FILE.mp4` prints it (as
/// JSON with `--json`).
public struct MovieSummary: Codable, Hashable, Sendable {
    /// One track.
    public struct TrackSummary: Codable, Hashable, Sendable {
        /// track_ID.
        public var id: UInt32
        /// The handler type ("vide", "tmcd", ...).
        public var handler: String
        /// The first sample entry's type ("avc1", "tmcd", ...), or "none".
        public var codec: String
        /// The RFC 6381 codec string ("avc1.64001F"), for H.264.
        public var codecString: String?
        /// The picture width.
        public var width: Int?
        /// The picture height.
        public var height: Int?
        /// The H.264 profile's name.
        public var profile: String?
        /// The H.264 level_idc.
        public var level: Int?
        /// The pixel format's FFmpeg name.
        public var pixelFormat: String?
        /// Samples.
        public var sampleCount: Int
        /// Sync samples.
        public var syncSampleCount: Int
        /// Sample descriptions.
        public var sampleDescriptionCount: Int
        /// The media timescale.
        public var timescale: Int32
        /// Sum of sample durations, in seconds.
        public var duration: Double
        /// The average frame rate ("30000/1001").
        public var frameRate: String?
        /// The display rotation in degrees, when not 0.
        public var rotation: Int?
        /// Whether the samples are in movie fragments.
        public var fragmented: Bool
        /// The samples' bytes.
        public var bytes: UInt64
        /// Timecode tracks: the format and the first sample's timecode.
        public var timecode: TimecodeSummary?
        /// The kind of media ("video", "audio", "timecode", ...).
        public var mediaType: String = ""
        /// The codec's name ("H.264", "AAC", "Opus", "AC-3").
        public var codecName: String?
        /// Audio: samples per second.
        public var sampleRate: Int?
        /// Audio: channels.
        public var channels: Int?
        /// The language (ISO 639-2/T), when the track has one.
        public var language: String?
        /// Audio: the encoder's priming the edit list (or `iTunSMPB`) leaves out, samples.
        public var priming: Int?
        /// Whether the track is enabled (`tkhd`): an alternative track is not.
        public var enabled: Bool = true
    }

    /// A timecode track's format and start.
    public struct TimecodeSummary: Codable, Hashable, Sendable {
        /// The first sample's timecode.
        public var start: String?
        /// "tmcd" or "tc64".
        public var format: String
        /// The rate ("30000/1001").
        public var frameRate: String
        /// Frames counted a second (30 for 29.97).
        public var frameQuanta: Int
        /// Drop-frame counting.
        public var dropFrame: Bool
        /// The format's flags.
        public var flags: UInt32
        /// The source reel's name.
        public var reel: String?
    }

    /// One metadata item.
    public struct MetadataSummary: Codable, Hashable, Sendable {
        /// Where the key lives ("mdta", "udta").
        public var space: String
        /// The key.
        public var key: String
        /// The value's type ("utf8", "int", "data", ...).
        public var type: String
        /// The value as text.
        public var value: String
    }

    /// "mov" or "mp4".
    public var format: String
    /// The ftyp major brand.
    public var majorBrand: String?
    /// The ftyp compatible brands.
    public var compatibleBrands: [String]
    /// The file's size in bytes.
    public var bytes: Int
    /// The top-level box types, in order.
    public var topLevelBoxes: [String]
    /// Every track.
    public var tracks: [TrackSummary]
    /// The movie's metadata items.
    public var metadata: [MetadataSummary]
    /// What the reader found wrong but read past.
    public var warnings: [String]

    /// The summary of the movie `reader` has opened.
    public init(_ reader: MovieReader) {
        format = reader.majorBrand == "qt  " ? "mov" : "mp4"
        majorBrand = reader.majorBrand?.description
        compatibleBrands = reader.compatibleBrands.map(\.description)
        bytes = reader.fileSize
        topLevelBoxes = reader.topLevelBoxes.map(\.type.description)
        warnings = reader.warnings
        metadata = reader.metadata.map { item in
            let type = switch item.value {
            case .utf8: "utf8"
            case .signed: "int"
            case .unsigned: "uint"
            case .float32: "float32"
            case .float64: "float64"
            case .data: "data"
            case .typed(let code, _): "type \(code)"
            }
            return MetadataSummary(space: item.key.space, key: item.key.name, type: type, value: item.value.description)
        }
        tracks = reader.tracks.indices.map { index in
            let track = reader.tracks[index]
            let first = track.formatDescriptions.first
            var codec = "none"
            var codecString = first?.codecString
            switch track.descriptions.first {
            case .h264(let format)?: codec = format.codec.description
            case .audio(let format)?:
                codec = format.codec.description
                codecString = format.codecString
            case .timecode(let format)?: codec = format.sampleFormat.fourCC.description
            case .other(let type)?: codec = type.description
            case nil: break
            }
            let format = track.format(at: 0)
            let audio = format?.audio
            var priming: Int?
            if track.mediaType == .audio {
                let edit = track.edits.first { $0.mediaTime >= 0 }?.mediaTime ?? track.encoderDelay.map(Int64.init)
                priming = edit.map { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
            }
            var timecode: TimecodeSummary?
            if let info = try? reader.timecodeTrack(index) {
                let format = info.format
                timecode = TimecodeSummary(
                    start: (try? info.startTimecode())??.description, format: format.sampleFormat.fourCC.description,
                    frameRate: "\(format.frameDuration.timescale)/\(format.frameDuration.value)", frameQuanta: format.frameQuanta,
                    dropFrame: format.isDropFrame, flags: format.flags.rawValue, reel: format.sourceReference?.name)
            }
            return TrackSummary(
                id: track.id, handler: track.handlerType.description, codec: codec, codecString: codecString,
                width: first?.width ?? (track.width > 0 ? Int(track.width) : nil), height: first?.height ?? (track.height > 0 ? Int(track.height) : nil),
                profile: first?.sps.profileName, level: first.map { Int($0.levelIdc) }, pixelFormat: first?.sps.pixelFormatName,
                sampleCount: track.samples.count, syncSampleCount: track.samples.reduce(0) { $0 + ($1.isSync ? 1 : 0) },
                sampleDescriptionCount: track.descriptions.count, timescale: track.timescale,
                duration: Double(track.sampleDuration) / Double(track.timescale), frameRate: track.nominalFrameRate?.description,
                rotation: track.matrix.rotation.flatMap { $0 == 0 ? nil : $0 }, fragmented: track.isFragmented,
                bytes: track.samples.reduce(0) { $0 + UInt64($1.size) }, timecode: timecode, mediaType: track.mediaType.description,
                codecName: format?.codecName, sampleRate: audio?.sampleRate ?? format?.opaque?.sampleRate,
                channels: audio?.channelCount ?? format?.opaque?.channelCount, language: track.language, priming: priming,
                enabled: track.headerFlags & TrackHeaderBox.enabled != 0)
        }
    }

    /// The summary as text, for the file called `name`.
    public func text(name: String) -> String {
        var lines = ["\(name): \(format == "mov" ? "QuickTime MOV" : "MP4") file, \(bytes) bytes, brand \(majorBrand ?? "none") (\(compatibleBrands.joined(separator: ", ")))"]
        lines.append("  boxes         \(topLevelBoxes.joined(separator: " "))")
        for track in tracks {
            var line = "  track \(track.id)       \(track.handler) \(track.codec)"
            if let codecString = track.codecString { line += " (\(codecString))" }
            if let width = track.width, let height = track.height { line += " \(width)x\(height)" }
            if let profile = track.profile, let level = track.level { line += " \(profile) \(level / 10).\(level % 10)" }
            if let pixelFormat = track.pixelFormat { line += " \(pixelFormat)" }
            lines.append(line)
            if let rate = track.sampleRate, track.mediaType == "audio" {
                line += " \(track.codecName ?? track.codec) \(rate) Hz \(track.channels.map { "\($0) channel\($0 == 1 ? "" : "s")" } ?? "")"
            } else if track.codecString == nil, let name = track.codecName, name != track.codec {
                line += " \(name)"
            }
            if let language = track.language { line += " [\(language)]" }
            if !track.enabled { line += " (not enabled: an alternative)" }
            lines[lines.count - 1] = line
            var detail = "                \(track.sampleCount) samples (\(track.syncSampleCount) sync), \(decimalText(track.duration, 3)) s"
            if let rate = track.frameRate, track.handler == "vide" { detail += ", \(rate) fps" }
            if let rotation = track.rotation { detail += ", rotated \(rotation)°" }
            if track.sampleDescriptionCount > 1 { detail += ", \(track.sampleDescriptionCount) sample descriptions" }
            if track.fragmented { detail += ", fragmented" }
            if let priming = track.priming { detail += ", priming \(priming) samples" }
            lines.append(detail)
            if let timecode = track.timecode {
                var line = "                timecode \(timecode.start ?? "none") (\(timecode.frameRate) fps, \(timecode.frameQuanta) frames/s\(timecode.dropFrame ? ", drop-frame" : ""))"
                if let reel = timecode.reel { line += ", reel \"\(reel)\"" }
                lines.append(line)
            }
        }
        for item in metadata { lines.append("  metadata      \(item.space) \(item.key) (\(item.type)): \(item.value)") }
        return lines.joined(separator: "\n")
    }
}
