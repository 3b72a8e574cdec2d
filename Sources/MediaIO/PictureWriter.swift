public import H264Bitstream
import H264Codec
public import MediaCore
package import SystemIO

/// How a picture's two fields are ordered, when it has two.
public enum FieldOrder: Sendable, Hashable {
    /// A progressive picture, or two fields with the top or the bottom one shown first.
    case progressive, topFieldFirst, bottomFieldFirst
}

/// Writes pictures to a file in some format. Every writer writes under a temporary name and
/// renames the file into place in ``finish()`` (standard output, `"-"`, and existing devices
/// or pipes are written in place); a writer dropped before ``finish()`` leaves nothing.
public protocol PictureWriter: AnyObject {
    /// Writes the next picture, shown at `time`.
    func write(_ picture: PixelBuffer, at time: MediaTime, fieldOrder: FieldOrder) throws(MediaIOError)
    /// Completes the output, once.
    func finish() throws(MediaIOError)
}

extension OutputFile {
    /// Writes a picture's rows in rawvideo layout, gathered by `writev` without a copy.
    package func writeRows(of picture: PixelBuffer) throws(SystemError) {
        var rows = GatheredWrites()
        for plane in picture.planes {
            if plane.bytesPerRow == plane.rowBytes {
                rows.append(UnsafeRawBufferPointer(start: plane.base, count: plane.rowBytes * plane.height))
            } else {
                for row in 0..<plane.height {
                    rows.append(UnsafeRawBufferPointer(start: plane.base + row * plane.bytesPerRow, count: plane.rowBytes))
                }
            }
        }
        try withExtendedLifetime(picture) { () throws(SystemError) in try write(&rows) }
    }
}

/// Raw video: each picture's rows, planes one after another, in its own pixel format (16-bit
/// little-endian samples above 8 bits): byte for byte `ffmpeg -f rawvideo`.
public final class RawVideoWriter: PictureWriter {
    private let file: OutputFile

    /// Creates the output (`"-"`: standard output).
    public init(path: String) throws(MediaIOError) {
        do { file = try OutputFile(path: path) } catch { throw MediaIOError(error) }
    }

    /// Writes the picture's rows; the time and field order are not recorded.
    public func write(_ picture: PixelBuffer, at time: MediaTime, fieldOrder: FieldOrder = .progressive) throws(MediaIOError) {
        do { try file.writeRows(of: picture) } catch { throw MediaIOError(error) }
    }

    /// Completes the file: closes it and renames it into place.
    public func finish() throws(MediaIOError) {
        do { try file.commit() } catch { throw MediaIOError(error) }
    }
}

/// YUV4MPEG2 (`.y4m`), the header FFmpeg's yuv4mpegpipe muxer writes for the stream (size,
/// rate, aspect ratio, interlacing, chroma siting and range from the stream's VUI), then a
/// `FRAME` line and the rows of each picture: byte for byte `ffmpeg -f yuv4mpegpipe`, ready for
/// ffplay or mpv.
public final class Y4MWriter: PictureWriter {
    private let file: OutputFile
    private let frameRate: FrameRate
    private let stream: VideoFormatDescription?
    private var headerWritten = false

    /// Creates the output. `stream` (the pictures' format description) gives the aspect
    /// ratio, chroma siting and range; `frameRate` the rate.
    public init(path: String, frameRate: FrameRate, stream: VideoFormatDescription? = nil) throws(MediaIOError) {
        do { file = try OutputFile(path: path) } catch { throw MediaIOError(error) }
        self.frameRate = frameRate
        self.stream = stream
    }

    /// Writes a `FRAME` line and the picture's rows; the first picture and its field order make the header.
    public func write(_ picture: PixelBuffer, at time: MediaTime, fieldOrder: FieldOrder = .progressive) throws(MediaIOError) {
        do {
            if !headerWritten {
                headerWritten = true
                try file.write(Array(header(picture, fieldOrder: fieldOrder).utf8))
            }
            try file.write(Array("FRAME\n".utf8))
            try file.writeRows(of: picture)
        } catch {
            throw MediaIOError(error)
        }
    }

    /// Completes the file: closes it and renames it into place.
    public func finish() throws(MediaIOError) {
        do { try file.commit() } catch { throw MediaIOError(error) }
    }

    /// The header FFmpeg's yuv4mpegpipe muxer writes for these pictures.
    func header(_ picture: PixelBuffer, fieldOrder: FieldOrder) -> String {
        let vui = stream?.sps.vuiParameters
        let depth = picture.format.bitDepth
        var colour: String
        switch picture.format.chromaFormat {
        case .yuv420?:
            if depth > 8 {
                colour = "C420p\(depth) XYSCSS=420P\(depth)"
            } else if picture.colour?.fullRange == true {
                colour = "C420jpeg XYSCSS=420JPEG"  // yuvj420p
            } else if let vui, !vui.chromaLocInfoPresentFlag || vui.chromaSampleLocTypeTopField == 0 {
                // libavcodec takes a VUI without chroma siting as "left" (MPEG-2 siting).
                colour = "C420mpeg2 XYSCSS=420MPEG2"
            } else if vui?.chromaSampleLocTypeTopField == 2 {
                colour = "C420paldv XYSCSS=420PALDV"
            } else {
                colour = "C420jpeg XYSCSS=420JPEG"
            }
        case .yuv422?: colour = depth == 8 ? "C422 XYSCSS=422" : "C422p\(depth) XYSCSS=422P\(depth)"
        case .yuv444?: colour = depth == 8 ? "C444 XYSCSS=444" : "C444p\(depth) XYSCSS=444P\(depth)"
        case .monochrome?: colour = depth == 8 ? "Cmono" : "Cmono\(depth)"
        case nil: colour = "C444"
        }
        if let vui, vui.videoSignalTypePresentFlag {
            colour += vui.videoFullRangeFlag ? " XCOLORRANGE=FULL" : " XCOLORRANGE=LIMITED"
        } else if picture.colour?.fullRange == true {
            colour += " XCOLORRANGE=FULL"
        }
        let interlacing = switch fieldOrder { case .progressive: "Ip"; case .topFieldFirst: "It"; case .bottomFieldFirst: "Ib" }
        let sar = stream?.sampleAspectRatio.map { "\($0.width):\($0.height)" } ?? "0:0"
        return "YUV4MPEG2 W\(picture.width) H\(picture.height) F\(frameRate.numerator):\(frameRate.denominator) \(interlacing) A\(sar) \(colour)\n"
    }
}

