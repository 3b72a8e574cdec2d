import Foundation
import TestSupport
import Testing
@testable import H264Bitstream

/// One row of the corpus MANIFEST.tsv.
struct CorpusEntry: Sendable, CustomTestStringConvertible {
    var figures: FFprobeFigures
    var notes: String
    var path: String { figures.file }
    var testDescription: String { path }

    var ffmpegFailed: Bool { figures.profile.isEmpty || notes.contains("FFMPEG FAILED") }
    var isFuzz: Bool { notes.contains("fuzzer-generated") }
    var isFMO: Bool { notes.contains("FMO map_type") }

    static func load() -> [CorpusEntry] {
        guard let corpus = Fixtures.corpus,
              let text = try? String(contentsOf: corpus.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line -> CorpusEntry? in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 12, !f[0].hasSuffix(".mp4"), !f[0].hasSuffix(".mov") else { return nil }
            let size = f[7].split(separator: "x").compactMap { Int($0) }
            return CorpusEntry(figures: FFprobeFigures(file: f[0], profile: f[5], level: Int(f[6]) ?? -99, width: size.first ?? 0,
                                                       height: size.last ?? 0, pixelFormat: f[8], frames: Int(f[9]) ?? 0),
                               notes: f[11])
        }
    }
}

/// Where our reading differs from ffprobe's, and why. Every other raw stream must match.
let knownCorpusMismatches: [String: String] = [
    "derived/BA_MW_D+FRExt3_Panasonic.concat.264":
        "two SPS with id 0: ffprobe mixes the last SPS's profile/level with the first's size; we report the first picture's SPS throughout and list the change",
    "OxideAV_oxideav-h264/fuzz_regressions/crash-b741d946292d96dd1a04b334523ddcd8e5846431":
        "fuzzed SPS redefinitions; ffprobe reports the last parsed SPS's profile",
    "OxideAV_oxideav-h264/fuzz_regressions/oom-ccf7388c0de1c3e0ac24b05afffb58a959f76e26":
        "an SPS of 32768x4080 that we reject as over our size limit; ffprobe reports it and decodes nothing",
    "OxideAV_oxideav-h264/fuzz_regressions/crash-8f49a0cffd9443dc4a4389d043a9069fa4fbd5e8":
        "corrupt slice data: ffmpeg drops pictures whose headers parse",
    "OxideAV_oxideav-h264/fuzz_regressions/crash-df32d5060d483d08cebb46452646d81c6c253546":
        "corrupt slice data: ffmpeg conceals an extra picture",
]

@Suite("Corpus (H264KIT_CORPUS)", .requiresCorpus)
struct CorpusTests {
    static let entries = CorpusEntry.load()

    @Test(arguments: entries)
    func matchesFFprobe(_ entry: CorpusEntry) throws {
        let corpus = try #require(Fixtures.corpus)
        let bytes = [UInt8](try Data(contentsOf: corpus.appendingPathComponent(entry.path)))
        // Never a crash or a hang, on any file.
        let parser = H264StreamParser.parse(annexB: bytes)
        if entry.ffmpegFailed {
            // FMO streams are valid (libavcodec lacks FMO): they must parse cleanly. Other files
            // ffmpeg rejects must give us an error or a warning.
            if entry.isFMO {
                #expect(parser.errorCount == 0)
                #expect(parser.pictureCount > 0)
            } else {
                #expect(parser.errorCount + parser.warningCount > 0 || parser.outputPictureCount == 0, "ffmpeg rejects this file; we reported nothing")
            }
            return
        }
        if knownCorpusMismatches[entry.path] != nil { return }
        try entry.figures.check(parser)
        if !entry.isFuzz {
            #expect(parser.errorCount == 0, "\(parser.diagnostics.prefix(3))")
        }
    }

    /// Display order against ffprobe's coded_picture_number, where ffprobe is installed.
    @Test(.requires(.ffprobe), arguments: entries.filter { !$0.ffmpegFailed && !$0.isFuzz && $0.figures.frames > 0 && !$0.notes.contains("DERIVED") && !$0.path.contains("_LOST") })
    func displayOrderMatchesFFprobe(_ entry: CorpusEntry) throws {
        let corpus = try #require(Fixtures.corpus)
        let bytes = [UInt8](try Data(contentsOf: corpus.appendingPathComponent(entry.path)))
        let expected = try ffprobeDisplayOrder(bytes)
        let parser = H264StreamParser.parse(annexB: bytes)
        let first = parser.firstRecoveredPicture ?? 0
        #expect(parser.decodeIndexesInDisplayOrder.filter { $0 >= first }.map { $0 - first } == expected)
    }
}
