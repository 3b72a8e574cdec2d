// A YUV4MPEG2 file: the stream header, then every frame header and plane through Y4MReader
// (mapped, as a file given by path is read).
import FuzzSupport
import MediaCore
import MediaIO

#if canImport(Glibc)
import Glibc
#endif

let path = "/dev/shm/h264kit-fuzz-\(getpid()).y4m"

@_cdecl("FuzzY4M_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        if let end = input.firstIndex(of: 0x0A) { _ = try? Y4MHeader(parsing: [UInt8](input[..<end])) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { fatalError("cannot create \(path)") }
        _ = input.baseAddress.map { write(fd, $0, input.count) }
        close(fd)
        defer { unlink(path) }
        guard let reader = try? Y4MReader(path: path) else { return }
        while let picture = try? reader.next() {
            _ = (picture.width, picture.height)
        }
    }
}
