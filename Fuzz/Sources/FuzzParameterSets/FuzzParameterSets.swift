// NAL units given one by one (a 2-byte big-endian length before each, so mutations keep the
// framing): SPS and PPS into a registry, slice headers against it, SEI messages and their
// payloads, and the values derived from each parameter set.
import FuzzSupport
import H264Bitstream

@_cdecl("FuzzParameterSets_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var registry = ParameterSetRegistry()
        var active: SequenceParameterSet?
        var offset = 0
        while offset + 2 <= input.count {
            let length = Int(input[offset]) << 8 | Int(input[offset + 1])
            offset += 2
            let end = min(input.count, offset + length)
            let unit = [UInt8](input[offset..<end])
            offset = end
            guard let first = unit.first else { continue }
            parse(unit, header: NALUnitHeader(byte: first), registry: &registry, active: &active)
        }
    }
}

func parse(_ unit: [UInt8], header: NALUnitHeader, registry: inout ParameterSetRegistry, active: inout SequenceParameterSet?) {
    switch header.nalUnitType {
    case .sps:
        guard let (sps, _) = try? registry.add(spsNALUnit: unit.span) else { return }
        active = sps
        // Every derived value, as inspect and the sample builder use them.
        _ = (sps.width, sps.height, sps.codedWidth, sps.codedHeight, sps.maxFrameNum, sps.maxPicOrderCntLsb)
        _ = (sps.maxDpbFrames, sps.reorderDepth, sps.profileName, sps.frameRate, sps.chromaArrayType, sps.bitDepthLuma)
    case .pps:
        _ = try? registry.add(ppsNALUnit: unit.span)
    case .nonIDRSlice, .idrSlice, .sliceDataPartitionA:
        let rbsp = RBSP.unescape(unit.span.extracting(1...))
        var reader = BitReader(rbsp.span)
        guard let slice = try? SliceHeader(parsing: &reader, nalUnitHeader: header, parameterSets: registry),
              let sps = registry.sps(forPPS: slice.picParameterSetId) else { return }
        var counter = PictureOrderCounter()
        _ = counter.compute(for: slice, sequenceParameterSet: sps)
    case .sei:
        guard let messages = try? SEIMessage.messages(inNALUnit: unit.span) else { return }
        for message in messages {
            switch message.payloadType {
            case 0: _ = try? BufferingPeriod(payload: message.payload) { registry.sps($0) }
            case 1: if let active { _ = try? PicTiming(payload: message.payload, activeSequenceParameterSet: active) }
            case 5: _ = try? UserDataUnregistered(payload: message.payload)
            case 6: _ = try? RecoveryPoint(payload: message.payload)
            default: break
            }
        }
    default:
        break
    }
}
