import ArgumentParser
import FoundationEssentials
import H264Bitstream
import H264Codec
import H264Container
import H264Session
import MediaCore
#if canImport(Glibc)
import Glibc
#endif

struct Encode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Encode Y4M or raw video with x264 into an H.264 stream, MP4 or MOV.",
        discussion: """
            Runs the compression session over libx264 with the x264 CLI's option names and defaults. A .264/.h264 \
            output is an Annex-B stream with SPS/PPS before every keyframe (a receiver can join mid-stream); .mp4 and \
            .mov go through the container writer. Settings are checked before anything is written.
            """
    )

    @Argument(help: "The input: a .y4m file, raw video (with --size, --pix-fmt, --fps), or - for standard input.")
    var input: String

    @Option(name: .shortAndLong, help: "The output: .264/.h264 (Annex-B), .mp4 or .mov.")
    var output: String

    @Option(help: ArgumentHelp("Raw input: picture size.", valueName: "WxH"))
    var size: String?

    @Option(help: ArgumentHelp("Raw input: pixel format (yuv420p, nv12, yuv422p, yuv444p, yuv420p10le, ...).", valueName: "format"))
    var pixFmt: String?

    @Option(help: ArgumentHelp("Raw input: frame rate (25, 30000/1001); for Y4M, overrides the header.", valueName: "rate"))
    var fps: String?

    @Option(help: "x264 preset: ultrafast ... placebo.")
    var preset = "medium"

    @Option(help: "x264 tune: film, animation, grain, stillimage, psnr, ssim, fastdecode, zerolatency.")
    var tune: String?

    @Option(help: "Constant quality (x264 CRF, 0-51; 23 by default).")
    var crf: Double?

    @Option(help: ArgumentHelp("Average bit rate in kbit/s.", valueName: "kbps"))
    var bitrate: Int?

    @Option(help: ArgumentHelp("VBV maximum rate in kbit/s.", valueName: "kbps"))
    var maxrate: Int?

    @Option(help: ArgumentHelp("VBV buffer size in kbit.", valueName: "kbit"))
    var bufsize: Int?

    @Option(help: "Profile: baseline, main, high, high10, high422, high444.")
    var profile: String?

    @Option(help: "Level (3.1, 4, 4.1, ...); x264 picks one from size and rate by default.")
    var level: String?

    @Option(help: "Maximum keyframe interval in frames.")
    var keyint: Int?

    @Option(help: "B-frames between references (0: no reordering).")
    var bframes: Int?

    @Option(help: "1, or 2 for two-pass at --bitrate (the input is read twice).")
    var passes = 1

    @Option(help: "Encoder threads (0: automatic).")
    var threads: Int?

    @Option(help: "Encode at most this many frames.")
    var frames: Int?

    func validate() throws {
        if crf != nil && bitrate != nil { throw ValidationError("give --crf or --bitrate, not both") }
        if passes != 1 && passes != 2 { throw ValidationError("--passes \(passes): 1 or 2") }
        if passes == 2 && bitrate == nil { throw ValidationError("--passes 2 needs --bitrate (two passes aim at a bit rate)") }
        if passes == 2 && input == "-" { throw ValidationError("--passes 2 reads the input twice; give a file, not standard input") }
        if let fps, FrameRate(parsing: fps) == nil { throw ValidationError("--fps \(fps): expected a rate such as 25 or 30000/1001") }
        if (maxrate == nil) != (bufsize == nil) { throw ValidationError("--maxrate and --bufsize go together") }
        if let frames, frames < 1 { throw ValidationError("--frames \(frames): expected a positive count") }
        if !(input.hasSuffix(".y4m")) && input != "-" || size != nil {
            if size == nil || pixFmt == nil || fps == nil { throw ValidationError("raw input needs --size WxH, --pix-fmt and --fps (or give a .y4m file)") }
        }
    }

    mutating func run() throws {
        var source = try VideoSource(path: input, size: size, pixelFormat: pixFmt, frameRate: fps.flatMap(FrameRate.init(parsing:)))
        var settings = EncoderSettings(width: source.width, height: source.height, pixelFormat: source.encodedFormat, frameRate: source.frameRate,
                                       preset: preset, tune: tune, rateControl: bitrate.map { .averageBitRate($0) } ?? .constantQuality(crf ?? 23))
        settings.maximumBitRate = maxrate
        settings.bufferSize = bufsize
        settings.profile = profile
        settings.level = level
        settings.maximumKeyframeInterval = keyint
        settings.bFrames = bframes
        settings.threads = threads
        settings.sampleAspectRatio = source.sampleAspectRatio
        let fileType: MovieFileType? = output.hasSuffix(".mp4") || output.hasSuffix(".m4v") ? .mp4 : output.hasSuffix(".mov") ? .mov : nil
        if fileType == nil {
            settings.annexB = true
            settings.repeatParameterSets = true
        }
        let sink = EncodeSink()
        let session: CompressionSession
        do {
            session = try CompressionSession(configuration: .init(settings: settings, passes: passes), outputHandler: { sink.take($0) })
        } catch {
            throw ToolError("\(input): cannot encode with these settings: \(error)")
        }
        // Everything is checked: the output can be created.
        if let fileType {
            do { sink.movie = try MovieWriter(path: output, options: .init(fileType: fileType)) } catch { throw ToolError("\(error)") }
        } else {
            sink.stream = try OutputFile(path: output)
        }
        let progress = Progress(total: nil)
        let clock = HostClock()
        let start = clock.currentTime
        var encoded = 0
        for pass in 1...passes {
            if passes > 1 {
                do { try session.beginPass() } catch { throw ToolError("\(input): \(error)") }
                if pass > 1 { source = try VideoSource(path: input, size: size, pixelFormat: pixFmt, frameRate: fps.flatMap(FrameRate.init(parsing:))) }
            }
            encoded = 0
            while frames.map({ encoded < $0 }) ?? true, let picture = try source.next() {
                do {
                    try session.encode(picture, presentationTime: source.frameDuration * Int64(encoded))
                } catch {
                    throw ToolError("\(input): frame \(encoded): \(error)")
                }
                encoded += 1
                if let error = sink.error { throw error }
                let seconds = (clock.currentTime - start).seconds
                progress.update(line: "\(passes > 1 ? "pass \(pass)/\(passes), " : "")\(encoded) frames, \(seconds > 0 ? Int(Double(encoded) / seconds) : 0) fps"
                                + (pass == passes ? ", \(Int(Double(sink.bytes * 8) / max(Double(encoded) * source.frameDuration.seconds, 0.001) / 1000)) kbit/s" : ""))
            }
            if passes > 1 {
                do { _ = try session.endPass() } catch { throw ToolError("\(input): \(error)") }
            }
        }
        if passes == 1 { session.finish() }
        progress.clear()
        if let error = sink.error { throw error }
        guard encoded > 0 else { throw ToolError("\(input): no frames; nothing written") }
        do {
            if let movie = sink.movie { try movie.finish() }
            try sink.stream?.commit()
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("\(error)")
        }
        let elapsed = (clock.currentTime - start).seconds
        let duration = Double(encoded) * source.frameDuration.seconds
        printError("\(output): \(sink.frames) frames, \(String(format2(duration))) s, \(Int(Double(sink.bytes * 8) / duration / 1000)) kbit/s, encoded at \(Int(Double(encoded * passes) / elapsed)) fps")
    }
}

