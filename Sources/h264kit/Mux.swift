import ArgumentParser
import FoundationEssentials
import H264Bitstream
import H264Container
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

struct Mux: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put an H.264 Annex-B elementary stream into an MP4 or MOV file.",
        discussion: """
            Each access unit becomes one sample with 4-byte NAL lengths; SPS and PPS move into the avc1 sample \
            entry (a new entry at each change; --avc3 keeps them in band). Timestamps come from the stream's VUI \
            timing, else from --fps; B-frames get composition offsets and an edit list so the first frame shows at 0. \
            The file is written under a temporary name and renamed when complete; on failure nothing is left behind.
            """
    )

    @Argument(help: "The Annex-B stream, or - for standard input.")
    var input: String

    @Argument(help: "The output: .mp4 or .mov (or - for a fragmented MP4 on standard output).")
    var output: String

    @Option(help: ArgumentHelp("Frame rate for a stream without VUI timing, as an exact fraction (30000/1001, 25).", valueName: "rate"))
    var fps: String?

    @Flag(help: "Put the index (moov) before the media, for progressive download.")
    var faststart = false

    @Option(help: ArgumentHelp("Write a fragmented MP4 with fragments of about this many seconds (crash-safe, streamable).", valueName: "seconds"))
    var fragmentDuration: String?

    @Flag(help: "Signed composition offsets (ctts version 1) instead of an edit-list shift.")
    var negativeCts = false

    @Flag(help: "avc3 sample entries: parameter sets stay in the samples.")
    var avc3 = false

    @Option(help: "Container format, when the output name does not say: mp4 or mov.")
    var format: String?

    @Option(help: ArgumentHelp("Add a timecode track starting at this timecode: HH:MM:SS:FF, or HH:MM:SS;FF for drop-frame (29.97, 59.94).", valueName: "timecode"))
    var timecode: String?

    @Option(help: "Timecode sample format: tmcd (32-bit, the default) or tc64 (64-bit).")
    var timecodeFormat: String = "tmcd"

    @Option(help: ArgumentHelp("The source reel (tape) name recorded with the timecode.", valueName: "name"))
    var reel: String?

    @Option(name: .customLong("meta"), help: ArgumentHelp("""
        Metadata item KEY=VALUE (repeatable). KEY: a reverse-DNS key (MOV only), a four-character udta key, or         title, comment, date, artist, encoder. VALUE: text, @FILE for raw data, or int:/uint:/float:/double:/hex: typed.
        """, valueName: "key=value"))
    var metadata: [String] = []

    func validate() throws {
        if let fps, FrameRate(parsing: fps) == nil { throw ValidationError("--fps \(fps): expected a rate such as 25, 30000/1001 or 29.97") }
        if let fragmentDuration {
            guard let seconds = FrameRate(parsing: fragmentDuration), seconds.numerator > 0 else {
                throw ValidationError("--fragment-duration \(fragmentDuration): expected a positive number of seconds")
            }
            if faststart { throw ValidationError("--faststart does not apply to a fragmented file (its moov is first already)") }
        }
        if let format, MovieFileType(rawValue: format) == nil { throw ValidationError("--format \(format): expected mp4 or mov") }
        if output == "-" && fragmentDuration == nil { throw ValidationError("writing to standard output needs --fragment-duration (a plain MP4 has to seek)") }
        if let timecode {
            do { _ = try Timecode(parsing: timecode) } catch { throw ValidationError("--timecode \(error)") }
            if fragmentDuration != nil { throw ValidationError("--timecode: a timecode track is not written in fragmented files yet; leave out --fragment-duration") }
        }
        guard ["tmcd", "tc64"].contains(timecodeFormat) else { throw ValidationError("--timecode-format \(timecodeFormat): expected tmcd or tc64") }
        if timecode == nil && reel != nil { throw ValidationError("--reel names the source of a --timecode; give --timecode too") }
        for item in metadata where !item.contains("=") { throw ValidationError("--meta \(item): expected KEY=VALUE") }
    }

    /// The --meta items, read (files for @PATH) and checked against the container.
    private func metadataItems(fileType: MovieFileType) throws -> [MetadataItem] {
        var items: [MetadataItem] = []
        for text in metadata {
            let equals = text.firstIndex(of: "=")!
            let valueText = String(text[text.index(after: equals)...])
            do {
                let key = try MetadataItem.Key(parsing: String(text[..<equals]))
                let value: MetadataItem.Value
                if valueText.hasPrefix("@") {
                    let file = try MappedFile(path: String(valueText.dropFirst()))
                    value = .data(Array(file.bytes))
                } else {
                    value = try MetadataItem.Value(parsing: valueText)
                }
                items.append(MetadataItem(key: key, value: value))
            } catch {
                throw ToolError("--meta \(text): \(error)")
            }
        }
        do { try MetadataItem.validate(items, for: fileType, path: output) } catch { throw ToolError("--meta: \(error)") }
        return items
    }

    /// The timecode track for `rate`, from --timecode, --timecode-format and --reel.
    private func timecodeTrack(rate: FrameRate) throws -> MovieWriter.TimecodeTrack? {
        guard let timecode, let value = try? Timecode(parsing: timecode) else { return nil }
        do {
            guard rate.numerator <= UInt64(Int32.max), rate.denominator <= UInt64(Int32.max) else { throw TimecodeError("the frame rate \(rate) is too precise for a timecode track") }
            let format = try TimecodeFormatDescription(
                frameRate: (Int32(rate.numerator), Int32(rate.denominator)), dropFrame: value.isDropFrame,
                sampleFormat: timecodeFormat == "tc64" ? .timeCode64 : .timeCode32,
                sourceReference: reel.map { .init(name: $0) })
            return try MovieWriter.TimecodeTrack(format: format, start: value)
        } catch {
            throw ToolError("--timecode \(timecode) at \(rate) fps: \(error)")
        }
    }

    mutating func run() throws {
        let givenRate = fps.flatMap(FrameRate.init(parsing:))
        var options = MovieWriter.Options(fileType: format.flatMap(MovieFileType.init(rawValue:)) ?? MovieFileType(path: output))
        options.faststart = faststart
        options.negativeCompositionOffsets = negativeCts
        options.inBandParameterSets = avc3
        options.metadata = try metadataItems(fileType: options.fileType)
        if let fragmentDuration, let seconds = FrameRate(parsing: fragmentDuration) {
            guard seconds.numerator <= UInt64(Int64.max), seconds.denominator <= UInt64(Int32.max) else {
                throw ValidationError("--fragment-duration \(fragmentDuration): too precise")
            }
            options.fragmentDuration = MediaTime(value: Int64(seconds.numerator), timescale: Int32(seconds.denominator))
        }
        let inputName = input == "-" ? "stdin" : input
        var builder = SampleBufferBuilder(
            options: .init(keepsParameterSetsInBand: avc3, codec: avc3 ? "avc3" : "avc1"),
            frameRate: .stream(fallback: givenRate ?? Inspect.assumedFrameRate))
        var writer: MovieWriter?
        let progress = Progress(total: input == "-" ? nil : fileSize(input))

        var leadingDropped = 0
        func drain(_ builder: inout SampleBufferBuilder) throws {
            while let sample = builder.nextSample() {
                // A file starts with a sync sample: pictures before the first IDR or recovery
                // point cannot be decoded (a decoder drops them too).
                if writer == nil && !sample.isSync {
                    leadingDropped += 1
                    continue
                }
                if writer == nil {
                    try checkTiming(builder, givenRate: givenRate, inputName: inputName)
                    if let rate = builder.frameRate { options.timecode = try timecodeTrack(rate: rate) }
                    writer = try MovieWriter(path: output, options: options)
                }
                try writer!.append(sample)
            }
        }

        var bytesRead = 0
        var leadingGarbage = 0
        do {
            (bytesRead, leadingGarbage) = try feedAnnexB(input, name: inputName, into: &builder) { bytes, builder in
                try drain(&builder)
                progress.update(bytes: bytes, samples: builder.sampleCount)
            }
            try builder.finish()
            try drain(&builder)
        } catch let error as BitstreamError {
            progress.clear()
            if output != "-" && options.fragmentDuration != nil && writer != nil { unlink(output) }
            throw ToolError("\(inputName): \(error)")
        } catch {
            progress.clear()
            if output != "-" && options.fragmentDuration != nil && writer != nil { unlink(output) }
            throw error
        }
        progress.clear()
        let parser = builder.parser
        if parser.nalUnitCount == 0 {
            throw ToolError("\(inputName): no H.264 start code found in \(bytesRead) bytes; not an Annex-B H.264 stream")
        }
        if leadingGarbage > 0 {
            printError("\(inputName): warning: \(leadingGarbage) bytes before the first start code were skipped")
        }
        if leadingDropped > 0 {
            printError("\(inputName): warning: the stream does not start with an IDR picture or recovery point; the \(leadingDropped) picture(s) before the first one cannot be decoded and were left out")
        }
        guard let writer else {
            for diagnostic in parser.diagnostics { printError("\(inputName): \(diagnostic)") }
            throw ToolError("\(inputName): no decodable picture (no slice with its SPS and PPS); nothing written")
        }
        if let missing = parser.diagnostics.first(where: { $0.severity == .error && $0.error.code == .missingParameterSet && ($0.error.byteOffset ?? 0) < (parser.pictures.first?.byteRange.lowerBound ?? 0) }) {
            for diagnostic in parser.diagnostics { printError("\(inputName): \(diagnostic)") }
            if output != "-" && options.fragmentDuration != nil { unlink(output) }
            throw ToolError("\(inputName): slices before their SPS/PPS (\(missing.error)); nothing written")
        }
        let summary = try writer.finish()
        for diagnostic in parser.diagnostics { printError("\(inputName): \(diagnostic)") }
        if parser.diagnostics.count < parser.errorCount + parser.warningCount {
            printError("\(inputName): \(parser.errorCount + parser.warningCount - parser.diagnostics.count) more problems not shown")
        }
        if output != "-" {
            printError("\(output): \(summary.sampleCount) samples, \(summary.duration.seconds) s at \(builder.frameRate!) fps, \(summary.fileSize) bytes"
                + (summary.fragmentCount > 0 ? ", \(summary.fragmentCount) fragments" : "")
                + (summary.sampleDescriptionCount > 1 ? ", \(summary.sampleDescriptionCount) sample descriptions" : ""))
        }
        if parser.errorCount > 0 {
            printError("\(inputName): \(parser.errorCount) NAL unit(s) are damaged; they are in the file as they were in the stream")
            throw ExitCode(1)
        }
    }

    private func checkTiming(_ builder: SampleBufferBuilder, givenRate: FrameRate?, inputName: String) throws {
        guard let rate = builder.frameRate else { return }
        if builder.frameRateIsFromStream {
            if let givenRate, givenRate != rate {
                printError("\(inputName): warning: the stream's VUI timing says \(rate) fps; --fps \(givenRate) applies only to streams without timing")
            }
        } else if givenRate == nil {
            printError("\(inputName): warning: the stream has no VUI timing; assuming \(rate) fps (set the rate with --fps, e.g. --fps 30000/1001)")
        }
    }
}

