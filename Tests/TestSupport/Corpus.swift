public import Foundation

/// The shared corpus named by `H264KIT_CORPUS` (see the corpus README): its MANIFEST rows.
public enum Corpus {
    /// The corpus directory, if `H264KIT_CORPUS` names one with a MANIFEST.tsv.
    public static var directory: URL? {
        guard let path = ProcessInfo.processInfo.environment["H264KIT_CORPUS"], !path.isEmpty else { return nil }
        let url = URL(fileURLWithPath: path)
        return FileManager.default.fileExists(atPath: url.appendingPathComponent("MANIFEST.tsv").path) ? url : nil
    }

    /// One MANIFEST row.
    public struct Entry: Sendable, CustomStringConvertible {
        public var path: String
        /// Frames ffmpeg decodes (nil when ffmpeg could not open the file).
        public var frames: Int?
        public var notes: String
        public var isContainer: Bool { path.hasSuffix(".mp4") || path.hasSuffix(".mov") }
        public var ffmpegFailed: Bool { frames == nil || notes.contains("FFMPEG FAILED") }
        public var url: URL { Corpus.directory!.appendingPathComponent(path) }
        public var description: String { path }
        public func bytes() throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
    }

    public static func entries() -> [Entry] {
        guard let directory, let text = try? String(contentsOf: directory.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 12 else { return nil }
            return Entry(path: f[0], frames: f[5].isEmpty ? nil : Int(f[9]), notes: f[11])
        }
    }
}