private func format2(_ value: Double) -> String {
    let hundredths = Int((value * 100).rounded())
    return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
}

/// Where the session's frames go: an Annex-B file or the container writer. The session runs
/// synchronously, so the handler runs on the encoding thread.
final class EncodeSink: @unchecked Sendable {
    var movie: MovieWriter?
    var stream: OutputFile?
    var error: ToolError?
    var frames = 0
    var bytes = 0

    func take(_ frame: CompressedFrame) {
        guard error == nil else { return }
        frames += 1
        bytes += frame.sampleBuffer.data.count
        do {
            if let movie { try movie.append(frame.sampleBuffer) }
            if let stream { try frame.sampleBuffer.data.withUnsafeBytes { (raw) throws(ToolError) in try stream.write(raw) } }
        } catch let failure as ToolError {
            error = failure
        } catch {
            self.error = ToolError("\(error)")
        }
    }
}

/// Pictures from a Y4M file or raw video, mapped (planes borrowed from the mapping, no copy)
/// or read from standard input.
struct VideoSource {
    let width: Int
    let height: Int
    let format: PixelFormat
    let frameRate: FrameRate
    var sampleAspectRatio: (width: Int, height: Int)?
    private let file: MappedFile?
    private var offset: Int
    private let isY4M: Bool
    private let frameSize: Int
    private let name: String
    private var index = 0

