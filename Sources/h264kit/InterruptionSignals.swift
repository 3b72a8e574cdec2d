import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM turned into a call (cancelling a task, so that its output is finished
/// rather than cut off), until ``restore()`` gives them back their default action.
final class InterruptionSignals {
    private var sources: [any DispatchSourceSignal] = []

    init(_ action: @escaping @Sendable () -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: action)
            source.resume()
            sources.append(source)
        }
    }

    func restore() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
