public import H264Bitstream

/// Turns sample buffers back into an Annex-B elementary stream (seed 003, "Converting
/// CMSampleBuffers into H.264 elementary stream packaging"), as FFmpeg's `h264_mp4toannexb`
/// does: length prefixes become start codes, four bytes before the first NAL unit of a sample
/// and before parameter sets, three elsewhere; the format description's SPS and PPS go before
/// every IDR picture that does not carry its own, so a receiver can join at any IDR; and when
/// the format description changes, its parameter sets go before the next sample.
public struct AnnexBWriter: Sendable {
    /// Insert the format description's parameter sets where they are missing (on by default).
    public var insertsParameterSets: Bool
    private var previousFormat: VideoFormatDescription?
    /// Parameter sets written, counting those inserted.
    public private(set) var insertedParameterSetCount = 0

    /// A writer; `insertsParameterSets` puts the format's SPS and PPS where samples lack them.
    public init(insertsParameterSets: Bool = true) {
        self.insertsParameterSets = insertsParameterSets
    }

    /// Appends one sample's NAL units, with any parameter sets it needs first.
    /// A sample that is not H.264 video is an error (an Annex-B stream holds video alone).
    public mutating func append(_ sample: SampleBuffer, to output: inout [UInt8]) throws(BitstreamError) {
        guard let format = sample.videoFormatDescription else {
            throw BitstreamError(.invalidStructure, "a \(sample.formatDescription.codecName) sample in an H.264 elementary stream")
        }
        let formatChanged = previousFormat.map { $0 != format } ?? true
        previousFormat = format
        var sawSPS = false, sawPPS = false, inserted = false, first = true
        var index = 0
        let insert = insertsParameterSets
        var count = 0
        try sample.forEachNALUnit { nal throws(BitstreamError) in
            defer { index += 1 }
            guard let headerByte = nal.first else { return }
            let type = NALUnitHeader(byte: headerByte).nalUnitType
            switch type {
            case .sps: sawSPS = true
            case .pps:
                // An in-band PPS needs its SPS first: prepend the description's, as h264_mp4toannexb does.
                if insert && !sawSPS {
                    for ps in format.sequenceParameterSets {
                        AnnexB.append(nalUnit: ps.span, startCodeLength: 4, to: &output)
                        count += 1
                    }
                    first = false
                    sawSPS = true
                }
                sawPPS = true
            default: break
            }
            let isVCL = (1...5).contains(type.rawValue)
            if insert && !inserted && isVCL && (type == .idrSlice || formatChanged) {
                inserted = true
                if !sawSPS {
                    for ps in format.sequenceParameterSets + format.sequenceParameterSetExtensions {
                        AnnexB.append(nalUnit: ps.span, startCodeLength: 4, to: &output)
                        count += 1
                    }
                }
                if !sawPPS {
                    for ps in format.pictureParameterSets {
                        AnnexB.append(nalUnit: ps.span, startCodeLength: 4, to: &output)
                        count += 1
                    }
                }
                first = false
            }
            let long = first || type == .sps || type == .pps
            first = false
            AnnexB.append(nalUnit: nal.bindMemory(to: UInt8.self).span, startCodeLength: long ? 4 : 3, to: &output)
        }
        insertedParameterSetCount += count
    }

    /// A whole stream from samples in decoding order.
    public static func annexB(from samples: some Sequence<SampleBuffer>, insertsParameterSets: Bool = true) throws(BitstreamError) -> [UInt8] {
        var writer = AnnexBWriter(insertsParameterSets: insertsParameterSets)
        var output: [UInt8] = []
        for sample in samples { try writer.append(sample, to: &output) }
        return output
    }
}