    var frameDuration: MediaTime { MediaTime(value: Int64(frameRate.denominator), timescale: Int32(clamping: frameRate.numerator)) }
    /// What x264 is given: the input's format when x264 takes it, else 4:2:0 (converted).
    var encodedFormat: PixelFormat { H264Encoder.takes(format) ? format : (format.bitDepth > 8 ? .yuv(.yuv420, bitDepth: 10) : .yuv420p) }

    init(path: String, size: String?, pixelFormat: String?, frameRate rate: FrameRate?) throws {
        name = path == "-" ? "stdin" : path
        file = path == "-" ? nil : try MappedFile(path: path)
        isY4M = size == nil
        var header: [UInt8] = []
        if isY4M {
            if let file {
                guard let newline = file.bytes.prefix(4096).firstIndex(of: 0x0A) else { throw ToolError("\(name): not a Y4M file (no header line in the first 4 KB)") }
                header = Array(file.bytes[..<newline])
                offset = newline + 1
            } else {
                while let byte = Self.readByte(), byte != 0x0A {
                    header.append(byte)
                    guard header.count < 4096 else { throw ToolError("\(name): not a Y4M file (no header line in the first 4 KB)") }
                }
                offset = 0
            }
            let fields = String(decoding: header, as: UTF8.self).split(separator: " ")
            guard fields.first == "YUV4MPEG2" else { throw ToolError("\(name): not a Y4M file (the header does not start with YUV4MPEG2)") }
            var w: Int?, h: Int?, f: FrameRate?, colour = "420jpeg"
            for field in fields.dropFirst() {
                let value = String(field.dropFirst())
                switch field.first {
                case "W": w = Int(value)
                case "H": h = Int(value)
                case "F":
                    let parts = value.split(separator: ":").compactMap { UInt64($0) }
                    guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { throw ToolError("\(name): Y4M header: frame rate \"\(value)\" is not N:D") }
                    f = FrameRate(parts[0], parts[1])
                case "A":
                    let parts = value.split(separator: ":").compactMap { Int($0) }
                    if parts.count == 2, parts[0] > 0, parts[1] > 0 { sampleAspectRatio = (parts[0], parts[1]) }
                case "C": colour = value
                default: continue
                }
            }
            guard let w, let h, w > 0, h > 0, w <= 16384, h <= 16384 else { throw ToolError("\(name): Y4M header: width and height (W, H) missing or out of range") }
            width = w
            height = h
            let formats: [String: PixelFormat] = [
                "420jpeg": .yuv420p, "420mpeg2": .yuv420p, "420paldv": .yuv420p, "420": .yuv420p, "422": .yuv422p, "444": .yuv444p, "mono": .gray,
                "420p10": .yuv(.yuv420, bitDepth: 10), "422p10": .yuv(.yuv422, bitDepth: 10), "444p10": .yuv(.yuv444, bitDepth: 10),
            ]
            guard let chosen = formats[colour] else { throw ToolError("\(name): Y4M header: colour space C\(colour) is not supported") }
            format = chosen
            guard let fr = rate ?? f else { throw ToolError("\(name): Y4M header has no frame rate (F); give --fps") }
            frameRate = fr
        } else {
            let parts = size!.split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { throw ToolError("--size \(size!): expected WxH") }
            width = parts[0]
            height = parts[1]
            guard let chosen = PixelFormat(name: pixelFormat!) else { throw ToolError("--pix-fmt \(pixelFormat!): unknown pixel format") }
            format = chosen
            frameRate = rate!
            offset = 0
        }
        var bytes = 0
        for plane in 0..<format.planeCount {
            let size = format.planeSize(plane, width: width, height: height)
            bytes += size.rowBytes * size.height
        }
        frameSize = bytes
        if !isY4M, let file, file.bytes.count % frameSize != 0 {
            throw ToolError("\(name): \(file.bytes.count) bytes is not a whole number of \(width)x\(height) \(format) frames (\(frameSize) bytes each): \(file.bytes.count / frameSize) frames and \(file.bytes.count % frameSize) bytes left over; check --size and --pix-fmt")
        }
    }

