// Each function the Swift code calls is defined here under its own name and forwards to the
// symbol resolved from the library at load time (the technique of implib.so and of lazily
// bound plug-ins). The compiler checks every definition against the library's header.
#include "CCodecs.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CCODECS_STRING2(x) #x
#define CCODECS_STRING(x) CCODECS_STRING2(x)

enum { avcodec, avutil, swscale, x264 };

static const char *const sonames[] = {
    [avcodec] = "libavcodec.so." CCODECS_STRING(LIBAVCODEC_VERSION_MAJOR),
    [avutil] = "libavutil.so." CCODECS_STRING(LIBAVUTIL_VERSION_MAJOR),
    [swscale] = "libswscale.so." CCODECS_STRING(LIBSWSCALE_VERSION_MAJOR),
    [x264] = "libx264.so." CCODECS_STRING(X264_BUILD),
};

// F: a function returning a value; V: a function returning void.
// (library, return type, name, parameters, arguments)
#define FFMPEG_FUNCTIONS(F, V) \
    F(avcodec, const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id)) \
    F(avcodec, const AVCodec *, avcodec_find_encoder, (enum AVCodecID id), (id)) \
    F(avcodec, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec)) \
    V(avcodec, avcodec_free_context, (AVCodecContext **context), (context)) \
    F(avcodec, int, avcodec_open2, (AVCodecContext *context, const AVCodec *codec, AVDictionary **options), (context, codec, options)) \
    V(avcodec, avcodec_flush_buffers, (AVCodecContext *context), (context)) \
    F(avcodec, int, avcodec_send_packet, (AVCodecContext *context, const AVPacket *packet), (context, packet)) \
    F(avcodec, int, avcodec_receive_frame, (AVCodecContext *context, AVFrame *frame), (context, frame)) \
    F(avcodec, int, avcodec_send_frame, (AVCodecContext *context, const AVFrame *frame), (context, frame)) \
    F(avcodec, int, avcodec_receive_packet, (AVCodecContext *context, AVPacket *packet), (context, packet)) \
    F(avcodec, AVPacket *, av_packet_alloc, (void), ()) \
    V(avcodec, av_packet_free, (AVPacket **packet), (packet)) \
    V(avcodec, av_packet_unref, (AVPacket *packet), (packet)) \
    F(avcodec, int, av_new_packet, (AVPacket *packet, int size), (packet, size)) \
    F(avutil, AVFrame *, av_frame_alloc, (void), ()) \
    V(avutil, av_frame_free, (AVFrame **frame), (frame)) \
    V(avutil, av_frame_move_ref, (AVFrame *destination, AVFrame *source), (destination, source)) \
    V(avutil, av_frame_unref, (AVFrame *frame), (frame)) \
    F(avutil, void *, av_mallocz, (size_t size), (size)) \
    V(avutil, av_free, (void *pointer), (pointer)) \
    F(avutil, int, av_strerror, (int error, char *buffer, size_t size), (error, buffer, size)) \
    F(avutil, enum AVPixelFormat, av_get_pix_fmt, (const char *name), (name)) \
    F(avutil, const char *, av_get_pix_fmt_name, (enum AVPixelFormat format), (format)) \
    V(avutil, av_log_set_callback, (void (*callback)(void *, int, const char *, va_list)), (callback)) \
    F(swscale, int, sws_isSupportedOutput, (enum AVPixelFormat format), (format)) \
    F(swscale, struct SwsContext *, sws_getContext, \
      (int srcW, int srcH, enum AVPixelFormat srcFormat, int dstW, int dstH, enum AVPixelFormat dstFormat, \
       int flags, SwsFilter *srcFilter, SwsFilter *dstFilter, const double *param), \
      (srcW, srcH, srcFormat, dstW, dstH, dstFormat, flags, srcFilter, dstFilter, param)) \
    F(swscale, struct SwsContext *, sws_getCachedContext, \
      (struct SwsContext *context, int srcW, int srcH, enum AVPixelFormat srcFormat, int dstW, int dstH, \
       enum AVPixelFormat dstFormat, int flags, SwsFilter *srcFilter, SwsFilter *dstFilter, const double *param), \
      (context, srcW, srcH, srcFormat, dstW, dstH, dstFormat, flags, srcFilter, dstFilter, param)) \
    V(swscale, sws_freeContext, (struct SwsContext *context), (context)) \
    F(swscale, const int *, sws_getCoefficients, (int colorspace), (colorspace)) \
    F(swscale, int, sws_setColorspaceDetails, \
      (struct SwsContext *context, const int inverseTable[4], int sourceRange, const int table[4], int destinationRange, \
       int brightness, int contrast, int saturation), \
      (context, inverseTable, sourceRange, table, destinationRange, brightness, contrast, saturation)) \
    F(swscale, int, sws_scale, \
      (struct SwsContext *context, const uint8_t *const source[], const int sourceStride[], int sliceY, int sliceHeight, \
       uint8_t *const destination[], const int destinationStride[]), \
      (context, source, sourceStride, sliceY, sliceHeight, destination, destinationStride))

