import Foundation

/// A transport stream damaged the way a satellite or IP capture is: one 188-byte packet in 37
/// lost, about 1% of the rest with a byte flipped past the header, and the end cut inside a
/// packet. Deterministic (a fixed linear congruential generator), so every run damages the same
/// bytes.
public enum LossyTransportStream {
    /// `clean` damaged; the packets lost and the packets flipped.
    public static func damage(_ clean: [UInt8]) -> (bytes: [UInt8], lost: Int, flipped: Int) {
        var state: UInt64 = 40
        func random() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        var out: [UInt8] = []
        out.reserveCapacity(clean.count)
        var lost = 0, flipped = 0
        for (index, start) in stride(from: 0, to: clean.count - 187, by: 188).enumerated() {
            if index % 37 == 36 {
                lost += 1
                continue
            }
            var packet = Array(clean[start..<(start + 188)])
            if random() % 100 == 0 {
                packet[4 + Int(random() % 184)] ^= 0xFF
                flipped += 1
            }
            out += packet
        }
        return (Array(out.dropLast(100)), lost, flipped)
    }

    /// ffmpeg's 1280x720 TS of 90 frames (x264 veryfast), damaged, written at `path`.
    public static func make(at path: String) throws {
        let clean = path + ".clean.ts"
        defer { try? FileManager.default.removeItem(atPath: clean) }
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-frames:v", "90", "-c:v", "libx264", "-preset", "veryfast",
                               "-pix_fmt", "yuv420p", "-f", "mpegts", "-y", clean])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clean)))
        try Data(damage(bytes).bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The frames `ffmpeg -c copy` keeps of the stream at `path`, decoded on one thread (frame
    /// threads conceal damage differently from run to run): their MD5s.
    public static func ffmpegCopyFrames(_ path: String) throws -> [String] {
        let copy = path + ".ffmpeg-copy.mp4"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        _ = try run("ffmpeg", ["-v", "quiet", "-i", path, "-c", "copy", "-y", copy])
        return try ffmpegFrameHashes(copy)
    }
}
