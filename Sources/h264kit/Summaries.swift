import H264Kit

// What `inspect` prints, as JSON and as text: the presentation of what the libraries report.

/// A media time in JSON: the exact fraction and its seconds.
struct TimeRecord: Codable {
    var value: Int64
    var timescale: Int32
    var seconds: Double
    init(_ time: MediaTime) {
        value = time.value
        timescale = time.timescale
        seconds = time.seconds
    }
    var text: String { "\(value)/\(timescale) (\(fixed(seconds, 6)))" }
}

/// One sample of `--samples`.
struct SampleRecord: Codable {
    var index: Int
    var pts: TimeRecord
    var dts: TimeRecord
    var duration: TimeRecord
    var size: Int
    var sync: Bool
    var dependsOnOthers: Bool?
    var isDependedOnByOthers: Bool?
    /// Outside a movie's edit list: decoded, not shown.
    var hidden: Bool?

    init(index: Int, sample: SampleBuffer) {
        self.index = index
        pts = TimeRecord(sample.presentationTime)
        dts = TimeRecord(sample.decodeTime)
        duration = TimeRecord(sample.duration)
        size = sample.size
        sync = sample.isSync
        dependsOnOthers = sample.attachments.dependsOnOthers
        isDependedOnByOthers = sample.attachments.isDependedOnByOthers
        hidden = sample.attachments.doNotDisplay ? true : nil
    }

    static let header = "sample\tpts\tdts\tduration\tsize\tsync"
    var line: String { "\(index)\t\(pts.text)\t\(dts.text)\t\(duration.text)\t\(size)\t\(sync ? "sync" : "-")" + (hidden == true ? "\thidden" : "") }
}

/// One line of `--nals`.
struct NALRecord: Codable {
    var offset: Int
    var size: Int
    var type: Int
    var typeName: String
    var nalRefIdc: Int
    var sliceType: String?
    var frameNum: Int?
    var poc: Int?
    var accessUnit: Int

    init(_ parsed: ParsedNALUnit) {
        offset = parsed.location.startCodeOffset
        size = parsed.size
        type = Int(parsed.header.nalUnitType.rawValue)
        typeName = parsed.header.nalUnitType.name
        nalRefIdc = Int(parsed.header.nalRefIdc)
        sliceType = parsed.slice.map { "\($0.sliceType)" }
        frameNum = parsed.slice?.frameNum
        poc = parsed.picOrderCnt
        accessUnit = parsed.accessUnitIndex
    }

    var line: String {
        "\(offset)\t\(size)\t\(typeName)\t\(nalRefIdc)\t\(sliceType ?? "-")\t\(frameNum.map(String.init) ?? "-")\t\(poc.map(String.init) ?? "-")"
    }
}

struct SPSSummary: Codable {
    var firstPicture: Int
    var seqParameterSetId: Int
    var profile: String
    var level: Int
    var width: Int
    var height: Int
    var pixelFormat: String
    var frameRate: String?
}

/// An optional that JSON shows as `null` rather than leaving the key out.
struct Nullable<Value: Codable>: Codable {
    var value: Value?
    init(_ value: Value?) { self.value = value }
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        value = container.decodeNil() ? nil : try container.decode(Value.self)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}

/// What `inspect --json` prints for an Annex-B stream.
struct StreamSummary: Codable {
    var format = "h264"
    var bytes: Int
    var profile: Nullable<String> = Nullable(nil)
    var profileIdc: Int?
    var constraintSetFlags: Int?
    var level: Nullable<Int> = Nullable(nil)
    var width: Nullable<Int> = Nullable(nil)
    var height: Nullable<Int> = Nullable(nil)
    var codedWidth: Int?
    var codedHeight: Int?
    var pixelFormat: Nullable<String> = Nullable(nil)
    var chromaFormatIdc: Int?
    var bitDepthLuma: Int?
    var bitDepthChroma: Int?
    var sampleAspectRatio: String?
    var frameRate: Nullable<String> = Nullable(nil)
    var interlaced: Nullable<Bool> = Nullable(nil)
    var picOrderCntType: Int?
    /// Pictures a decoder outputs (from the first IDR or recovery point on), as ffprobe counts.
    var frameCount: Int
    /// Every picture in the stream, field pairs counted once.
    var pictureCount: Int
    /// The SPS in force, each time it changed: the top-level fields describe the first.
    var sequenceParameterSets: [SPSSummary]
    var accessUnitCount: Int
    var idrCount: Int
    var fieldPairCount: Int
    var distinctSPSCount: Int
    var nalUnitCount: Int
    var nalCounts: [String: Int]
    var seiCounts: [String: Int]
    var errors: Int
    var warnings: Int
    var diagnostics: [String]
    var nalUnits: [NALRecord]?
    /// With `--samples`: one entry per sample in decoding order, and the frame rate timing used.
    var samples: [SampleRecord]?
    var sampleFrameRate: String?