    private static func readByte() -> UInt8? {
        var byte: UInt8 = 0
        return read(0, &byte, 1) == 1 ? byte : nil
    }

    /// The next picture, or nil at the end of the input.
    mutating func next() throws -> PixelBuffer? {
        if isY4M {
            // "FRAME" and optional parameters up to a newline.
            if let file {
                guard offset < file.bytes.count else { return nil }
                guard file.bytes.count - offset >= 6, file.bytes[offset..<(offset + 5)].elementsEqual("FRAME".utf8) else {
                    throw ToolError("\(name): byte \(offset): frame \(index) does not start with FRAME")
                }
                guard let newline = file.bytes[offset...].prefix(1024).firstIndex(of: 0x0A) else { throw ToolError("\(name): byte \(offset): frame \(index) header has no end") }
                offset = newline + 1
            } else {
                var header: [UInt8] = []
                while let byte = Self.readByte(), byte != 0x0A {
                    header.append(byte)
                    guard header.count < 1024 else { throw ToolError("\(name): frame \(index) header has no end") }
                }
                if header.isEmpty { return nil }
                guard header.starts(with: "FRAME".utf8) else { throw ToolError("\(name): frame \(index) does not start with FRAME") }
            }
        }
        let picture: PixelBuffer
        if let file {
            guard offset < file.bytes.count || isY4M else { return nil }
            guard file.bytes.count - offset >= frameSize else {
                throw ToolError("\(name): frame \(index) is cut off: \(file.bytes.count - offset) of \(frameSize) bytes")
            }
            var planes: [(base: UnsafeMutableRawPointer, bytesPerRow: Int)] = []
            var at = offset
            for plane in 0..<format.planeCount {
                let size = format.planeSize(plane, width: width, height: height)
                planes.append((UnsafeMutableRawPointer(mutating: file.bytes.baseAddress! + at), size.rowBytes))
                at += size.rowBytes * size.height
            }
            picture = PixelBuffer(format: format, width: width, height: height, borrowing: planes, release: { [file] in _ = file })
            offset += frameSize
        } else {
            picture = PixelBuffer(format: format, width: width, height: height)
            for plane in 0..<format.planeCount {
                let info = picture.planes[plane]
                for row in 0..<info.height {
                    var done = 0
                    while done < info.rowBytes {
                        let n = read(0, info.base + row * info.bytesPerRow + done, info.rowBytes - done)
                        if n <= 0 {
                            if n < 0 && errno == EINTR { continue }
                            if plane == 0 && row == 0 && done == 0 && !isY4M { return nil }
                            throw ToolError("\(name): frame \(index) is cut off (the input ended inside it)")
                        }
                        done += n
                    }
                }
            }
        }
        index += 1
        return picture
    }
}
