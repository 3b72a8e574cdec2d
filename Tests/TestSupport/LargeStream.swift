import Foundation

/// A long Annex-B stream made without any tool: the sample stream of `Samples/Media` (90
/// frames of 320x240 with B-frames, an IDR each second) repeated until the file holds at least
/// 50 MB, many of the reader's 1 MB windows and far more than a small fixture: what the early
/// stops are tested on (`--frames`, a `break`, a closed pipe, SIGINT). Written once per test
/// process, under the temporary directory, and shared.
public enum LargeStream {
    /// The size the stream reaches at least.
    public static let minimumBytes = 50 << 20

    /// The one piece repeated.
    public static let piece = Checkout.root.appendingPathComponent("Samples/Media/testsrc2-320x240-bframes.264").path

    /// Frames in one piece.
    public static let framesPerPiece = 90

    /// The stream's path (written at first use).
    public static let annexB: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264kit-large-\(getpid()).264").path
        let piece = (try? Data(contentsOf: URL(fileURLWithPath: Self.piece))) ?? Data()
        precondition(!piece.isEmpty, "the sample stream \(Self.piece) is missing")
        var whole = Data(capacity: minimumBytes + piece.count)
        while whole.count < minimumBytes { whole.append(piece) }
        precondition(FileManager.default.createFile(atPath: path, contents: whole), "cannot write \(path)")
        return path
    }()

    /// How many pieces the stream holds.
    public static var pieces: Int {
        let piece = (try? FileManager.default.attributesOfItem(atPath: Self.piece)[.size] as? Int) ?? 1
        return (minimumBytes + piece - 1) / piece
    }
}
