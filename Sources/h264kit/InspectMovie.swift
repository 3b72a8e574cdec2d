import FoundationEssentials
import H264Bitstream
import H264Container
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

/// What `inspect` prints for an MP4/MOV file.
struct MovieSummary: Codable {
    struct TrackSummary: Codable {
        var id: UInt32
        var handler: String
        var codec: String
        var codecString: String?
        var width: Int?
        var height: Int?
        var profile: String?
        var level: Int?
        var pixelFormat: String?
        var sampleCount: Int
        var syncSampleCount: Int
        var sampleDescriptionCount: Int
        var timescale: Int32
        /// Sum of sample durations, in seconds.
        var duration: Double
        var frameRate: String?
        var fragmented: Bool
        var bytes: UInt64
        /// Timecode tracks: the format and the first sample's timecode.
        var timecode: TimecodeSummary?
    }
    struct TimecodeSummary: Codable {
        var start: String?
        var format: String
        var frameRate: String
        var frameQuanta: Int
        var dropFrame: Bool
        var flags: UInt32
        var reel: String?
    }
    struct MetadataSummary: Codable {
        var space: String
        var key: String
        var type: String
        var value: String
    }
    var format: String
    var majorBrand: String?
    var compatibleBrands: [String]
    var bytes: Int
    var topLevelBoxes: [String]
    var tracks: [TrackSummary]
    var metadata: [MetadataSummary]
    var warnings: [String]

    init(_ reader: MovieReader) {
        let mov = reader.majorBrand == "qt  "
        format = mov ? "mov" : "mp4"
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
        var timecodes: [UInt32: TimecodeSummary] = [:]
        for index in reader.tracks.indices {
            guard let info = try? reader.timecodeTrack(index) else { continue }
            let format = info.format
            timecodes[info.trackID] = TimecodeSummary(
                start: (try? info.startTimecode())??.description, format: format.sampleFormat.fourCC.description,
                frameRate: "\(format.frameDuration.timescale)/\(format.frameDuration.value)", frameQuanta: format.frameQuanta,
                dropFrame: format.isDropFrame, flags: format.flags.rawValue, reel: format.sourceReference?.name)
        }
        tracks = reader.tracks.map { track in
            var first: VideoFormatDescription?
            var codec = "none"
            if let description = track.descriptions.first {
                switch description {
                case .h264(let format): first = format; codec = format.codec.description
                case .timecode(let format): codec = format.sampleFormat.fourCC.description
                case .other(let type): codec = type.description
                }
            }
            let duration = track.sampleDuration
            var rate: String?
            if duration > 0, !track.samples.isEmpty {
                let reduced = FrameRate(UInt64(track.samples.count) * UInt64(track.timescale), UInt64(duration))
                rate = reduced.description
            }
            return TrackSummary(
                id: track.id, handler: track.handlerType.description, codec: codec, codecString: first?.codecString,
                width: first?.width ?? (track.width > 0 ? Int(track.width) : nil), height: first?.height ?? (track.height > 0 ? Int(track.height) : nil),
                profile: first?.sps.profileName, level: first.map { Int($0.levelIdc) }, pixelFormat: first?.sps.pixelFormatName,
                sampleCount: track.samples.count, syncSampleCount: track.samples.reduce(0) { $0 + ($1.isSync ? 1 : 0) },
                sampleDescriptionCount: track.descriptions.count, timescale: track.timescale,
                duration: Double(duration) / Double(track.timescale), frameRate: rate, fragmented: track.isFragmented,
                bytes: track.samples.reduce(0) { $0 + UInt64($1.size) }, timecode: timecodes[track.id])
        }
    }

    func humanReadable(name: String) -> String {
        var lines = ["\(name): \(format == "mov" ? "QuickTime MOV" : "MP4") file, \(bytes) bytes, brand \(majorBrand ?? "none") (\(compatibleBrands.joined(separator: ", ")))"]
        lines.append("  boxes         \(topLevelBoxes.joined(separator: " "))")
        for track in tracks {
            var line = "  track \(track.id)       \(track.handler) \(track.codec)"
            if let codecString = track.codecString { line += " (\(codecString))" }
            if let width = track.width, let height = track.height { line += " \(width)x\(height)" }
            if let profile = track.profile, let level = track.level { line += " \(profile) \(level / 10).\(level % 10)" }
            if let pixelFormat = track.pixelFormat { line += " \(pixelFormat)" }
            lines.append(line)
            var detail = "                \(track.sampleCount) samples (\(track.syncSampleCount) sync), \(fixed3(track.duration)) s"
            if let rate = track.frameRate, track.handler == "vide" { detail += ", \(rate) fps" }
            if track.sampleDescriptionCount > 1 { detail += ", \(track.sampleDescriptionCount) sample descriptions" }
            if track.fragmented { detail += ", fragmented" }
            lines.append(detail)
            if let timecode = track.timecode {
                var line = "                timecode \(timecode.start ?? "none") (\(timecode.frameRate) fps, \(timecode.frameQuanta) frames/s\(timecode.dropFrame ? ", drop-frame" : ""))"
                if let reel = timecode.reel { line += ", reel \"\(reel)\"" }
                lines.append(line)
            }
        }
        for item in metadata {
            lines.append("  metadata      \(item.space) \(item.key) (\(item.type)): \(item.value)")
        }
        return lines.joined(separator: "\n")
    }
}

extension Inspect {
    /// Inspects an MP4/MOV file; returns false when `file` is not one.
    func inspectMovie(_ path: String) throws -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        var header = [UInt8](repeating: 0, count: 8)
        let n = header.withUnsafeMutableBytes { read(fd, $0.baseAddress, 8) }
        close(fd)
        guard n == 8, header.withUnsafeBytes({ MovieReader.looksLikeMovie($0) }) else { return false }
        let reader: MovieReader
        do { reader = try MovieReader(path: path) } catch { throw ToolError("\(error)") }
        let summary = MovieSummary(reader)
        if json {
            try printJSON(summary)
        } else {
            print(summary.humanReadable(name: path))
        }
        for warning in reader.warnings { printError("\(path): warning: \(warning)") }
        return true
    }
}
