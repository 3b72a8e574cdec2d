// An MP4/MOV file: the box tree, tracks, sample tables and fragments, every H.264 sample and
// its description, timecode tracks and their frame listing, metadata; and the parsed `moov`
// written back, which must parse to the same boxes.
import FuzzSupport
import ISOBMFF
import MPEGTS
import MediaCore

@_cdecl("FuzzMovie_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        guard let movie = try? MovieReader(bytes: [UInt8](input), name: "fuzz") else { return }
        for (index, track) in movie.tracks.enumerated() {
            _ = (track.nominalFrameRate, track.sampleDuration, track.formatDescriptions.map(\.description))
            if track.isH264, let samples = try? movie.sampleBuffers(track: index, editList: .trim) {
                var total = 0
                for sample in samples { total &+= sample.data.count }
                _ = samples.syncSample(atOrBefore: samples.count - 1)
                _ = try? movie.displayTimes(track: index)
            }
        }
        if let timecode = movie.timecodeTrackIndex() {
            _ = try? movie.timecodeTrack(timecode).startTimecode()
            _ = try? movie.frameTimecodes(timecodeTrack: timecode, videoTrack: movie.firstVideoTrackIndex, limit: 100_000)
            _ = try? movie.frameTimecodes(timecodeTrack: timecode, videoTrack: nil, limit: 100_000)
        }
        _ = movie.metadata.map(\.description)
        let written = movie.movieBox.serialized
        let reread: AnyBox
        do { reread = try AnyBox.parse(written) } catch { fatalError("a moov written from its boxes does not parse: \(error)") }
        fuzzCheck(reread == AnyBox(movie.movieBox), "moov changed in a write and read")
    }
}
