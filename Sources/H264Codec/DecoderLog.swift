import CCodecs
#if canImport(Glibc)
import Glibc
#endif
import SystemIO

/// libavcodec's error messages, which are how FFmpeg 5.1 tells about damage it conceals (its
/// frames' `decode_error_flags` stay empty). The log is process-wide: messages are collected
/// here instead of printed, and a decoder takes them after each call.
enum DecoderLog {
    static let messages = Locked<[String]>([])
    static let limit = 256

    /// Installs the collector once (`av_log_set_callback`).
    static let installed: Void = {
        av_log_set_callback { _, level, format, arguments in
            guard level <= AV_LOG_ERROR, let format, let arguments else { return }
            var buffer = [CChar](repeating: 0, count: 512)
            _ = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, 512, format, arguments) }
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { return }
            DecoderLog.messages.withLock { if $0.count < DecoderLog.limit { $0.append(text) } }
        }
    }()

    static func take() -> [String] {
        messages.withLock { taken in
            defer { taken.removeAll() }
            return taken
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        var text = Substring(self)
        while let last = text.last, set.contains(last) { text.removeLast() }
        while let first = text.first, set.contains(first) { text.removeFirst() }
        return String(text)
    }
}

extension Set where Element == Character {
    fileprivate static let whitespacesAndNewlines: Set<Character> = [" ", "\n", "\t", "\r"]
}
