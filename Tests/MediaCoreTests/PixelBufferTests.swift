import Foundation
import MediaCore
import Synchronization
import TestSupport
import Testing

@Suite struct PixelBufferTests {
    static let formats = [
        "gray", "gray10le", "gray12le", "gray14le", "yuv420p", "yuv420p10le", "yuv420p12le", "yuv420p14le",
        "yuv422p", "yuv422p10le", "yuv444p", "yuv444p12le", "gbrp", "gbrp10le", "nv12", "rgb24", "bgra",
    ]

    /// Our packed frame size equals the bytes ffmpeg writes for one rawvideo frame, odd sizes included.
    @Test(.requires(.ffmpeg), arguments: formats)
    func packedSizeMatchesFFmpegRawvideo(_ name: String) throws {
        let format = try #require(PixelFormat(name: name))
        #expect(format.name == name)
        for (width, height) in [(17, 9), (64, 48)] {
            let buffer = PixelBuffer(format: format, width: width, height: height)
            for plane in buffer.planes { #expect(plane.bytesPerRow % PixelBuffer.alignment == 0 && plane.bytesPerRow >= plane.rowBytes) }
            let result = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=gray:s=64x64", "-vf", "scale=\(width):\(height)", "-frames:v", "1",
                                            "-pix_fmt", name, "-f", "rawvideo", "-"])
            #expect(result.status == 0)
            #expect(buffer.packedSize == result.stdout.count, "\(name) \(width)x\(height)")
        }
    }

    @Test func planeGeometry() {
        let yuv = PixelBuffer(format: .yuv(.yuv420, bitDepth: 10), width: 17, height: 9)
        #expect(yuv.planes.map(\.width) == [17, 9, 9])
        #expect(yuv.planes.map(\.height) == [9, 5, 5])
        #expect(yuv.planes.map(\.rowBytes) == [34, 18, 18])
        let nv12 = PixelBuffer(format: .nv12, width: 17, height: 9)
        #expect(nv12.planes.map(\.rowBytes) == [17, 18])
        let yuv422 = PixelBuffer(format: .yuv422p, width: 16, height: 8)
        #expect(yuv422.planes.map(\.height) == [8, 8, 8])
        #expect(yuv422.planes.map(\.width) == [16, 8, 8])
        #expect(PixelFormat(name: "yuv420p9le")?.bitDepth == 9)
        #expect(PixelFormat(name: "yuv410p") == nil)
    }

    @Test func packedBytesDropRowPaddingAndCropSharesMemory() {
        let buffer = PixelBuffer(format: .yuv420p, width: 4, height: 4)
        for plane in 0..<3 {
            buffer.withUnsafeMutableBytes(ofPlane: plane) { bytes in
                let p = buffer.planes[plane]
                for y in 0..<p.height { for x in 0..<p.width { bytes[y * p.bytesPerRow + x] = UInt8(plane * 100 + y * 10 + x) } }
            }
        }
        var packed: [UInt8] = []
        buffer.appendPacked(to: &packed)
        let luma: [UInt8] = (0..<4).flatMap { y in (0..<4).map { x in UInt8(y * 10 + x) } }
        let chroma: [UInt8] = [100, 101, 110, 111, 200, 201, 210, 211]
        #expect(packed == luma + chroma)
        let crop = buffer.cropped(left: 2, top: 2, width: 2, height: 2)
        var cropped: [UInt8] = []
        crop.appendPacked(to: &cropped)
        #expect(cropped == [22, 23, 32, 33, 111, 211])
        // A view: writing through the parent shows in the crop.
        buffer.withUnsafeMutableBytes(ofPlane: 0) { $0[2 * buffer.planes[0].bytesPerRow + 2] = 99 }
        #expect(crop.withUnsafeBytes(ofPlane: 0) { $0[0] } == 99)
    }

    @Test func borrowedPlanesAreReleasedOnceByTheLastView() {
        let released = Atomic<Int>(0)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: 32 * 8 + 2 * 16 * 4, alignment: 64)
        nonisolated(unsafe) let owned = memory
        var view: PixelBuffer?
        do {
            let buffer = PixelBuffer(format: .yuv420p, width: 16, height: 8,
                                     borrowing: [(memory, 32), (memory + 256, 16), (memory + 320, 16)],
                                     release: { released.add(1, ordering: .relaxed); owned.deallocate() })
            #expect(buffer.planes[0].bytesPerRow == 32)
            view = buffer.cropped(left: 8, top: 0, width: 8, height: 8)
        }
        #expect(released.load(ordering: .relaxed) == 0)
        #expect(view?.width == 8)
        view = nil
        #expect(released.load(ordering: .relaxed) == 1)
    }
}

@Suite struct TimebaseTests {
    static func seconds(_ s: Int64) -> MediaTime { MediaTime(value: s, timescale: 1) }

    @Test func timeFollowsTheClockAtTheRate() {
        let clock = ManualClock()
        let timebase = Timebase(clock: clock, time: Self.seconds(10))
        clock.advance(by: Self.seconds(5))
        #expect(timebase.time == Self.seconds(10), "a new timebase is paused")
        timebase.setRate(1)
        clock.advance(by: MediaTime(value: 3, timescale: 2))
        #expect(timebase.time == MediaTime(value: 23, timescale: 2))
        timebase.setRate(2)
        clock.advance(by: Self.seconds(1))
        #expect(timebase.time == MediaTime(value: 27, timescale: 2))
        timebase.setRate(-1)
        clock.advance(by: Self.seconds(2))
        #expect(timebase.time == MediaTime(value: 23, timescale: 2))
        timebase.setTime(Self.seconds(0))
        #expect(timebase.time == Self.seconds(0))
        timebase.setRate(0.5, time: Self.seconds(100))
        clock.advance(by: Self.seconds(4))
        #expect(timebase.time == Self.seconds(102))
    }

    @Test func clockDurationUntilATarget() {
        let clock = ManualClock()
        let timebase = Timebase(clock: clock, time: Self.seconds(0), rate: 2)
        #expect(timebase.clockDuration(until: Self.seconds(3)) == MediaTime(value: 3, timescale: 2))
        #expect(timebase.clockDuration(until: Self.seconds(-1)) == nil)
        timebase.setRate(0)
        #expect(timebase.clockDuration(until: Self.seconds(1)) == nil)
    }

    @Test func hostClockAdvances() {
        let clock = HostClock()
        let a = clock.currentTime
        var b = clock.currentTime
        while !(a < b) { b = clock.currentTime }
        #expect(a < b)
    }
}
