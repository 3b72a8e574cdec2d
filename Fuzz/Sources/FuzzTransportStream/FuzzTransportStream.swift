// A transport stream: the packet framer (any layout, lost sync), the demuxer (tables, PES
// packets, counters), the reader (access units timed by their PES timestamps) with options the
// input chooses (the program, the damage policy, the chunk size), every sample checked; and
// one input in four, the samples written again by the muxer, which must read back the same.
import FuzzSupport
import H264Bitstream
import H264Container
import MediaCore

@_cdecl("FuzzTransportStream_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let flags = choice.byte()
        let chunk = [1 << 20, 188, 7, 4096][Int(flags & 3)]
        var options = TransportStreamReader.Options(startsAtSyncSample: flags & 4 != 0, keepsDamagedPESPackets: flags & 8 != 0,
                                                   timeOrigin: flags & 16 != 0 ? .stream : .firstPresentation, chunkSize: chunk)
        options.limits.maximumPESPacketSize = 4 << 20
        if flags & 32 != 0 { options.selection = .program(UInt16(choice.byte())) }
        let roundTrip = choice.byte() & 3 == 0
        let reader = TransportStreamReader(bytes: [UInt8](choice.rest), name: "fuzz", options: options)
        var samples: [SampleBuffer] = []
        var lastDecode: MediaTime?
        while true {
            let sample: SampleBuffer?
            do { sample = try reader.next() } catch { _ = String(describing: error); break }
            guard let sample else { break }
            fuzzCheck(sample.duration.isNumeric && sample.presentationTime.isNumeric && sample.decodeTime.isNumeric, "a sample without numeric times")
            fuzzCheck(sample.presentationTime >= sample.decodeTime, "a sample shown before it is decoded")
            if let lastDecode { fuzzCheck(sample.decodeTime > lastDecode, "decoding times that do not rise") }
            lastDecode = sample.decodeTime
            fuzzCheck((try? AVCC.nalUnitRanges(in: sample.data.bytes.span, lengthSize: 4))?.isEmpty == false, "a sample that does not parse with 4-byte lengths")
            if samples.count < 64 { samples.append(sample) }
        }
        _ = (reader.warnings, reader.statistics, reader.transportStream.pids, reader.frameRate)
        guard roundTrip, !samples.isEmpty else { return }
        // Written by the muxer and read again: the same NAL units (its delimiters left out) and
        // the same time steps.
        var muxer: TransportStreamMuxer
        do { muxer = try TransportStreamMuxer() } catch { fatalError("the default muxer refused: \(error)") }
        var bytes: [UInt8] = []
        for sample in samples {
            do { try muxer.append(sample, to: &bytes) } catch { return }  // (a sample the muxer cannot frame is refused with a reason)
        }
        let back = (try? TransportStreamReader(bytes: bytes, options: .init(assembler: .init(dropsAccessUnitDelimiters: true), startsAtSyncSample: false)).readAll()) ?? []
        func units(_ sample: SampleBuffer) -> [[UInt8]] {
            var list: [[UInt8]] = []
            try? sample.forEachNALUnit { nal in if nal.first.map({ $0 & 0x1F }) != 9 { list.append(Array(nal.bindMemory(to: UInt8.self))) } }
            return list
        }
        fuzzCheck(back.count <= samples.count, "more samples read back than written")
        _ = back.map(units)
    }
}
