import H264Network
import Testing

/// `_HLS_msn`, `_HLS_part`, `_HLS_skip` read from a query (RFC 8216bis §6.2.5): what is
/// malformed is nil (the server's 400), other parameters are left alone.
@Suite("HLSDeliveryDirectives")
struct HLSDeliveryDirectivesTests {
    @Test(arguments: [
        ("_HLS_msn=12&_HLS_part=3", HLSDeliveryDirectives(mediaSequence: 12, part: 3)),
        ("_HLS_msn=12", HLSDeliveryDirectives(mediaSequence: 12)),
        ("_HLS_skip=YES", HLSDeliveryDirectives(skip: true)),
        ("_HLS_msn=0&_HLS_part=0&_HLS_skip=v2&token=abc", HLSDeliveryDirectives(mediaSequence: 0, part: 0, skip: true)),
        ("", HLSDeliveryDirectives()),
        ("cache=1&&x", HLSDeliveryDirectives()),
    ])
    func wellFormed(_ query: String, _ expected: HLSDeliveryDirectives) {
        #expect(HLSDeliveryDirectives(query: Substring(query)) == expected)
    }

    @Test(arguments: ["_HLS_part=1", "_HLS_msn=-1", "_HLS_msn=+1", "_HLS_msn=1e3", "_HLS_msn=", "_HLS_msn", "_HLS_msn=1234567890123",
                      "_HLS_msn=1&_HLS_part=x", "_HLS_skip=NO", "_HLS_skip=yes", "_HLS_msn=٣"])
    func malformed(_ query: String) {
        #expect(HLSDeliveryDirectives(query: Substring(query)) == nil)
    }
}
