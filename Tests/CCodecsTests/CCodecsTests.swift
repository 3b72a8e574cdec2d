import CCodecs
import Testing

@Suite("Codec libraries load on first use and open")
struct CCodecsTests {
    @Test func librariesLoadByTheirSonames() {
        #expect(ccodecs_load_ffmpeg() == nil)
        #expect(ccodecs_load_x264() == nil)
        // A second call returns the first result without loading again.
        #expect(ccodecs_load_ffmpeg() == nil)
    }

    @Test func x264EncoderOpens() throws {
        #expect(ccodecs_load_x264() == nil)
        var param = x264_param_t()
        #expect(x264_param_default_preset(&param, "ultrafast", "zerolatency") == 0)
        param.i_width = 64
        param.i_height = 64
        param.i_csp = X264_CSP_I420
        param.i_threads = 1
        let encoder = try #require(cx264_encoder_open(&param))
        x264_encoder_close(encoder)
        #expect(cx264_build() == X264_BUILD)
    }

    @Test func libavcodecHasTheH264Decoder() throws {
        #expect(ccodecs_load_ffmpeg() == nil)
        let codec = try #require(avcodec_find_decoder(AV_CODEC_ID_H264))
        #expect(String(cString: codec.pointee.name) == "h264")
        let context = try #require(avcodec_alloc_context3(codec))
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        #expect(avcodec_open2(context, codec, nil) == 0)
        avcodec_free_context(&ctx)
        #expect(cffmpeg_libavcodec_version_major() >= 59)
        let scaler = sws_getContext(16, 16, AV_PIX_FMT_YUV420P, 16, 16, AV_PIX_FMT_RGB24, 0, nil, nil, nil)
        #expect(scaler != nil)
        sws_freeContext(scaler)
    }
}
