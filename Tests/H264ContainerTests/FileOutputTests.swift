import Foundation
@testable import ISOBMFF
import MPEGTS
import SystemIO
import SystemPackage
import MediaCore
import Testing

/// FileOutput gathers small writes and references large pieces, writing on 1 MB boundaries:
/// whatever the mix, the file holds the bytes in the order they were given.
@Suite struct FileOutputTests {
    @Test func mixedWritesLandInOrder() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-fileoutput-\(UUID().uuidString)").path
        defer { unlink(path) }
        var generator = SystemRandomNumberGenerator()
        var expected: [UInt8] = []
        do {
            let output = FileOutput(descriptor: try FileDescriptor.creating(path), path: path, ownsDescriptor: true)
            var next: UInt8 = 0
            func bytes(_ count: Int) -> [UInt8] {
                (0..<count).map { _ in next &+= 1; return next }
            }
            // About 6 MB: length prefixes, small and large NAL units chained as samples are, and
            // plain small writes (box headers), so chunks end inside pieces of every kind.
            while expected.count < 6 << 20 {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:
                    let small = bytes(Int.random(in: 1..<64, using: &generator))
                    try output.write(small)
                    expected += small
                default:
                    var parts: [BlockBuffer] = []
                    for _ in 0..<Int.random(in: 1...3, using: &generator) {
                        let prefix = bytes(4), payload = bytes(Int.random(in: [10, 5000, 70_000, 900_000].randomElement(using: &generator)!...1_000_000, using: &generator))
                        parts += [BlockBuffer(prefix), BlockBuffer(payload)]
                        expected += prefix + payload
                    }
                    try output.write(BlockBuffer(chaining: parts))
                }
                #expect(output.position == UInt64(expected.count))
            }
            try output.flush()
        }
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == expected)
    }

    /// More than a buffer of small writes between large pieces: the buffer is compacted, not
    /// flushed off the chunk grid, and nothing is lost.
    @Test func manySmallWritesBetweenLargePieces() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-fileoutput-\(UUID().uuidString)").path
        defer { unlink(path) }
        var expected: [UInt8] = []
        do {
            let output = FileOutput(descriptor: try FileDescriptor.creating(path), path: path, ownsDescriptor: true)
            for round in 0..<3 {
                for index in 0..<200_000 {
                    let small = [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: round), 7, 9, 11]
                    try output.write(small)
                    expected += small
                }
                let large = [UInt8](repeating: UInt8(round), count: 300_000)
                try output.write(BlockBuffer(chaining: [BlockBuffer([1, 2, 3, 4]), BlockBuffer(large)]))
                expected += [1, 2, 3, 4] + large
            }
            try output.patch([0xAA, 0xBB], at: 10)
            expected[10] = 0xAA
            expected[11] = 0xBB
            try output.write([5, 6])
            expected += [5, 6]
            try output.flush()
        }
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == expected)
    }
}
