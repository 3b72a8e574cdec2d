// An Annex-B stream into sample buffers with options the input chooses (NAL length size,
// parameter sets in band, dropping AUDs and filler, a fixed rate, the remux policies), each
// sample's framing checked, and the samples written to a movie that must read back the same.
import FuzzSupport
import H264Bitstream
import SampleFlow
import ISOBMFF
import MPEGTS
import MediaCore

#if canImport(Glibc)
import Glibc
#endif

let moviePath = "/dev/shm/h264kit-fuzz-\(getpid()).mp4"

@_cdecl("FuzzSampleBuffers_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let flags = choice.byte()
        let lengthSize = [4, 2, 1, 4][Int(flags & 3)]
        let builder = SampleBufferBuilder.Options(nalUnitLengthSize: lengthSize, keepsParameterSetsInBand: flags & 4 != 0,
                                                  dropsAccessUnitDelimiters: flags & 8 != 0, dropsFillerData: flags & 16 != 0)
        let options = SampleBufferReader.Options(builder: builder, frameRate: flags & 32 != 0 ? FrameRate(30000, 1001) : nil,
                                                 startsAtSyncSample: flags & 64 == 0, rejectsSlicesBeforeParameterSets: flags & 128 == 0)
        let layoutChoice = choice.byte()
        let reader = SampleBufferReader(bytes: [UInt8](choice.rest), options: options)
        var samples: [SampleBuffer] = []
        while true {
            let sample: SampleBuffer?
            do { sample = try reader.next() } catch { break }
            guard let sample else { break }
            let bytes = sample.data.bytes
            let ranges = try? AVCC.nalUnitRanges(in: bytes.span, lengthSize: lengthSize)
            fuzzCheck(ranges != nil, "a sample the builder framed does not parse with its own \(lengthSize)-byte lengths")
            fuzzCheck(ranges?.isEmpty == false, "an empty sample")
            fuzzCheck(sample.duration.isNumeric && sample.presentationTime.isNumeric && sample.decodeTime.isNumeric, "a sample without numeric times")
            samples.append(sample)
        }
        _ = reader.warnings.map(\.description)
        // Writing a movie costs file system calls: one input in four, chosen by the input.
        guard !samples.isEmpty, layoutChoice & 0x30 == 0 else { return }
        writeAndReadBack(samples, layout: layoutChoice)
    }
}

/// Writes the samples to a movie in the layout the input chose; the movie must read back with
/// the same samples (the same bytes, in the progressive and faststart layouts).
func writeAndReadBack(_ samples: [SampleBuffer], layout choice: UInt8) {
    let layout: MovieWriter.Layout = switch choice % 3 {
    case 0: .progressive
    case 1: .faststart
    default: .fragmented(fragmentDuration: MediaTime(value: 1, timescale: 2))
    }
    defer { unlink(moviePath) }
    do {
        let writer = try MovieWriter(path: moviePath, options: .init(layout: layout))
        for sample in samples { try writer.append(sample) }
        _ = try writer.finish()
    } catch {
        return  // refused with an error: allowed (a size that does not fit the file, say)
    }
    let movie: MovieReader
    let readBack: MovieSampleBuffers
    do {
        movie = try MovieReader(path: moviePath)
        guard let track = movie.firstVideoTrackIndex else { fatalError("a written movie has no video track") }
        readBack = try movie.sampleBuffers(track: track, editList: .shift)
    } catch {
        fatalError("a written movie does not read back: \(error)")
    }
    fuzzCheck(readBack.count == samples.count, "wrote \(samples.count) samples, read \(readBack.count)")
    if case .fragmented = layout { return }  // changed parameter sets go in band there
    for (written, read) in zip(samples, readBack) {
        fuzzCheck(written.data.bytes == read.data.bytes, "a sample's bytes changed")
        fuzzCheck(written.isSync == read.isSync, "a sample's sync flag changed")
        fuzzCheck(written.formatDescription == read.formatDescription, "a sample's description changed")
    }
}
