import SampleFlow
public import MediaIO
import MediaCore

extension PSNRMeter {
    /// The PSNR of an encoded Annex-B stream against its source, as ffmpeg's `psnr` filter
    /// measures an encode: the stream decoded with libavcodec (each picture at its own size),
    /// and each picture compared with the next picture of `source`, for the first `frames`
    /// (every picture the stream holds when nil). Throws when the stream gives fewer pictures
    /// than asked for, or a picture of another size or format than the source's.
    public static func measuring(annexB stream: [UInt8], against source: any PictureReader, frames: Int? = nil) throws(SessionError) -> PSNRMeter {
        let decoded = try FrameReader(source: MediaSource(annexB: stream, options: MediaSource.Options.decoding.annexB), options: .init(size: .native))
        var meter = PSNRMeter()
        while frames.map({ meter.frameCount < $0 }) ?? true, let frame = try decoded.next() {
            guard let picture = frame.pixelBuffer else { continue }
            let original: PixelBuffer?
            do { original = try source.next() } catch { throw .mediaIO(error) }
            guard let original else {
                throw .mediaIO(MediaIOError(.invalidArgument, "the stream holds more pictures than the source (\(meter.frameCount))"))
            }
            do { try meter.add(original, picture) } catch { throw .mediaIO(error) }
        }
        if let frames, meter.frameCount != frames {
            throw .mediaIO(MediaIOError(.invalidArgument, "the stream decodes to \(meter.frameCount) of the \(frames) pictures measured"))
        }
        return meter
    }
}