/// FFmpeg's `framemd5` format: a header, then one line per picture with its time in the
/// stream's frame-rate timebase, its size and the MD5 of its rawvideo bytes: what
/// `ffmpeg -f framemd5` prints, so the two compare line for line.
public final class FrameMD5Writer: PictureWriter {
    private let file: OutputFile
    private let frameRate: FrameRate
    private var md5: MD5
    private var headerWritten = false
    private var written = 0

    /// Creates the output; times are written in ticks of `frameRate` (ffmpeg's timebase for a
    /// stream of that rate).
    public init(path: String, frameRate: FrameRate) throws(MediaIOError) {
        md5 = MD5()
        do { file = try OutputFile(path: path) } catch { throw MediaIOError(error) }
        self.frameRate = frameRate
    }

    /// Writes the picture's line: its frame number at `time` (its index when `time` is not numeric), size and MD5.
    public func write(_ picture: PixelBuffer, at time: MediaTime, fieldOrder: FieldOrder = .progressive) throws(MediaIOError) {
        if !headerWritten {
            headerWritten = true
            try append("""
                #format: frame checksums
                #version: 2
                #hash: MD5
                #tb 0: \(frameRate.denominator)/\(frameRate.numerator)
                #media_type 0: video
                #codec_id 0: rawvideo
                #dimensions 0: \(picture.width)x\(picture.height)
                #sar 0: 0/1
                #stream#, dts,        pts, duration,     size, hash

                """)
        }
        picture.forEachPackedRow { md5.update($0) }
        let pts = frameRate.frameIndex(at: time) ?? Int64(written)
        func column(_ value: Int64, _ width: Int) -> String { String(repeating: " ", count: max(0, width - String(value).count)) + String(value) }
        try append("0, \(column(pts, 10)), \(column(pts, 10)), \(column(1, 8)), \(column(Int64(picture.packedSize), 8)), \(md5.finalize())\n")
        written += 1
    }

    private func append(_ text: String) throws(MediaIOError) {
        do { try file.write(Array(text.utf8)) } catch { throw MediaIOError(error) }
    }

    /// Completes the file: closes it and renames it into place.
    public func finish() throws(MediaIOError) {
        do { try file.commit() } catch { throw MediaIOError(error) }
    }
}

/// PNG images through libavcodec's PNG encoder, one file per picture named by a printf-style
/// pattern (`frames-%05d.png`, numbered from 1 as ffmpeg's image2 muxer numbers them), or one
/// file when the name has no pattern.
public final class PNGSequenceWriter: PictureWriter {
    /// The pattern, or the one file's name.
    public let pattern: String
    private var encoder: PNGEncoder
    private var written = 0

    /// A writer of files named by `pattern` (`%d` or `%0Nd` for the picture number).
    public init(pattern: String) throws(MediaIOError) {
        self.pattern = pattern
        do { encoder = try PNGEncoder() } catch { throw MediaIOError(.codec, "cannot write PNG", path: pattern, underlying: error) }
    }

    /// The file name for picture `number` (1-based): the pattern's `%d` or `%0Nd` expanded.
    public static func expand(_ pattern: String, number: Int) -> String {
        guard let percent = pattern.firstIndex(of: "%") else { return pattern }
        var index = pattern.index(after: percent)
        var width = 0
        while index < pattern.endIndex, let digit = pattern[index].wholeNumberValue { width = width * 10 + digit; index = pattern.index(after: index) }
        guard index < pattern.endIndex, pattern[index] == "d" else { return pattern }
        let digits = String(number)
        return String(pattern[..<percent]) + String(repeating: "0", count: max(0, width - digits.count)) + digits + String(pattern[pattern.index(after: index)...])
    }

    /// Encodes the picture as PNG into the next numbered file; the time and field order are not used.
    public func write(_ picture: PixelBuffer, at time: MediaTime, fieldOrder: FieldOrder = .progressive) throws(MediaIOError) {
        written += 1
        let name = Self.expand(pattern, number: written)
        let bytes: [UInt8]
        do { bytes = try encoder.encode(picture) } catch { throw MediaIOError(.codec, "cannot encode picture \(written) as PNG", path: name, underlying: error) }
        do {
            let file = try OutputFile(path: name)
            try file.write(bytes)
            try file.commit()
        } catch {
            throw MediaIOError(error)
        }
    }

    /// Does nothing: each file is complete once its picture is written.
    public func finish() throws(MediaIOError) {}
}
