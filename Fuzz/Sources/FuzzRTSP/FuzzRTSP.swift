// An RTSP connection's bytes through the message parser, whole and in chunks the input chooses
// (the same elements, or an error both ways); messages written back parse to themselves; every
// Transport header through the transport parser.
import FuzzSupport
import H264Network

@_cdecl("FuzzRTSP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        var choice = FuzzOptions(input)
        let chunk = Int(choice.byte()) + 1
        let bytes = [UInt8](choice.rest)
        var whole = RTSPMessageParser()
        let all = try? whole.append(bytes)
        var pieces = RTSPMessageParser()
        var chunked: [RTSPMessageParser.Element]? = []
        var index = 0
        while index < bytes.count {
            guard let elements = try? pieces.append(bytes[index..<min(bytes.count, index + chunk)]) else { chunked = nil; break }
            chunked! += elements
            index += chunk
        }
        fuzzCheck((all == nil) == (chunked == nil), "an error \(all == nil ? "at once" : "in \(chunk)-byte pieces") only")
        if let all, let chunked { fuzzCheck(all == chunked, "\(all.count) elements at once, \(chunked.count) in \(chunk)-byte pieces") }
        for element in all ?? [] {
            guard case .message(let message) = element else { continue }
            if let transport = message["Transport"], let offers = try? RTSPTransport.parse(header: transport) {
                for offer in offers {
                    let again = try? RTSPTransport.parse(header: offer.description)
                    fuzzCheck(again?.first == offer || offer.otherParameters.contains { $0.contains(",") || $0.contains(";") }, "a transport changed across description and parse: \(offer)")
                }
            }
            let writable = !message.headers.contains { $0.value.contains("\r") || $0.name.contains("\r") || $0.name.isEmpty }
            guard writable else { continue }
            var parser = RTSPMessageParser()
            let again = try? parser.append(message.bytes)
            fuzzCheck(again == [.message(message)], "a message changed across bytes and parse")
        }
    }
}
