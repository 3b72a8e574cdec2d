public import SampleFlow
public import MediaIO

extension PSNRMeter {
    /// The PSNR of an encoded Annex-B stream against its source, as ffmpeg's `psnr` filter
    /// measures an encode: the stream decoded with libavcodec (each picture at its own size),
    /// and each picture compared with the next picture of `source`, for the first `frames`
    /// (every picture the stream holds when nil). Throws when the stream gives fewer pictures
    /// than asked for, or a picture of another size or format than the source's.
    public static func measuring(annexB stream: [UInt8], against source: any PictureReader, frames: Int? = nil) throws(SessionError) -> PSNRMeter {
        let decoded = try FrameReader(source: MediaSource(annexB: stream, options: MediaSource.Options.decoding.annexB), options: .init(size: .native))
        var meter = PSNRMeter()
        do {
            while frames.map({ meter.frameCount < $0 }) ?? true, let frame = try decoded.next() {
                guard let picture = frame.pixelBuffer else { continue }
                guard let original = try source.next() else {
                    throw SessionError.mediaIO(MediaIOError(.invalidArgument, "the stream holds more pictures than the source (\(meter.frameCount))"))
                }
                try meter.add(original, picture)
            }
        } catch let error as SessionError {
            throw error
        } catch let error as MediaIOError {
            throw .mediaIO(error)
        } catch {
            throw .mediaIO(MediaIOError(.invalidArgument, "\(error)"))
        }
        if let frames, meter.frameCount != frames {
            throw .mediaIO(MediaIOError(.invalidArgument, "the stream decodes to \(meter.frameCount) of the \(frames) pictures measured"))
        }
        return meter
    }
}
