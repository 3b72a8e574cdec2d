import SystemPackage

/// Text to standard output through a buffer of its own, written with `write(2)` so that a
/// failure is seen: a reader that closed the pipe (`| head`) ends the writing with
/// `SystemError` (`EPIPE`, SIGPIPE being ignored) instead of the text going nowhere as
/// `print` lets it.
package final class StandardOutput {
    private var buffer: [UInt8] = []
    private let limit: Int
    /// The first failure; later writes are dropped.
    package private(set) var failure: SystemError?

    /// A writer that writes when `limit` bytes are buffered (and at ``flush()``).
    package init(limit: Int = 1 << 16) {
        self.limit = limit
        buffer.reserveCapacity(limit)
    }

    /// Buffers `text` and a newline; false once the output has failed.
    @discardableResult
    package func line(_ text: String) -> Bool {
        guard failure == nil else { return false }
        buffer += text.utf8
        buffer.append(0x0A)
        if buffer.count >= limit { flush() }
        return failure == nil
    }

    /// Writes what is buffered; false once the output has failed.
    @discardableResult
    package func flush() -> Bool {
        guard failure == nil, !buffer.isEmpty else { return failure == nil }
        do throws(SystemError) {
            try buffer.span.withUnsafeBytes { (raw) throws(SystemError) in try FileDescriptor.standardOutput.writeAll(raw, path: "stdout") }
        } catch {
            failure = error
        }
        buffer.removeAll(keepingCapacity: true)
        return failure == nil
    }

    deinit { flush() }
}

/// Writes `text` to standard output at once, unbuffered (a line another program waits for,
/// such as the address a server listens on); a failure is ignored.
package func writeToStandardOutput(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { raw in try? FileDescriptor.standardOutput.writeAll(UnsafeRawBufferPointer(raw), path: "stdout") }
}
