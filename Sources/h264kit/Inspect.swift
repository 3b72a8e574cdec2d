import ArgumentParser
import FoundationEssentials
import H264Bitstream
import MediaCore

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise an H.264 Annex-B elementary stream, or the tracks of an MP4/MOV file.",
        discussion: """
            Reads a raw H.264 stream (.264/.h264/.jsv/...) or standard input ("-") and prints its profile, \
            level, size, pixel format, frame rate and counts. Problems are reported with their byte offset; \
            the exit code is non-zero when any NAL unit could not be parsed.
            """
    )

    @Argument(help: "The stream to read, or - for standard input.")
    var file: String

    @Flag(help: "Print one JSON object instead of the summary.")
    var json = false

    @Flag(help: "List every NAL unit: offset, size, type, nal_ref_idc, and for slices the slice type, frame_num and POC.")
    var nals = false

    @Flag(help: "List every access unit as a sample: PTS, DTS, duration (fractions and seconds), size and sync flag.")
    var samples = false

    @Option(help: ArgumentHelp("Frame rate for --samples when the stream has no VUI timing, as an exact fraction (30000/1001, 25).", valueName: "rate"))
    var fps: String?

    func validate() throws {
        if nals && samples { throw ValidationError("--nals and --samples cannot be combined") }
        if let fps, FrameRate(parsing: fps) == nil { throw ValidationError("--fps \(fps): expected a rate such as 25, 30000/1001 or 29.97") }
        if fps != nil && !samples { throw ValidationError("--fps applies to --samples") }
    }

    mutating func run() throws {
        if file != "-" && !nals && !samples, try inspectMovie(file) { return }
        var parser = H264StreamParser()
        var nalRecords: [NALRecord] = []
        let printNALsLive = nals && !json
        if printNALsLive { print("offset\tsize\ttype\tref_idc\tslice\tframe_num\tpoc") }

        func handle(_ parsed: ParsedNALUnit) {
            guard nals else { return }
            let record = NALRecord(parsed)
            if printNALsLive { print(record.line) } else { nalRecords.append(record) }
        }

        // With --samples the NAL units go through the sample builder, which owns the parser.
        let givenRate = fps.flatMap(FrameRate.init(parsing:))
        var builder = samples ? SampleBufferBuilder(frameRate: .stream(fallback: givenRate ?? Inspect.assumedFrameRate)) : nil
        var sampleRecords: [SampleRecord] = []
        var builderError: BitstreamError?
        let printSamplesLive = samples && !json
        if printSamplesLive { print(SampleRecord.header) }
        func consume(_ bytes: Span<UInt8>, at location: AnnexBNALUnit) {
            guard builder != nil else { handle(parser.consume(bytes, at: location)); return }
            guard builderError == nil else { return }
            do { try builder!.append(nalUnit: bytes, at: location) } catch { builderError = error; return }
            drainSamples()
        }
        func drainSamples() {
            while let sample = builder!.nextSample() {
                let record = SampleRecord(index: sampleRecords.count, sample: sample)
                if printSamplesLive { print(record.line) }
                sampleRecords.append(record)
            }
        }

        var totalBytes = 0
        var garbage = 0
        if file == "-" {
            var splitter = AnnexBStreamSplitter()
            try readChunks(fd: 0, name: "stdin") { chunk in
                totalBytes += chunk.count
                splitter.append(chunk) { location, bytes in
                    consume(bytes.bindMemory(to: UInt8.self).span, at: location)
                }
                if splitter.isOverLimit {
                    throw ToolError("stdin: byte \(splitter.currentNALUnitOffset): NAL unit larger than \(splitter.maximumNALUnitSize) bytes; is this an H.264 stream?")
                }
            }
            splitter.finish { location, bytes in
                consume(bytes.bindMemory(to: UInt8.self).span, at: location)
            }
            garbage = splitter.leadingGarbageCount
            if totalBytes == 0 { throw ToolError("stdin: no data") }
        } else {
            let mapped = try MappedFile(path: file)
            totalBytes = mapped.bytes.count
            garbage = AnnexB.leadingGarbageCount(in: mapped.bytes)
            let base = mapped.bytes.bindMemory(to: UInt8.self)
            let consume = { (location: AnnexBNALUnit) in
                let nal = UnsafeBufferPointer(rebasing: base[location.payload])
                consume(nal.span, at: location)
            }
            // Large files: a second thread searches ahead while this one parses.
            var scannedAhead = false
            if totalBytes >= 16 << 20 && ProcessInfo.processInfo.activeProcessorCount > 1 {
                scannedAhead = forEachNALUnitScanningAhead(in: mapped.bytes, consume)
            }
            if !scannedAhead { AnnexB.forEachNALUnit(in: mapped.bytes, consume) }
        }
        if builder != nil {
            if builderError == nil {
                do { try builder!.finish() } catch { builderError = error }
                drainSamples()
            }
            parser = builder!.parser
            if let builderError { throw ToolError("\(file): \(builderError)") }
            if !builder!.frameRateIsFromStream && givenRate == nil && builder!.sampleCount > 0 {
                printError("\(file): warning: the stream has no VUI timing; timestamps assume \(Inspect.assumedFrameRate) fps (set the rate with --fps, e.g. --fps 30000/1001)")
            }
        } else {
            parser.finish()
        }

        if garbage > 0 && parser.nalUnitCount > 0 {
            parser.reportExternal(.warning, BitstreamError(.invalidStructure, "\(garbage) bytes before the first start code were skipped", byteOffset: 0))
        }
        if parser.nalUnitCount == 0 {
            throw ToolError("\(file): no H.264 start code found in \(totalBytes) bytes; not an Annex-B H.264 stream")
        }

        var summary = StreamSummary(parser: parser, bytes: totalBytes, nalUnits: nals ? nalRecords : nil)
        if samples {
            summary.samples = sampleRecords
            summary.sampleFrameRate = builder?.frameRate?.description
        }
        if json {
            try printJSON(summary)
        } else if !samples {
            print(summary.humanReadable(name: file))
        }
        for diagnostic in parser.diagnostics {
            printError("\(file): \(diagnostic)")
        }
        if parser.diagnostics.count < parser.errorCount + parser.warningCount {
            printError("\(file): \(parser.errorCount + parser.warningCount - parser.diagnostics.count) more problems not shown")
        }
        if parser.errorCount > 0 {
            printError("\(file): \(parser.errorCount) NAL unit(s) could not be parsed; the summary covers the rest")
            throw ExitCode(1)
        }
        if parser.pictureCount == 0 {
            printError("\(file): no decodable picture (no slice with its SPS and PPS)")
            throw ExitCode(1)
        }
    }
}

