// Text through the session description parser and the H.264, mpeg4-generic and MP4A-LATM (AAC)
// and G.711 payload format parameters; what parses must be written back and parse to the same values.
import FuzzSupport
import H264Network

@_cdecl("FuzzSDP_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { input in
        let text = String(decoding: input, as: UTF8.self)
        guard let description = try? SessionDescription(parsing: text) else { return }
        let values = [description.origin, description.name, description.connection ?? ""] + description.attributes
            + description.media.flatMap { [$0.type, $0.transport, $0.connection ?? ""] + $0.formats + $0.attributes }
        // Values holding line ends or empty media fields cannot be written back as they were.
        let writable = !values.contains { $0.contains("\r") || $0.contains("\n") } && !description.media.contains { $0.formats.isEmpty }
        if writable {
            let again = try? SessionDescription(parsing: description.text)
            fuzzCheck(again == description, "a session description changed across text and parse")
        }
        for medium in description.media {
            if let format = try? MP4ALATMPayloadFormat(medium: medium) {
                _ = try? format.formatDescription()
                if writable, !(format.control ?? "").contains(" ") {
                    let again = try? MP4ALATMPayloadFormat(medium: .init(type: medium.type, port: medium.port, formats: ["\(format.payloadType)"], attributes: format.attributes))
                    fuzzCheck(again == format, "MP4A-LATM payload parameters changed across attributes and parse")
                }
            }
            if let format = try? G711PayloadFormat(medium: medium) {
                fuzzCheck((1...192_000).contains(format.clockRate) && (1...8).contains(format.channelCount), "G.711 at \(format.clockRate) Hz, \(format.channelCount) channels")
                _ = AudioPayloadFormat(medium: medium).map { try? $0.formatDescription() }
            }
            if let format = try? MPEG4GenericPayloadFormat(medium: medium) {
                _ = try? format.formatDescription()
                if writable, !(format.control ?? "").contains(" "), !format.mode.contains(";"), !format.mode.contains(" ") {
                    let again = try? MPEG4GenericPayloadFormat(medium: format.medium(port: medium.port))
                    fuzzCheck(again == format, "mpeg4-generic payload parameters changed across attributes and parse")
                }
            }
            guard let format = try? H264PayloadFormat(medium: medium) else { continue }
            _ = try? format.formatDescription()
            guard writable, !(format.control ?? "").contains(" ") else { continue }
            let again = try? H264PayloadFormat(medium: format.medium(port: medium.port))
            fuzzCheck(again == format, "H.264 payload parameters changed across attributes and parse")
        }
    }
}
