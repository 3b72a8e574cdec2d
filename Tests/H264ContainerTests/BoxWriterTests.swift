import ISOBMFF
import MPEGTS
import MediaCore
import Testing

@Suite struct BoxWriterTests {
    @Test func sizesAreBackPatched() {
        var w = BoxWriter()
        w.box("moov") { w in
            w.fullBox("mvhd", version: 1, flags: 3) { w in w.u32(7) }
        }
        #expect(w.bytes == [0, 0, 0, 24, 0x6D, 0x6F, 0x6F, 0x76, 0, 0, 0, 16, 0x6D, 0x76, 0x68, 0x64, 1, 0, 0, 3, 0, 0, 0, 7])
    }
}
