package import MediaCore
import SampleFlow

extension SampleBuffer {
    /// The sample's H.264 description, or the error of a sender (or packager) of H.264 given
    /// something else.
    package func requireVideo(input: String) throws(StreamingError) -> VideoFormatDescription {
        guard let video = videoFormatDescription else {
            throw .source(.noSamples(input: input, reason: "a \(formatDescription.codecName) sample where H.264 video was to be sent"))
        }
        return video
    }
}