#define X264_FUNCTIONS(F, V) \
    F(x264, int, x264_param_default_preset, (x264_param_t *param, const char *preset, const char *tune), (param, preset, tune)) \
    F(x264, int, x264_param_parse, (x264_param_t *param, const char *name, const char *value), (param, name, value)) \
    V(x264, x264_param_cleanup, (x264_param_t *param), (param)) \
    V(x264, x264_param_apply_fastfirstpass, (x264_param_t *param), (param)) \
    F(x264, int, x264_param_apply_profile, (x264_param_t *param, const char *profile), (param, profile)) \
    V(x264, x264_picture_init, (x264_picture_t *picture), (picture)) \
    F(x264, x264_t *, x264_encoder_open, (x264_param_t *param), (param)) \
    F(x264, int, x264_encoder_reconfig, (x264_t *encoder, x264_param_t *param), (encoder, param)) \
    V(x264, x264_encoder_parameters, (x264_t *encoder, x264_param_t *param), (encoder, param)) \
    F(x264, int, x264_encoder_headers, (x264_t *encoder, x264_nal_t **nals, int *count), (encoder, nals, count)) \
    F(x264, int, x264_encoder_encode, \
      (x264_t *encoder, x264_nal_t **nals, int *count, x264_picture_t *input, x264_picture_t *output), \
      (encoder, nals, count, input, output)) \
    V(x264, x264_encoder_close, (x264_t *encoder), (encoder)) \
    F(x264, int, x264_encoder_delayed_frames, (x264_t *encoder), (encoder))

// One pointer per function. `name` goes through CCODECS_STRING so that a macro name
// (x264_encoder_open → x264_encoder_open_164) is looked up by the symbol it stands for.
#define POINTER(library, result, name, parameters, arguments) static result (*pointer_##name) parameters;
#define VOID_POINTER(library, name, parameters, arguments) static void (*pointer_##name) parameters;
FFMPEG_FUNCTIONS(POINTER, VOID_POINTER)
X264_FUNCTIONS(POINTER, VOID_POINTER)

struct group {
    pthread_once_t once;
    const char *error;
    char message[512];
};
static struct group ffmpeg_group = { PTHREAD_ONCE_INIT, NULL, "" };
static struct group x264_group = { PTHREAD_ONCE_INIT, NULL, "" };

static void *handles[4];

static int open_library(struct group *group, int library) {
    if (handles[library]) return 1;
    handles[library] = dlopen(sonames[library], RTLD_NOW | RTLD_LOCAL);
    if (handles[library]) return 1;
    const char *reason = dlerror();
    snprintf(group->message, sizeof group->message, "cannot load %s (%s); install the package that provides it",
             sonames[library], reason ? reason : "not found");
    group->error = group->message;
    return 0;
}

static int resolve(struct group *group, int library, void **pointer, const char *symbol) {
    *pointer = dlsym(handles[library], symbol);
    if (*pointer) return 1;
    snprintf(group->message, sizeof group->message, "%s has no function %s (a different build than the headers)",
             sonames[library], symbol);
    group->error = group->message;
    return 0;
}

#define RESOLVE(library, result, name, parameters, arguments) \
    if (!resolve(group, library, (void **)&pointer_##name, CCODECS_STRING(name))) return;
#define VOID_RESOLVE(library, name, parameters, arguments) \
    if (!resolve(group, library, (void **)&pointer_##name, CCODECS_STRING(name))) return;

static void load_ffmpeg(void) {
    struct group *group = &ffmpeg_group;
    if (!open_library(group, avutil) || !open_library(group, swscale) || !open_library(group, avcodec)) return;
    FFMPEG_FUNCTIONS(RESOLVE, VOID_RESOLVE)
}

static void load_x264(void) {
    struct group *group = &x264_group;
    if (!open_library(group, x264)) return;
    X264_FUNCTIONS(RESOLVE, VOID_RESOLVE)
}

const char *ccodecs_load_ffmpeg(void) {
    pthread_once(&ffmpeg_group.once, load_ffmpeg);
    return ffmpeg_group.error;
}

const char *ccodecs_load_x264(void) {
    pthread_once(&x264_group.once, load_x264);
    return x264_group.error;
}

// A call before a successful load is a programming error in this package (every public entry
// point loads first and throws the message); stop with the message rather than jump to NULL.
static void require(const char *(*load)(void)) {
    const char *error = load();
    if (error) {
        fprintf(stderr, "h264kit: %s\n", error);
        abort();
    }
}

#define LOADER_avcodec ccodecs_load_ffmpeg
#define LOADER_avutil ccodecs_load_ffmpeg
#define LOADER_swscale ccodecs_load_ffmpeg
#define LOADER_x264 ccodecs_load_x264

#define FORWARD(library, result, name, parameters, arguments) \
    result name parameters { require(LOADER_##library); return pointer_##name arguments; }
#define VOID_FORWARD(library, name, parameters, arguments) \
    void name parameters { require(LOADER_##library); pointer_##name arguments; }
FFMPEG_FUNCTIONS(FORWARD, VOID_FORWARD)
X264_FUNCTIONS(FORWARD, VOID_FORWARD)