extension Inspect {
    /// The rate assumed, with a warning, when a stream has no timing and no --fps was given.
    static let assumedFrameRate = FrameRate(25, 1)
}

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
    var text: String { "\(value)/\(timescale) (\(fixed6(seconds)))" }
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

    init(index: Int, sample: SampleBuffer) {
        self.index = index
        pts = TimeRecord(sample.presentationTime)
        dts = TimeRecord(sample.decodeTime)
        duration = TimeRecord(sample.duration)
        size = sample.size
        sync = sample.isSync
        dependsOnOthers = sample.attachments.dependsOnOthers
        isDependedOnByOthers = sample.attachments.isDependedOnByOthers
    }

    static let header = "sample\tpts\tdts\tduration\tsize\tsync"
    var line: String { "\(index)\t\(pts.text)\t\(dts.text)\t\(duration.text)\t\(size)\t\(sync ? "sync" : "-")" }
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

/// What `inspect --json` prints.
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
    /// The SPS in force, each time it changed: the top-level fields describe the last.
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
        let sps = parser.firstPictureSPS
        if let sps {
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
        if let frameRate = frameRate.value {
            let parts = frameRate.split(separator: "/").compactMap { Double($0) }
            row("frame rate", parts.count == 2 ? "\(frameRate) (\(fixed3(parts[0] / parts[1])) fps)" : frameRate)
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
        let nalText = nalCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        row("NAL units", "\(nalUnitCount): \(nalText)")
        if !seiCounts.isEmpty {
            row("SEI", seiCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if errors + warnings > 0 { row("problems", "\(errors) errors, \(warnings) warnings (listed on stderr)") }
        return lines.joined(separator: "\n")
    }
}

/// A number with six decimals ("-0.066733"), without Foundation's formatter.
func fixed6(_ value: Double) -> String {
    let millionths = Int((abs(value) * 1_000_000).rounded())
    let fraction = String(millionths % 1_000_000)
    return (value < 0 && millionths > 0 ? "-" : "") + "\(millionths / 1_000_000)." + String(repeating: "0", count: 6 - fraction.count) + fraction
}

/// A number with three decimals ("29.970"), without Foundation's formatter.
func fixed3(_ value: Double) -> String {
    let thousandths = Int((value * 1000).rounded())
    let fraction = String(thousandths % 1000)
    return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}
