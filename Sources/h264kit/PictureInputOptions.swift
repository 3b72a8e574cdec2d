import ArgumentParser
import H264Kit

/// Where pictures come from: a Y4M file, or raw video with its size, format and rate
/// (`encode`, and `stream` of pictures encoded live).
struct PictureInputOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Raw input: picture size.", valueName: "WxH"))
    var size: String?

    @Option(help: ArgumentHelp("Raw input: pixel format (yuv420p, nv12, yuv422p, yuv444p, yuv420p10le, ...).", valueName: "format"))
    var pixFmt: String?

    @Option(help: ArgumentHelp("Raw input: frame rate (25, 30000/1001); for Y4M, overrides the header.", valueName: "rate"))
    var fps: String?

    /// Whether `input` is pictures (Y4M, or raw with these options) rather than encoded video.
    func isPictures(_ input: String) -> Bool {
        input.lowercased().hasSuffix(".y4m") || input.lowercased().hasSuffix(".yuv") || size != nil
    }

    /// Checks the options for `input`.
    func validate(for input: String) throws {
        _ = try parseRate(fps, "--fps")
        if !(input.hasSuffix(".y4m")) && input != "-" || size != nil {
            if size == nil || pixFmt == nil || fps == nil { throw ValidationError("raw input needs --size WxH, --pix-fmt and --fps (or give a .y4m file)") }
        }
        if let size, size.split(separator: "x").compactMap({ Int($0) }).count != 2 { throw ValidationError("--size \(size): expected WxH") }
        if let pixFmt, PixelFormat(name: pixFmt) == nil { throw ValidationError("--pix-fmt \(pixFmt): unknown pixel format") }
    }

    /// The raw geometry, when the input is raw video.
    var raw: (width: Int, height: Int, format: PixelFormat, frameRate: FrameRate)? {
        guard let size, let pixFmt, let format = PixelFormat(name: pixFmt), let rate = FrameRate(parsing: fps ?? "") else { return nil }
        let parts = size.split(separator: "x").compactMap { Int($0) }
        return (parts[0], parts[1], format, rate)
    }

    /// Opens the pictures of `input`.
    func openReader(_ input: String, limits: PictureLimits) throws(MediaIOError) -> any PictureReader {
        try openPictureReader(path: input, raw: raw, frameRate: FrameRate(parsing: fps ?? ""), limits: limits)
    }
}
