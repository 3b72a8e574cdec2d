public import MediaCore
import MPEG4Audio
import SystemIO

/// AAC samples into an ADTS stream (a `.aac` file, or standard output): each raw frame after
/// a 7-byte header without CRC, the buffer fullness 0x7FF (variable rate), as FFmpeg's ADTS
/// muxer writes. Only what ADTS can say is taken: AAC Main, LC, SSR or LTP at a rate of the
/// table, a channel configuration of 0 to 7, frames under 8 KiB; anything else is an error that
/// names the sample. Samples of other tracks (video, another codec) are refused.
public final class ADTSSink: SampleSink {
    /// The stream's path ("-": standard output).
    public let path: String
    private var file: OutputFile?
    private var buffer: [UInt8] = []
    private var samples = 0
    private var bytes = 0
    private var config: AudioFormatDescription?

    /// Bytes gathered before a write.
    static let writeSize = 256 << 10

    /// Creates the stream at `path` ("-": standard output; a device or pipe is written in place).
    public init(path: String) throws(SampleFlowError) {
        self.path = path
        do { file = try OutputFile(path: path) } catch { throw .file(error) }
    }

    /// Samples appended so far.
    public var sampleCount: Int { samples }

    /// Appends one AAC frame behind its ADTS header.
    public func append(_ sample: SampleBuffer) throws(SampleFlowError) {
        guard let file else { throw .invalidOption("\(path): the stream was finished or cancelled") }
        func refuse(_ reason: String) -> SampleFlowError {
            .sample(index: samples, decodeTime: sample.decodeTime, underlying: .invalidOption("\(path): \(reason)"))
        }
        guard let format = sample.audioFormatDescription, let asc = format.audioSpecificConfig else {
            throw refuse("a \(sample.formatDescription.codecName) sample: an ADTS stream holds AAC")
        }
        if let config, config != format { throw refuse("the AAC configuration changes (\(config) to \(format)): an ADTS stream keeps one") }
        config = format
        guard let header = ADTSHeader(config: asc, payloadSize: sample.size) else {
            throw refuse("\(format.codecString) at \(asc.samplingFrequency) Hz, channel configuration \(asc.channelConfiguration), a \(sample.size)-byte frame: ADTS cannot say it")
        }
        buffer += header.bytes
        sample.data.forEachSegment { buffer.append(contentsOf: $0) }
        samples += 1
        bytes += header.frameLength
        if buffer.count >= Self.writeSize {
            do { try file.write(buffer) } catch { throw .file(error) }
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// Writes what is gathered and puts the stream in place.
    public func finish() throws(SampleFlowError) -> SampleSinkSummary {
        guard let file else { throw .invalidOption("\(path): the stream was finished or cancelled") }
        self.file = nil
        do {
            try file.write(buffer)
            try file.commit()
        } catch {
            throw .file(error)
        }
        buffer = []
        return SampleSinkSummary(samples: samples, bytes: bytes)
    }

    /// Removes what was written (an unfinished temporary file).
    public func cancel() {
        file?.discard()
        file = nil
    }
}
