#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemPackage

/// A regular file mapped read-only: zero-copy access for the parsers. Pages are faulted in as
/// they are touched; ``advise(_:range:)`` prefaults a range ahead of use or drops one behind.
/// The mapping lives as long as this object; slices handed out elsewhere keep it alive.
package final class MappedFile: @unchecked Sendable {  // immutable after init; the mapping is read-only
    /// What the kernel is told about a range (`madvise`).
    package enum Advice: Sendable {
        /// Fault the range in now, in one call (`MADV_POPULATE_READ`, Linux 5.14): far cheaper
        /// than a fault every few pages. Ignored where unsupported.
        case populate
        /// Read ahead (`MADV_WILLNEED`).
        case willNeed
        /// Drop the range from this process (`MADV_DONTNEED`): the pages stay in the page
        /// cache, and touching them again faults them back in, so it only ever costs time.
        case dontNeed
        /// The range will be read in order (`MADV_SEQUENTIAL`).
        case sequential

        var value: Int32 {
            switch self {
            case .populate: 22  // MADV_POPULATE_READ; Glibc's headers for older kernels lack it
            case .willNeed: MADV_WILLNEED
            case .dontNeed: MADV_DONTNEED
            case .sequential: MADV_SEQUENTIAL
            }
        }
    }

    /// The mapped file's path.
    package let path: String
    /// The file's bytes, valid while this object lives.
    package let bytes: UnsafeRawBufferPointer

    /// Maps `path`, which must be a regular file that is not empty.
    package init(path: String) throws(SystemError) {
        self.path = path
        let descriptor = try FileDescriptor.opening(path, flags: O_RDONLY)
        defer { descriptor.closeQuietly() }
        let status = try FileStatus.of(descriptor: descriptor, path: path)
        guard status.kind == .regular else { throw SystemError(.map, path: path, errno: .invalidArgument) }
        guard status.size > 0 else { throw SystemError(.map, path: path, errno: .noData) }
        guard let pointer = mmap(nil, status.size, PROT_READ, MAP_PRIVATE, descriptor.rawValue, 0), pointer != MAP_FAILED else {
            throw SystemError(.map, path: path, errno: Errno(rawValue: errno))
        }
        bytes = UnsafeRawBufferPointer(start: pointer, count: status.size)
    }

    deinit {
        munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count)
    }

    /// The file's size in bytes.
    package var count: Int { bytes.count }

    /// The system's page size (4096 on x86-64; 16K or 64K on some arm64 kernels).
    package static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Tells the kernel how `range` will be used; a hint, so failures are ignored.
    package func advise(_ advice: Advice, range: Range<Int>) {
        let start = range.lowerBound & ~(Self.pageSize - 1)
        let end = min(range.upperBound, bytes.count)
        guard end > start, let base = bytes.baseAddress else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, advice.value)
    }
}
