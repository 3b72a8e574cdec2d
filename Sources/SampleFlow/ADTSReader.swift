import Bitstream
public import H264Bitstream
public import MediaCore
import MPEG4Audio
import SystemIO
public import SystemPackage

/// Reads an ADTS stream (a `.aac` file, a pipe, bytes in memory) as AAC sample buffers: one
/// raw frame per sample, the ADTS header left out, the configuration from the first header in
/// the format description (with the program config element a frame of channel configuration 0
/// begins with). The frames are timed back to back in the sample rate's clock from 0 (an ADTS
/// stream has no timestamps): frame n at n × 1024. Damage is skipped, counted and said
/// (``warnings``), as `ADTSFrameSplitter` finds it; a frame whose rate, object type or
/// channels differ from the first's is left out.
public final class ADTSReader: SampleSource {
    /// The input's name in messages ("stdin" for standard input).
    public let name: String
    /// The track ID the samples carry.
    public let trackID: TrackID
    /// The format of the samples, once the first frame is read.
    public private(set) var audioFormatDescription: AudioFormatDescription? {
        didSet { sampleFormat = audioFormatDescription.map { .audio($0) } }
    }
    /// ``audioFormatDescription`` as every sample carries it (made once: one reference shared).
    private var sampleFormat: FormatDescription?
    /// Samples handed out.
    public private(set) var sampleCount = 0
    /// Bytes read.
    public private(set) var bytesRead = 0
    /// The input's size, when it is a file.
    public let totalBytes: Int?

    private var input: ChunkedInput?
    private var memory: [UInt8]?
    private var splitter = ADTSFrameSplitter()
    private var ready: [ADTSFrameSplitter.Frame] = []
    private var readyStart = 0
    private var ended = false
    private var leftOut = 0
    /// Bytes read at a time.
    static let chunkSize = 64 << 10

    /// Opens `path` ("-": standard input); its samples carry `trackID`.
    public init(path: String, trackID: TrackID = .first) throws(SampleFlowError) {
        name = path == "-" ? "stdin" : path
        self.trackID = trackID
        do {
            input = try ChunkedInput(path: path)
            totalBytes = path == "-" ? nil : try FileStatus.of(path: path).map { Int($0.size) }
        } catch {
            throw .file(error)
        }
    }

    /// Reads an open descriptor after the bytes of `prefix` (read from it already to tell what
    /// it holds); the caller keeps it open.
    public init(fileDescriptor: FileDescriptor, name: String, prefix: [UInt8] = [], trackID: TrackID = .first) {
        self.name = name
        self.trackID = trackID
        input = ChunkedInput(descriptor: fileDescriptor, name: name)
        totalBytes = nil
        memory = prefix.isEmpty ? nil : prefix
    }

    /// Reads a stream held in memory.
    public init(bytes: [UInt8], name: String = "bytes", trackID: TrackID = .first) {
        self.name = name
        self.trackID = trackID
        memory = bytes
        totalBytes = bytes.count
    }

    /// Whether `prefix` (a file's first bytes) looks like ADTS: a header that parses, followed
    /// where it says by another one (or the end of the prefix inside that frame).
    public static func looksLikeADTS(prefix: [UInt8]) -> Bool {
        guard prefix.count >= ADTSHeader.minimumSize,
              let first = try? prefix.withTypedBytes({ (raw) throws(BitstreamError) in try ADTSHeader(bytes: raw) }) else { return false }
        let next = first.frameLength
        guard next + ADTSHeader.minimumSize <= prefix.count else { return next > prefix.count - ADTSHeader.minimumSize && prefix.count < 4096 }
        return prefix[next] == 0xFF && prefix[next + 1] & 0xF6 == 0xF0
    }

    /// The next sample, or nil at the end.
    public func next() throws(SampleFlowError) -> SampleBuffer? {
        while true {
            if readyStart < ready.count {
                let frame = ready[readyStart]
                readyStart += 1
                if readyStart == ready.count { ready.removeAll(keepingCapacity: true); readyStart = 0 }
                if let sample = try sample(frame) { return sample }
                continue
            }
            if ended { return nil }
            try readMore()
        }
    }

    private func readMore() throws(SampleFlowError) {
        if let bytes = memory {
            memory = nil
            bytesRead += bytes.count
            ready += splitter.append(bytes)
            if input == nil { ready += splitter.finish(); ended = true }
            return
        }
        guard let input else {
            ended = true
            return
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        let count: Int
        do { count = try input.read(into: buffer) } catch { throw .file(error) }
        if count == 0 {
            ready += splitter.finish()
            ended = true
            self.input = nil
        } else {
            bytesRead += count
            ready += splitter.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// The frame as a sample, timed after the ones before; nil for a frame of another stream.
    private func sample(_ frame: ADTSFrameSplitter.Frame) throws(SampleFlowError) -> SampleBuffer? {
        if audioFormatDescription == nil {
            let pce = frame.header.channelConfiguration == 0 ? ProgramConfigElement.leading(frame.payload) : nil
            do { audioFormatDescription = try AudioFormatDescription(aac: frame.header.audioSpecificConfig(programConfigElement: pce)) } catch {
                throw .bitstream(error, input: name)
            }
        }
        guard let format = audioFormatDescription, let sampleFormat, splitter.firstHeader.map({ frame.header.isSameStream(as: $0) }) ?? true else {
            leftOut += 1
            return nil
        }
        let duration = MediaTime(value: Int64(format.framesPerPacket), timescale: Int32(clamping: format.sampleRate))
        let time = MediaTime(value: Int64(sampleCount) * Int64(format.framesPerPacket), timescale: Int32(clamping: format.sampleRate))
        sampleCount += 1
        return SampleBuffer(data: BlockBuffer(frame.payload), formatDescription: sampleFormat,
                            timing: SampleTiming(presentationTime: time, decodeTime: time, duration: duration),
                            attachments: SampleAttachments(isSync: true), trackID: trackID)
    }

    /// No video: nil.
    public var formatDescription: VideoFormatDescription? { nil }
    /// No frame rate (audio).
    public var frameRate: FrameRate? { nil }
    /// Bytes read of the file's size.
    public var progress: (read: Int, total: Int?) { (bytesRead, totalBytes) }

    /// The one track, once its first frame is read.
    public var tracks: [TrackDescription] {
        audioFormatDescription.map { [TrackDescription(id: trackID, format: .audio($0), timescale: Int32(clamping: $0.sampleRate))] } ?? []
    }

    /// What was wrong with the stream, as sentences.
    public var warnings: [String] {
        var lines = splitter.problems.map(\.description)
        if splitter.problems.count >= ADTSFrameSplitter.maximumProblemsKept { lines.append("(the first \(ADTSFrameSplitter.maximumProblemsKept) problems are listed)") }
        if leftOut > 0 { lines.append("\(leftOut) frame(s) of another rate, object type or channel layout than the first, left out") }
        return lines
    }
}
