import ArgumentParser
import H264Kit

struct TimecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timecode",
        abstract: "Read the timecode of an MP4/MOV file, or convert between timecodes and frame numbers.",
        subcommands: [Show.self, Convert.self],
        defaultSubcommand: Show.self
    )

    struct Show: ParsableCommand {
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

        struct Report: Codable {
            struct Sample: Codable {
                var frameNumber: Int64
                var timecode: String
                var start: Double
                var duration: Double
            }
            struct Frame: Codable {
                var index: Int
                var time: Double
                var timecode: String
            }
            var file: String
            var track: UInt32
            var sampleFormat: String
            var start: String?
            var frameRate: String
            var frameQuanta: Int
            var dropFrame: Bool
            var twentyFourHourMax: Bool
            var negativeTimesOK: Bool
            var counter: Bool
            var reel: String?
            var samples: [Sample]
            var frames: [Frame]?
        }

        mutating func run() throws {
            let reader: MovieReader
            do { reader = try MovieReader(path: file, limits: limits.movie) } catch { throw ToolError(error) }
            let video = reader.firstVideoTrackIndex
            guard let index = reader.timecodeTrackIndex(forVideoTrack: video) else {
                for warning in reader.warnings { printError("\(file): warning: \(warning)") }
                throw ToolError("\(file): no timecode track (tmcd or tc64)")
            }
            let info: TimecodeTrackInfo
            do { info = try reader.timecodeTrack(index) } catch { throw ToolError(error) }
            for warning in reader.warnings { printError("\(file): warning: \(warning)") }
            let format = info.format
            func label(_ number: Int64) throws -> String {
                if format.flags.contains(.counter) { return String(format.counterValue(forFrameNumber: number)) }
                do { return try format.timecode(forFrameNumber: number).description } catch { throw ToolError("\(file): track \(info.trackID): \(error)") }
            }
            var report = Report(
                file: file, track: info.trackID, sampleFormat: format.sampleFormat.fourCC.description,
                start: try info.samples.first.map { try label($0.frameNumber) },
                frameRate: "\(format.frameDuration.timescale)/\(format.frameDuration.value)", frameQuanta: format.frameQuanta,
                dropFrame: format.isDropFrame, twentyFourHourMax: format.flags.contains(.twentyFourHourMax),
                negativeTimesOK: format.flags.contains(.negativeTimesOK), counter: format.flags.contains(.counter),
                reel: format.sourceReference?.name,
                samples: try info.samples.map { Report.Sample(frameNumber: $0.frameNumber, timecode: try label($0.frameNumber), start: $0.start.seconds, duration: $0.duration.seconds) })
            if frames {
                do {
                    report.frames = try reader.frameTimecodes(timecodeTrack: index, videoTrack: video).enumerated().map { index, frame in
                        Report.Frame(index: index, time: frame.time.seconds, timecode: try label(frame.frameNumber))
                    }
                } catch let error as ContainerError {
                    throw ToolError(error)
                }
            }
            if json {
                try printJSON(report)
                return
            }
            var flags = [report.dropFrame ? "drop-frame" : "non-drop"]
            if report.twentyFourHourMax { flags.append("24-hour") }
            if report.negativeTimesOK { flags.append("negative times") }
            if report.counter { flags.append("counter") }
            print("\(file): track \(report.track) \(report.sampleFormat), start \(report.start ?? "none"), \(report.frameRate) fps, \(report.frameQuanta) frames/s, \(flags.joined(separator: ", "))"
                + (report.reel.map { ", reel \"\($0)\"" } ?? ""))
            if report.samples.count > 1 {
                for sample in report.samples { print("  run at \(sample.start) s for \(sample.duration) s: \(sample.timecode) (frame \(sample.frameNumber))") }
            }
            for frame in report.frames ?? [] { print("\(frame.index)\t\(frame.time)\t\(frame.timecode)") }
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
                    if value.contains(":") {
                        let timecode = try Timecode(parsing: value)
                        let number = try format.frameNumber(for: timecode)
                        results.append(Conversion(frameNumber: number, timecode: try format.timecode(forFrameNumber: number).description))
                    } else {
                        guard let number = Int64(value) else { throw ToolError("\(value): neither a timecode (HH:MM:SS:FF) nor a frame number") }
                        results.append(Conversion(frameNumber: number, timecode: try format.timecode(forFrameNumber: number).description))
                    }
                } catch let error as TimecodeError {
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
