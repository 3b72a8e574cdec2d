import ArgumentParser
import H264Kit

struct TimecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timecode",
        abstract: "Read the timecode of an MP4/MOV file, or convert between timecodes and frame numbers.",
        subcommands: [Show.self, Convert.self],
        defaultSubcommand: Show.self
    )

    struct Show: InterruptibleCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print a file's start timecode, rate, flags and reel (and with --frames, every frame's timecode).",
            discussion: "Reads the tmcd or tc64 track the video refers to (tref), else the first timecode track."
        )

        @Argument(help: "An MP4 or MOV file.")
        var file: String

        @OptionGroup var limits: LimitOptions
        @Flag(help: "Also print the timecode of every video frame, in presentation order.")
        var frames = false

        @Flag(help: "Print one JSON object.")
        var json = false

        func work() throws {
            let reader: MovieReader
            do { reader = try MovieReader(path: file, limits: limits.movie) } catch { throw ToolError(error) }
            for warning in reader.warnings { printError("\(file): warning: \(warning)") }
            let report: TimecodeReport
            do { report = try TimecodeReport(reader, includesFrames: frames) } catch { throw ToolError(error) }
            if json { try printJSON(report) } else { print(report.text) }
        }
    }

    struct Convert: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Convert timecodes to frame numbers and frame numbers to timecodes at a rate.",
            discussion: """
                A value with ':' is a timecode (HH:MM:SS:FF, or HH:MM:SS;FF for drop-frame), anything else a frame \
                number. Examples: `h264kit timecode convert --rate 30000/1001 "01:30:15;07"` prints 162295; \
                `h264kit timecode convert --rate 30000/1001 --drop-frame 1800` prints 00:01:00;02.
                """
        )

        @Option(help: ArgumentHelp("The frame rate, as an exact fraction (30000/1001, 25, 60000/1001).", valueName: "rate"))
        var rate: String

        @Flag(help: "Drop-frame timecode (29.97, 59.94, 119.88); implied by a timecode written with ';'.")
        var dropFrame = false

        @Flag(help: "Print one JSON array.")
        var json = false

        @Argument(help: "Timecodes or frame numbers.")
        var values: [String]

        func validate() throws {
            guard let rate = FrameRate(parsing: rate), rate.numerator <= UInt64(Int32.max), rate.denominator <= UInt64(Int32.max) else {
                throw ValidationError("--rate \(rate): expected a rate such as 25 or 30000/1001")
            }
            if values.isEmpty { throw ValidationError("give at least one timecode or frame number") }
        }

        struct Conversion: Codable {
            var frameNumber: Int64
            var timecode: String
        }

        mutating func run() throws {
            let parsed = FrameRate(parsing: rate)!
            let drop = dropFrame || values.contains { $0.contains(";") || $0.contains(",") }
            let format: TimecodeFormatDescription
            do { format = try TimecodeFormatDescription(frameRate: (Int32(parsed.numerator), Int32(parsed.denominator)), dropFrame: drop, sampleFormat: .timeCode64) } catch {
                throw ToolError("--rate \(rate): \(error)")
            }
            var results: [Conversion] = []
            for value in values {
                do {
                    let converted = try format.conversion(of: value)
                    results.append(Conversion(frameNumber: converted.frameNumber, timecode: converted.timecode.description))
                } catch {
                    throw ToolError("\(value): \(error)")
                }
            }
            if json {
                try printJSON(results)
            } else {
                for (value, result) in zip(values, results) {
                    print(value.contains(":") ? "\(result.frameNumber)" : result.timecode)
                }
            }
        }
    }
}
