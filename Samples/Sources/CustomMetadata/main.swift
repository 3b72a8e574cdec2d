// Seed 004, custom metadata: QuickTime metadata in a MOV (`meta` with an `mdta` handler: a
// table of reverse-DNS keys and typed values, what AVFoundation's AVMetadataItem writes) and
// user data in an MP4 (`udta` boxes with four-character keys, the one custom space MP4 players
// keep), plus a common title each container stores its own way. Both files are written with
// the sample stream as video, read back, and their items printed.
//
//     swift run CustomMetadata [IN.264]
import H264Kit
#if canImport(Glibc)
import Glibc
#endif

let input = CommandLine.arguments.dropFirst().first ?? "Media/testsrc2-320x240-bframes.264"

let movItems: [MetadataItem] = [
    MetadataItem(key: .common(.title), value: .utf8("A test pattern")),
    MetadataItem(key: .quickTime("com.example.camera.model"), value: .utf8("H264Kit Sample Camera")),
    MetadataItem(key: .quickTime("com.example.camera.iso"), value: .signed(800)),
    MetadataItem(key: .quickTime("com.example.camera.exposure"), value: .float64(1.0 / 50)),
]
let mp4Items: [MetadataItem] = [
    MetadataItem(key: .common(.title), value: .utf8("A test pattern")),
    MetadataItem(key: .userData("xmpl"), value: .data(Array("custom bytes, kept as they are".utf8))),
    MetadataItem(key: .userData("shot"), value: .data([0x00, 0x2A])),
]

do {
    for (output, items) in [("CustomMetadata.mov", movItems), ("CustomMetadata.mp4", mp4Items)] {
        // The writer checks the items against the container first: an `mdta` key in an MP4 is
        // an error at `init`, before anything is written.
        let writer = try MovieWriter(path: output, options: .init(fileType: MovieFileType(path: output), metadata: items))
        let reader = try SampleBufferReader(path: input)
        while let sample = try reader.next() { try writer.append(sample) }
        _ = try writer.finish()

        let movie = try MovieReader(path: output)
        print("\(output): \(movie.metadata.count) items")
        for item in movie.metadata { print("  \(item.key) = \(item.value)") }
        // A common item comes back under the key the container stored it with (MOV: udta ©nam;
        // MP4: the iTunes ©nam): the same common key and value.
        let missing = items.filter { item in
            !movie.metadata.contains { $0 == item || ($0.commonKey != nil && $0.commonKey == item.commonKey && $0.value == item.value) }
        }
        if !missing.isEmpty { throw SampleError("\(output): not read back: \(missing)") }
    }
    // The MP4 refuses QuickTime metadata: players would not read it.
    do {
        _ = try MovieWriter(path: "CustomMetadata-refused.mp4", options: .init(fileType: .mp4, metadata: [movItems[1]]))
        throw SampleError("an mdta key in an MP4 was accepted")
    } catch let error as ContainerError {
        print("an mdta key in an MP4: refused (\(error))")
    }
} catch {
    print("CustomMetadata: \(error)")
    exit(1)
}

/// An error of this program's own.
struct SampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
