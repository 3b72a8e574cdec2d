import Foundation
import H264Bitstream
import ISOBMFF
import MPEGTS
import H264Session
import MediaCore
import MediaIO
import TestSupport
import SampleFlow
import Testing

/// Every input that ever broke a rule (found by the fuzz targets or the mutation campaign,
/// kept in `Tests/Fixtures/Hostile`), fed through the public API as the command-line tool
/// uses it: each ends in output or a clean error, never a trap (which would end this process).
@Suite("Hostile inputs found by fuzzing: a clean error or output, never a trap")
struct HostileInputTests {
    static let directory = Checkout.fixtures.appendingPathComponent("Hostile")
    static let inputs: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
        .filter { !$0.hasSuffix(".md") && !$0.hasSuffix(".sdp") && !$0.hasSuffix(".rtp") && !$0.hasSuffix(".rtsp") }.sorted()  // (network inputs: H264NetworkTests)

    @Test func theRegressionInputsAreThere() {
        #expect(Self.inputs.count >= 4, "Tests/Fixtures/Hostile holds the inputs that failed once")
    }

    @Test(arguments: inputs)
    func endsCleanly(_ name: String) throws {
        let path = Self.directory.appendingPathComponent(name).path
        switch (name as NSString).pathExtension {
        case "y4m":
            if let reader = try? Y4MReader(path: path) {
                while (try? reader.next()) != nil {}
            }
        case "avcc":
            // FuzzAVCC's input: a 2-byte record length, the avcC record, a sample.
            let input = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let length = min(input.count - 2, Int(input[0]) << 8 | Int(input[1]))
            if let format = try? VideoFormatDescription(avcC: Array(input[2..<(2 + length)])) {
                let reread = try VideoFormatDescription(avcC: format.avcC)
                #expect(reread == format, "the avcC a description writes reads back to the same description")
                #expect(reread.avcC == format.avcC)
            }
        case "mp4", "mov":
            if let movie = try? MovieReader(path: path) {
                // As FuzzMovie checks: the moov written from its boxes reads back to the same boxes.
                let written = movie.movieBox.serialized
                #expect(try AnyBox.parse(written) == AnyBox(movie.movieBox), "\(name): the moov written back reads back the same")
                for index in movie.tracks.indices where movie.tracks[index].isH264 {
                    if let samples = try? movie.sampleBuffers(track: index) { for sample in samples { _ = sample.data.bytes.count } }
                }
                if let timecode = movie.timecodeTrackIndex() {
                    _ = try? movie.frameTimecodes(timecodeTrack: timecode, videoTrack: movie.firstVideoTrackIndex)
                }
            }
            Self.decode(path)
        default:
            let parser = H264StreamParser.parse(annexB: try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))))
            _ = parser.decodeIndexesInDisplayOrder
            let reader = try SampleBufferReader(path: path)
            while (try? reader.next()) ?? nil != nil {}
            Self.decode(path)
        }
    }

    /// Decodes every frame, as `h264kit decode` does; errors end it.
    static func decode(_ path: String) {
        guard let reader = try? FrameReader(path: path) else { return }
        var frames = 0
        while frames < 10_000, (try? reader.next()) ?? nil != nil { frames += 1 }
    }
}
