import CCodecs
import SystemIO

/// libavcodec's error messages, which are how FFmpeg 5.1 tells about damage it conceals (its
/// frames' `decode_error_flags` stay empty). The log callback is process-wide, so messages are
/// collected here instead of printed, each under the decoder that logged it: a decoder's
/// `AVCodecContext.opaque` holds its token, and libavcodec copies `opaque` into the contexts
/// of its frame threads, so a message logged by any of them is found under the same token.
/// With several decoders at once (a server, a test suite, chunked work in one process), one
/// decoder's damage is never told as another's. Messages from elsewhere (no codec context, or
/// no token) are dropped.
enum DecoderLog {
    static let messages = Locked<[UInt: [String]]>([:])
    /// Messages kept for one decoder between two takes.
    static let limit = 256
    private static let nextToken = Locked<UInt>(1)

    /// Installs the collector once (`av_log_set_callback`).
    static let installed: Void = {
        av_log_set_callback { context, level, format, arguments in
            guard level <= AV_LOG_ERROR, let context, let format, let arguments, let token = DecoderLog.token(of: context) else { return }
            var buffer = [CChar](repeating: 0, count: 512)
            _ = buffer.withUnsafeMutableBufferPointer { cffmpeg_format_log($0.baseAddress, 512, format, arguments) }
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { return }
            DecoderLog.messages.withLock { all in
                guard all[token, default: []].count < DecoderLog.limit else { return }
                all[token, default: []].append(text)
            }
        }
    }()

    /// A token for a new decoder (never 0, never reused while the process lives).
    static func makeToken() -> UInt {
        nextToken.withLock { next in
            defer { next &+= 1 }
            return next
        }
    }

    /// The token of the decoder that logged with `context`: its `opaque`, when `context` is an
    /// `AVCodecContext` (every logging context starts with a pointer to its `AVClass`).
    private static func token(of context: UnsafeMutableRawPointer) -> UInt? {
        guard let logClass = context.load(as: UnsafePointer<AVClass>?.self), let name = logClass.pointee.class_name,
              strcmp(name, "AVCodecContext") == 0 else { return nil }
        let token = UInt(bitPattern: context.assumingMemoryBound(to: AVCodecContext.self).pointee.opaque)
        return token == 0 ? nil : token
    }

    /// The messages logged under `token` since the last take.
    static func take(_ token: UInt) -> [String] {
        messages.withLock { $0.removeValue(forKey: token) ?? [] }
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
