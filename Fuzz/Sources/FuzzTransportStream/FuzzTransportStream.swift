// A transport stream: the packet framer (any layout, lost sync), the demuxer (tables, PES
// packets, counters), the reader (access units timed by their PES timestamps) with options the
// input chooses (the program, the damage policy, the chunk size), every sample checked; and
// one input in four, the samples written again by the muxer, which must read back the same.
import FuzzSupport
import H264Bitstream
import ISOBMFF
import MPEGTS
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
        // Written by the muxer and read again: whatever the samples, the muxer's packets are
        // whole, their counters unbroken, their sync never lost, and every sample it took is
        // read back (a picture the fuzzer made may split in two when its parameter sets read
        // differently the second time, never vanish).
        var muxer: TransportStreamMuxer
        do { muxer = try TransportStreamMuxer() } catch { fatalError("the default muxer refused: \(error)") }
        var bytes: [UInt8] = []
        var written = 0
        for sample in samples {
            do { try muxer.append(sample, to: &bytes) } catch { break }  // (a sample the muxer cannot frame is refused with a reason)
            written += 1
        }
        fuzzCheck(bytes.count % 188 == 0, "the muxer wrote \(bytes.count) bytes, not whole packets")
        fuzzCheck(stride(from: 0, to: bytes.count, by: 188).allSatisfy { bytes[$0] == 0x47 }, "a packet without its sync byte")
        let again = TransportStreamReader(bytes: bytes, options: .init(startsAtSyncSample: false, keepsDamagedPESPackets: true))
        _ = try? again.readAll()
        let statistics = again.statistics
        fuzzCheck(statistics.demuxer.continuityErrors == 0 && statistics.syncLosses == 0 && statistics.demuxer.damagedPESPackets == 0,
                  "the muxer's own output reads damaged: \(again.warnings)")
        fuzzCheck(statistics.demuxer.pesPackets == written, "\(written) samples written, \(statistics.demuxer.pesPackets) PES packets read back")
    }
}
