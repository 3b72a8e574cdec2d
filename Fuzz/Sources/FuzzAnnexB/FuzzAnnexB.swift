// The Annex-B scanner three ways (whole buffer, incremental splitter in chunks the input
// chooses, AnnexBReader), which must agree, then the stream parser over every NAL unit:
// RBSP unescaping, SPS/PPS/slice header/SEI parsing, access units, picture order counts.
import FuzzSupport
import H264Bitstream
import SampleFlow

@_cdecl("FuzzAnnexB_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var options = FuzzOptions(input)
        let chunkSize = Int(options.byte()) + 1
        let bytes = [UInt8](options.rest)
        let whole = AnnexB.nalUnits(in: bytes)

        var splitter = AnnexBStreamSplitter()
        var split: [AnnexBNALUnit] = []
        bytes.withUnsafeBytes { raw in
            var start = 0
            while start < raw.count {
                let end = min(raw.count, start + chunkSize)
                splitter.append(UnsafeRawBufferPointer(rebasing: raw[start..<end])) { unit, _ in split.append(unit) }
                start = end
            }
            splitter.finish { unit, _ in split.append(unit) }
            fuzzCheck(splitter.leadingGarbageCount == AnnexB.leadingGarbageCount(in: raw), "leading garbage differs")
        }
        fuzzCheck(split == whole, "incremental split \(split.count) NAL units, whole-buffer scan \(whole.count)")

        let reader = AnnexBReader(bytes: bytes)
        var read: [AnnexBNALUnit] = []
        do {
            while let unit = try reader.next() { read.append(unit.location) }
        } catch {
            fatalError("reading bytes cannot fail: \(error)")
        }
        fuzzCheck(read == whole, "AnnexBReader \(read.count) NAL units, whole-buffer scan \(whole.count)")

        let parser = H264StreamParser.parse(annexB: bytes)
        _ = parser.decodeIndexesInDisplayOrder
        for diagnostic in parser.diagnostics { _ = diagnostic.description }
    }
}
