#ifndef CFFMPEG_H
#define CFFMPEG_H
#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/md5.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

// Function-like macros Swift cannot import.
static inline int cffmpeg_averror(int posixError) { return AVERROR(posixError); }
static inline int cffmpeg_averror_eof(void) { return AVERROR_EOF; }
static inline int cffmpeg_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int cffmpeg_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline unsigned cffmpeg_libavcodec_version_major(void) { return LIBAVCODEC_VERSION_MAJOR; }
#endif
