/// What a fuzz target runs on each input.
public typealias FuzzBody = (UnsafeRawBufferPointer) -> Void

/// libFuzzer's entry for programs with a `main` of their own (compiler-rt `FuzzerInterface.h`).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

nonisolated(unsafe) private var currentBody: FuzzBody?

/// Runs libFuzzer with `argv` (its usual flags, corpus directories or input files), calling
/// `body` on each input.
///
/// SwiftPM links an executable with `--defsym main=<Target>_main`; a target built with
/// `-parse-as-library` defines that symbol itself (`@_cdecl("<Target>_main")`) and calls this,
/// so libFuzzer's own `main` is never needed and the link needs no change.
public func runFuzzer(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ body: @escaping FuzzBody) -> CInt {
    currentBody = body
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        currentBody?(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
}

/// A little-endian reader of the leading bytes of an input, to choose options with.
public struct FuzzOptions {
    private var bytes: UnsafeRawBufferPointer
    /// The bytes not taken as options.
    public private(set) var rest: UnsafeRawBufferPointer

    /// Options from the start of `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        self.rest = bytes
    }

    /// The next byte (0 when the input has run out), taken off ``rest``.
    public mutating func byte() -> UInt8 {
        guard let first = rest.first else { return 0 }
        rest = UnsafeRawBufferPointer(rebasing: rest.dropFirst())
        return first
    }

    /// A flag from the next byte's low bit.
    public mutating func flag() -> Bool { byte() & 1 == 1 }
}

/// Stops the fuzzer with a message: two ways of reading the same input disagree.
public func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz check failed: \(message())") }
}
