import Dispatch
import H264Bitstream
#if canImport(Glibc)
import Glibc
#endif

/// Finds every Annex-B start-code prefix of a mapped file on several threads.
///
/// Each thread prefaults its part of the mapping in one call (`MADV_POPULATE_READ`, far cheaper
/// than a page fault every few pages during the search) and searches it in place; the parts
/// are disjoint and a prefix belongs to the part it starts in, so the concatenated results are
/// every prefix in file order. Measured here against `pread` into per-thread buffers: about
/// 10% faster, as the kernel copy costs more than mapping the page cache. Returns nil when the
/// start codes are too dense for this to pay (the caller then scans in order).
func startCodePrefixes(mapped bytes: UnsafeRawBufferPointer, threads: Int) -> [Int]? {
    let threads = max(1, threads)
    let size = bytes.count
    let part = ((size + threads - 1) / threads + 4095) & ~4095
    // Dense start codes (NAL units under 256 bytes on average) gain nothing from a parallel
    // search and would make the offset lists large: past this many the caller scans in order.
    let limit = part / 256 + 16
    let results = UnsafeMutableBufferPointer<[Int]?>.allocate(capacity: threads)
    results.initialize(repeating: nil)
    defer { results.deinitialize(); results.deallocate() }
    nonisolated(unsafe) let shared = results
    nonisolated(unsafe) let bytes = bytes
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        let start = min(size, thread * part)
        let end = min(size, start + part)
        guard start < end else { shared[thread] = []; return }
        _ = madvise(UnsafeMutableRawPointer(mutating: bytes.baseAddress! + start), end - start, 22 /* MADV_POPULATE_READ */)
        var found: [Int] = []
        var i = start
        while let p = AnnexB.nextStartCodePrefix(in: bytes, from: i, before: end) {
            found.append(p)
            if found.count > limit { return }
            i = p + 1
        }
        shared[thread] = found
    }
    var all: [Int] = []
    all.reserveCapacity(results.reduce(0) { $0 + ($1?.count ?? 0) })
    for part in results {
        guard let part else { return nil }
        all.append(contentsOf: part)
    }
    return all
}
