// An avcC record (the AVCDecoderConfigurationRecord) into a format description and back, then
// the rest of the input as a length-prefixed sample with the record's NAL length size.
import FuzzSupport
import H264Bitstream
import MediaCore

@_cdecl("FuzzAVCC_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        guard input.count >= 2 else { return }
        // The record's length first (2 bytes), so the rest can be a sample.
        let recordLength = min(input.count - 2, Int(input[0]) << 8 | Int(input[1]))
        let record = [UInt8](input[2..<(2 + recordLength)])
        let sample = [UInt8](input[(2 + recordLength)...])
        guard let format = try? VideoFormatDescription(avcC: record) else {
            for lengthSize in [1, 2, 4] { _ = try? AVCC.nalUnitRanges(in: sample.span, lengthSize: lengthSize) }
            return
        }
        _ = (format.description, format.codecString, format.width, format.height, format.colour, format.sampleAspectRatio)
        // What the description writes must read back to the same description.
        let written = format.avcC
        let reread: VideoFormatDescription
        do { reread = try VideoFormatDescription(avcC: written) } catch { fatalError("avcC written from a description does not read back: \(error)") }
        fuzzCheck(reread == format, "avcC round trip changed the description")
        fuzzCheck(reread.avcC == written, "avcC round trip changed the record")
        guard let ranges = try? AVCC.nalUnitRanges(in: sample.span, lengthSize: format.nalUnitLengthSize) else { return }
        // Framing the NAL units again gives the sample back (zero-length units aside).
        var reframed: [UInt8] = []
        for range in ranges {
            let fits: ()? = try? AVCC.append(nalUnit: sample.span.extracting(range), lengthSize: format.nalUnitLengthSize, to: &reframed)
            fuzzCheck(fits != nil, "a NAL unit read with a \(format.nalUnitLengthSize)-byte length does not fit one")
        }
        fuzzCheck(reframed.count <= sample.count, "reframed sample grew")
    }
}
