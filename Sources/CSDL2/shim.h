// Shim for SDL2: audio devices, windows and the event loop.
#ifndef CSDL2_SHIM_H
#define CSDL2_SHIM_H

#define SDL_MAIN_HANDLED 1
#include <SDL2/SDL.h>

static inline uint32_t csdl2_init_audio(void) { return SDL_INIT_AUDIO; }
static inline uint32_t csdl2_init_video(void) { return SDL_INIT_VIDEO; }
static inline uint32_t csdl2_init_events(void) { return SDL_INIT_EVENTS; }
static inline int csdl2_windowpos_centered(void) { return SDL_WINDOWPOS_CENTERED; }
static inline uint32_t csdl2_pixelformat_iyuv(void) { return SDL_PIXELFORMAT_IYUV; }
static inline uint32_t csdl2_pixelformat_rgb24(void) { return SDL_PIXELFORMAT_RGB24; }
static inline uint16_t csdl2_audio_s16sys(void) { return AUDIO_S16SYS; }
static inline uint16_t csdl2_audio_f32sys(void) { return AUDIO_F32SYS; }

#endif