/// The size of a regular file, or nil.
func fileSize(_ path: String) -> Int? {
    var info = stat()
    guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
    return Int(info.st_size)
}

/// A one-line progress report on a terminal's standard error, at most four times a second.
final class Progress {
    let total: Int?
    let enabled = isatty(2) != 0
    private let clock = HostClock()
    private var lastUpdate: Int64 = 0
    private var shown = false

    init(total: Int?) { self.total = total }

    func update(bytes: Int, samples: Int) {
        guard enabled else { return }
        let now = clock.currentTime.value  // nanoseconds
        guard now - lastUpdate > 250_000_000 else { return }
        lastUpdate = now
        var line = "\r\(bytes >> 20) MB"
        if let total, total > 0 {
            let percent = bytes * 100 / total
            let filled = percent / 5
            line = "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled) + "] \(percent)% \(bytes >> 20)/\(total >> 20) MB"
        }
        line += ", \(samples) frames"
        printErrorRaw(line)
        shown = true
    }

    /// Shows a line of its own (at most four times a second).
    func update(line: String) {
        guard enabled else { return }
        let now = clock.currentTime.value
        guard now - lastUpdate > 250_000_000 else { return }
        lastUpdate = now
        printErrorRaw("\r\u{1B}[K" + line)
        shown = true
    }

    func clear() {
        if shown { printErrorRaw("\r\u{1B}[K"); shown = false }
    }
}
