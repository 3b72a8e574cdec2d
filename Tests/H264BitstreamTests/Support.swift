import Foundation
import H264Bitstream
import TestSupport

enum Fixtures {
    static func bytes(_ name: String) throws -> [UInt8] { try Checkout.fixture(name) }

    /// The corpus directory named by H264KIT_CORPUS, if set and present.
    static var corpus: URL? {
        guard let path = ProcessInfo.processInfo.environment["H264KIT_CORPUS"], !path.isEmpty else { return nil }
        let url = URL(fileURLWithPath: path)
        return FileManager.default.fileExists(atPath: url.appendingPathComponent("MANIFEST.tsv").path) ? url : nil
    }
}

/// ffprobe's decode index for each output frame, in display order (coded_picture_number).
func ffprobeDisplayOrder(_ bytes: [UInt8]) throws -> [Int] {
    let path = try Checkout.temporaryFile(bytes)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = try run("ffprobe", ["-v", "error", "-threads", "1", "-f", "h264", "-show_entries", "frame=coded_picture_number", "-of", "csv=p=0", path])
    guard result.status == 0 else { throw TestFailure("ffprobe failed: \(result.stderrText)") }
    // A frame with side data prints "N," and an empty line: keep the first field of non-empty lines.
    return result.stdoutText.split(whereSeparator: \.isNewline)
        .compactMap { Int($0.split(separator: ",").first?.trimmingCharacters(in: .whitespaces) ?? "") }
}

