#ifndef CCODECS_H
#define CCODECS_H
// libavcodec, libavutil, libswscale and x264, loaded when first used rather than when the
// program starts: `h264kit mux` and the other container commands never map the codec
// libraries (Debian's libavcodec alone maps librsvg, glib, libx265 and dozens more, about
// 10 MB of resident memory), and a program that only reads and writes files runs where the
// codec libraries are not installed. The headers come from the -dev packages as usual; the
// shared objects are opened by the soname these headers were written for.
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
#include <x264.h>

/// Opens libavcodec, libavutil and libswscale and resolves every function this package calls.
/// Returns NULL when they are ready, or a message saying which library or symbol is missing.
/// Safe to call from any thread, any number of times; the first call does the work.
const char *ccodecs_load_ffmpeg(void);

/// The same for libx264.
const char *ccodecs_load_x264(void);

// Function-like macros Swift cannot import.
static inline int cffmpeg_averror(int posixError) { return AVERROR(posixError); }
/// Formats one of libav's log messages (`vsnprintf` of its format and arguments) into `buffer`.
static inline int cffmpeg_format_log(char *buffer, int size, const char *format, va_list arguments) {
    return vsnprintf(buffer, (size_t)size, format, arguments);
}
static inline int cffmpeg_averror_eof(void) { return AVERROR_EOF; }
static inline int cffmpeg_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int cffmpeg_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline unsigned cffmpeg_libavcodec_version_major(void) { return LIBAVCODEC_VERSION_MAJOR; }

// `x264_encoder_open` is a macro that names the ABI-versioned symbol (x264_encoder_open_164).
static inline x264_t *cx264_encoder_open(x264_param_t *param) { return x264_encoder_open(param); }
static inline int cx264_build(void) { return X264_BUILD; }
#endif