    init(parser: H264StreamParser, bytes: Int, nalUnits: [NALRecord]?) {
        self.bytes = bytes
        if let sps = parser.firstPictureSPS {
            profile = Nullable(sps.profileName)
            profileIdc = Int(sps.profileIdc)
            constraintSetFlags = Int(sps.constraintSetFlags)
            level = Nullable(Int(sps.levelIdc))
            width = Nullable(sps.width)
            height = Nullable(sps.height)
            codedWidth = sps.codedWidth
            codedHeight = sps.codedHeight
            pixelFormat = Nullable(sps.pixelFormatName)
            chromaFormatIdc = sps.chromaFormatIdc
            bitDepthLuma = sps.bitDepthLuma
            bitDepthChroma = sps.bitDepthChroma
            sampleAspectRatio = sps.vuiParameters?.sampleAspectRatio.map { "\($0.width):\($0.height)" }
            frameRate = Nullable(sps.frameRate?.description)
            interlaced = Nullable(sps.isInterlaced)
            picOrderCntType = sps.picOrderCntType
        }
        frameCount = parser.outputPictureCount
        pictureCount = parser.pictureCount
        sequenceParameterSets = parser.pictureSPSChanges.map { change in
            SPSSummary(firstPicture: change.firstPicture, seqParameterSetId: change.sps.seqParameterSetId, profile: change.sps.profileName,
                       level: Int(change.sps.levelIdc), width: change.sps.width, height: change.sps.height,
                       pixelFormat: change.sps.pixelFormatName, frameRate: change.sps.frameRate?.description)
        }
        accessUnitCount = parser.accessUnitCount
        idrCount = parser.pictures.reduce(0) { $0 + ($1.isIDR ? 1 : 0) }
        fieldPairCount = parser.pictures.reduce(0) { $0 + ($1.structure == .fieldPair ? 1 : 0) }
        distinctSPSCount = parser.distinctSPSCount
        nalUnitCount = parser.nalUnitCount
        nalCounts = Dictionary(uniqueKeysWithValues: parser.nalCounts.map { ($0.key.name, $0.value) })
        seiCounts = Dictionary(uniqueKeysWithValues: parser.seiCounts.map { (SEIMessage(payloadType: $0.key, payload: []).typeName, $0.value) })
        errors = parser.errorCount
        warnings = parser.warningCount
        diagnostics = parser.diagnostics.map(\.description)
        self.nalUnits = nalUnits
    }

    func humanReadable(name: String) -> String {
        var lines = ["\(name): H.264 Annex-B elementary stream, \(bytes) bytes"]
        func row(_ label: String, _ value: String) { lines.append("  " + label + String(repeating: " ", count: max(1, 14 - label.count)) + value) }
        if let profile = profile.value, let level = level.value, let profileIdc {
            row("profile", "\(profile) (profile_idc \(profileIdc)), level \(level / 10).\(level % 10)")
        }
        if let width = width.value, let height = height.value, let codedWidth, let codedHeight {
            var size = "\(width)x\(height)"
            if width != codedWidth || height != codedHeight { size += " (coded \(codedWidth)x\(codedHeight))" }
            if let sampleAspectRatio { size += ", SAR \(sampleAspectRatio)" }
            row("size", size)
        }
        if let pixelFormat = pixelFormat.value, let bitDepthLuma { row("pixel format", "\(pixelFormat) (\(bitDepthLuma)-bit)") }
        if let rate = frameRate.value.flatMap(FrameRate.init(parsing:)) {
            row("frame rate", "\(rate) (\(fixed(rate.framesPerSecond, 3)) fps)")
        } else if profile.value != nil {
            row("frame rate", "not signalled (no VUI timing)")
        }
        if let interlaced = interlaced.value { row("scan", interlaced ? "interlaced (field/MBAFF coding allowed)" : "progressive") }
        if let picOrderCntType { row("POC type", "\(picOrderCntType)") }
        var frames = "\(frameCount) decodable of \(pictureCount) (access units \(accessUnitCount), IDR \(idrCount)"
        if fieldPairCount > 0 { frames += ", field pairs \(fieldPairCount)" }
        row("frames", frames + ")")
        if sequenceParameterSets.count > 1 {
            for change in sequenceParameterSets {
                row("SPS change", "from picture \(change.firstPicture): \(change.profile) level \(change.level), \(change.width)x\(change.height) \(change.pixelFormat)")
            }
        }
        row("NAL units", "\(nalUnitCount): " + nalCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        if !seiCounts.isEmpty { row("SEI", seiCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")) }
        if errors + warnings > 0 { row("problems", "\(errors) errors, \(warnings) warnings (listed on stderr)") }
        return lines.joined(separator: "\n")
    }
}

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
        var rotation: Int?
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
            switch track.descriptions.first {
            case .h264(let format)?: codec = format.codec.description
            case .timecode(let format)?: codec = format.sampleFormat.fourCC.description
            case .other(let type)?: codec = type.description
            case nil: break
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
                id: track.id, handler: track.handlerType.description, codec: codec, codecString: first?.codecString,
                width: first?.width ?? (track.width > 0 ? Int(track.width) : nil), height: first?.height ?? (track.height > 0 ? Int(track.height) : nil),
                profile: first?.sps.profileName, level: first.map { Int($0.levelIdc) }, pixelFormat: first?.sps.pixelFormatName,
                sampleCount: track.samples.count, syncSampleCount: track.samples.reduce(0) { $0 + ($1.isSync ? 1 : 0) },
                sampleDescriptionCount: track.descriptions.count, timescale: track.timescale,
                duration: Double(track.sampleDuration) / Double(track.timescale), frameRate: track.nominalFrameRate?.description,
                rotation: track.matrix.rotation.flatMap { $0 == 0 ? nil : $0 }, fragmented: track.isFragmented,
                bytes: track.samples.reduce(0) { $0 + UInt64($1.size) }, timecode: timecode)
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
            var detail = "                \(track.sampleCount) samples (\(track.syncSampleCount) sync), \(fixed(track.duration, 3)) s"
            if let rate = track.frameRate, track.handler == "vide" { detail += ", \(rate) fps" }
            if let rotation = track.rotation { detail += ", rotated \(rotation)°" }
            if track.sampleDescriptionCount > 1 { detail += ", \(track.sampleDescriptionCount) sample descriptions" }
            if track.fragmented { detail += ", fragmented" }
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
