extension Array where Element == UInt8 {
    /// `withUnsafeBytes` keeping the body's typed error (Array's own rethrows it untyped).
    @inlinable
    package func withTypedBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var result: Result<R, E>!
        withUnsafeBytes { raw in
            do throws(E) { result = .success(try body(raw)) } catch { result = .failure(error) }
        }
        return try result.get()
    }
}
