// Shim for FFmpeg: the headers GuardPlay uses, and static inline wrappers for the macros Swift
// cannot import (AVERROR, AVERROR_EOF, FFERRTAG codes, AV_NOPTS_VALUE, AV_TIME_BASE_Q).
#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H

#include <errno.h>
#include <malloc.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

static inline int cffmpeg_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int cffmpeg_averror_eof(void) { return AVERROR_EOF; }
static inline int cffmpeg_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int cffmpeg_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int cffmpeg_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int cffmpeg_averror_exit(void) { return AVERROR_EXIT; }
static inline int64_t cffmpeg_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational cffmpeg_time_base_q(void) { return AV_TIME_BASE_Q; }
static inline uint32_t cffmpeg_mktag(uint8_t a, uint8_t b, uint8_t c, uint8_t d) { return MKTAG(a, b, c, d); }

// glibc's mallopt(M_MMAP_THRESHOLD, bytes), which Swift's Glibc module does not export (malloc.h):
// a fixed threshold stops glibc raising it to the size of each large block freed. 1 on success.
static inline int cffmpeg_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }

#endif
