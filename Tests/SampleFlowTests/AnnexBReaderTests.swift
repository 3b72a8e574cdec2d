import Foundation
import H264Bitstream
import TestSupport
import SampleFlow
import SystemPackage
import Testing

@Suite("Annex-B reader")
struct AnnexBReaderTests {
    static func units(_ reader: AnnexBReader) throws -> [(AnnexBNALUnit, [UInt8])] {
        var result: [(AnnexBNALUnit, [UInt8])] = []
        while let unit = try reader.next() { result.append((unit.location, Array(unit.bytes))) }
        return result
    }

    /// A mapped file, a descriptor read in chunks of any size, bytes in memory, and the async
    /// form: the same units at the same offsets as the whole-buffer scan.
    @Test(arguments: ["cisco-bframe-cabac.264", "jcodec-i8x8-high.264", "jcodec-random_1.264"])
    func everySourceGivesTheWholeBufferScan(_ name: String) async throws {
        let bytes = try Checkout.fixture(name)
        let expected = AnnexB.nalUnits(in: bytes).map { ($0, Array(bytes[$0.payload])) }
        func same(_ got: [(AnnexBNALUnit, [UInt8])]) -> Bool { got.map(\.0) == expected.map(\.0) && got.map(\.1) == expected.map(\.1) }
        #expect(same(try Self.units(AnnexBReader(bytes: bytes))))
        let path = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let mapped = try AnnexBReader(path: path)
        #expect(mapped.totalBytes == bytes.count)
        #expect(same(try Self.units(mapped)))
        // Read to its end, a file's size is still known, and all of it read (progress at 100%).
        #expect(mapped.totalBytes == bytes.count && mapped.bytesRead == bytes.count)
        for chunk in [1, 7, 4096] {
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            #expect(same(try Self.units(AnnexBReader(fileDescriptor: FileDescriptor(rawValue: fd), name: path, options: .init(chunkSize: chunk)))), "chunks of \(chunk)")
        }
        var streamed: [(AnnexBNALUnit, [UInt8])] = []
        for try await unit in try AnnexBReader(path: path) { streamed.append((unit.location, Array(unit.bytes))) }
        #expect(same(streamed))
    }

    /// A file large enough for the scan-ahead thread: the same units as in order.
    @Test func aLargeFileScannedAheadGivesEveryUnit() throws {
        var bytes: [UInt8] = []
        var expected: [[UInt8]] = []
        var seed: UInt32 = 1
        while bytes.count < 20 << 20 {
            seed = seed &* 1_103_515_245 &+ 12345
            let size = Int(seed >> 16) % 60_000 + 1
            var unit: [UInt8] = [0x65]
            for i in 0..<size { unit.append(UInt8(truncatingIfNeeded: (i &* 7) | 1)) }
            expected.append(unit)
            bytes += [0, 0, 0, 1] + unit
        }
        let path = try Checkout.temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let got = try Self.units(AnnexBReader(path: path)).map(\.1)
        #expect(got.count == expected.count)
        #expect(got == expected)
    }

    @Test func errorsSayWhereAndWhy() throws {
        #expect { try AnnexBReader(path: "/nonexistent/stream.264") } throws: { "\($0)".contains("cannot open: No such file or directory") }
        let empty = try Checkout.temporaryFile([])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect { try AnnexBReader(path: empty) } throws: { "\($0)".contains("the file is empty") }
        // A unit over the cap, from a file and from a descriptor.
        let big = try Checkout.temporaryFile([0, 0, 1, 0x65] + [UInt8](repeating: 7, count: 5000))
        defer { try? FileManager.default.removeItem(atPath: big) }
        #expect { _ = try AnnexBReader(path: big, options: .init(maximumNALUnitSize: 1000)).next() } throws: {
            ($0 as? SampleFlowError)?.bitstreamError?.code == .invalidLength && ($0 as? SampleFlowError)?.bitstreamError?.byteOffset == 0
        }
        let fd = open(big, O_RDONLY)
        defer { close(fd) }
        #expect { _ = try AnnexBReader(fileDescriptor: FileDescriptor(rawValue: fd), name: big, options: .init(maximumNALUnitSize: 1000, chunkSize: 512)).next() } throws: {
            ($0 as? SampleFlowError)?.bitstreamError?.code == .invalidLength
        }
    }
}

/// Stopping early on a file many windows long: the reader let go after a few units, in each
/// of its two large-file modes (a helper thread a few windows ahead, releasing pages behind;
/// the two halves at once), mid-file and before any unit. Letting go used to trap in
/// libdispatch (a semaphore released below its initial count) on every file over 8 MB.
@Suite("Annex-B reader stopped early")
struct AnnexBReaderEarlyStopTests {
    @Test(arguments: [true, false]) func lettingGoMidFileIsClean(releasesPagesBehind: Bool) throws {
        for taken in [0, 5, 2_000, 40_000] {
            for pauses in [false, true] {
                let reader = try AnnexBReader(path: LargeStream.annexB, options: .init(releasesPagesBehind: releasesPagesBehind))
                for _ in 0..<taken { _ = try reader.next() }
                #expect(taken == 0 || reader.bytesRead > 0)
                // A reader that stops to do other work: the helper meanwhile fills every
                // window it may run ahead (the state that trapped).
                if pauses { Thread.sleep(forTimeInterval: 0.1) }
            }
        }
    }

    @Test func breakingOutOfTheAsyncFormIsClean() async throws {
        var count = 0
        for try await _ in try AnnexBReader(path: LargeStream.annexB) {
            count += 1
            if count == 5 { break }
        }
        #expect(count == 5)
    }
}
