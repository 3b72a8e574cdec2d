#ifndef CX264_H
#define CX264_H
// x264.h needs the fixed-width integer types declared before it is included.
#include <stdint.h>
#include <x264.h>

// `x264_encoder_open` is a macro that names the ABI-versioned symbol (x264_encoder_open_164);
// Swift cannot import function-like macros, so expose it as an inline function.
static inline x264_t *cx264_encoder_open(x264_param_t *param) {
    return x264_encoder_open(param);
}

static inline int cx264_build(void) { return X264_BUILD; }
#endif
