// MPEG-4 Audio syntax: the first byte picks the parser. An ADTS stream cut into chunks the
// input chooses (every frame's payload the length its header says, the frames' offsets rising),
// a LOAS stream likewise, an AudioSpecificConfig (what parses writes back to what parses the
// same), an esds ES_Descriptor (written back and read again to the same), and an ADTS file
// through SampleFlow's reader (times rising by one frame each).
import Bitstream
import FuzzSupport
import MPEG4Audio
import MediaCore
import SampleFlow

@_cdecl("FuzzAudio_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let which = choice.byte()
        let chunk = [1, 7, 188, 4096][Int(choice.byte() & 3)]
        let bytes = [UInt8](choice.rest)
        switch which % 5 {
        case 0:
            var splitter = ADTSFrameSplitter()
            var frames: [ADTSFrameSplitter.Frame] = []
            var start = 0
            while start < bytes.count {
                frames += splitter.append(Array(bytes[start..<min(start + chunk, bytes.count)]))
                start += chunk
            }
            frames += splitter.finish()
            var previous = -1
            for frame in frames {
                fuzzCheck(frame.header.size + frame.payload.count == frame.header.frameLength, "a payload of another length than its header says")
                fuzzCheck(frame.offset > previous, "frame offsets that do not rise")
                previous = frame.offset
                _ = frame.header.audioSpecificConfig(programConfigElement: frame.header.channelConfiguration == 0 ? ProgramConfigElement.leading(frame.payload) : nil)
            }
            fuzzCheck(splitter.statistics.frames == frames.count, "a frame count that is not the frames handed out")
            _ = splitter.problems.map(\.description)
        case 1:
            var splitter = LOASFrameSplitter()
            var frames: [LOASFrameSplitter.Frame] = []
            var start = 0
            while start < bytes.count {
                frames += splitter.append(Array(bytes[start..<min(start + chunk, bytes.count)]))
                start += chunk
            }
            frames += splitter.finish()
            for frame in frames { fuzzCheck(frame.offset >= 0, "a negative offset"); _ = frame.config.audioSpecificConfig.codecString }
        case 2:
            guard let config = try? AudioSpecificConfig(bytes: bytes) else { return }
            _ = (config.codecString, config.channelCount, config.frameLength, config.outputSamplingFrequency)
            _ = try? AudioFormatDescription(aac: config)
            if let written = try? config.serialized() {
                fuzzCheck((try? AudioSpecificConfig(bytes: written)) == config, "a configuration that does not read back as written")
            }
        case 3:
            guard let descriptor = try? ElementaryStreamDescriptor(bytes: bytes) else { return }
            let written = descriptor.serialized
            fuzzCheck((try? ElementaryStreamDescriptor(bytes: written)) == descriptor, "an ES_Descriptor that does not read back as written")
            if let info = descriptor.decoderConfig.decoderSpecificInfo { _ = try? AudioSpecificConfig(bytes: info) }
        default:
            let reader = ADTSReader(bytes: bytes, name: "fuzz")
            var last: MediaTime?
            while true {
                let sample: SampleBuffer?
                do { sample = try reader.next() } catch { _ = String(describing: error); break }
                guard let sample else { break }
                if let last { fuzzCheck(sample.decodeTime > last, "times that do not rise") }
                last = sample.decodeTime
            }
            _ = (reader.warnings, reader.tracks)
        }
    }
}
