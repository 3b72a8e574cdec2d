import Dispatch
import H264Bitstream
#if canImport(Glibc)
import Glibc
#endif

/// Finds every Annex-B start-code prefix of a regular file, on several threads.
///
/// Each thread reads its part of the file with `pread` into a buffer that stays in cache and
/// searches it; the kernel's copy out of the page cache is faster than faulting in a mapping
/// page by page, and the threads split both the copying and the search. The prefixes come
/// back in file order, so the NAL units can then be walked over a mapping of the same file.
func startCodePrefixes(path: String, size: Int, threads: Int) throws(ToolError) -> [Int] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ToolError("\(path): cannot open: \(errnoText())") }
    defer { close(fd) }
    let threads = max(1, threads)
    let window = 1 << 20
    let part = (size + threads - 1) / threads
    let results = UnsafeMutableBufferPointer<[Int]>.allocate(capacity: threads)
    results.initialize(repeating: [])
    let failures = UnsafeMutableBufferPointer<Int32>.allocate(capacity: threads)
    failures.initialize(repeating: 0)
    defer { results.deallocate(); failures.deallocate() }
    nonisolated(unsafe) let sharedResults = results
    nonisolated(unsafe) let sharedFailures = failures
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        let start = thread * part
        let end = min(size, start + part)
        var found: [Int] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: window + 2, alignment: 64)
        defer { buffer.deallocate() }
        var position = start
        while position < end {
            // Read the window plus the two bytes a prefix at its end needs.
            let want = min(window + 2, size - position)
            var got = 0
            while got < want {
                let n = pread(fd, buffer.baseAddress! + got, want - got, off_t(position + got))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { sharedFailures[thread] = n < 0 ? errno : EIO; sharedResults[thread] = found; return }
                got += n
            }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
            let before = min(window, end - position)
            var i = 0
            while let p = AnnexB.nextStartCodePrefix(in: bytes, from: i, before: before) {
                found.append(position + p)
                i = p + 1
            }
            position += before
        }
        sharedResults[thread] = found
    }
    if let failure = failures.first(where: { $0 != 0 }) {
        throw ToolError("\(path): read failed: \(errnoText(failure))")
    }
    return results.flatMap { $0 }
}
