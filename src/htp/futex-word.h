// A 32-bit atomic that the platform's wait_on/wake_all (futex analogs) can sleep on.
#pragma once

#include "htp/platform.h"

#include <atomic>
#include <stdint.h>

namespace hexnpu::htp {

using futex_word = std::atomic<uint32_t>;
static_assert(sizeof(futex_word) == sizeof(uint32_t) && futex_word::is_always_lock_free);

inline const volatile uint32_t * futex_addr(const futex_word & w) {
    return reinterpret_cast<const volatile uint32_t *>(&w);
}

// Sleeps until w differs from expected (spurious returns are fine: callers re-check).
inline void futex_wait(const platform * plat, const futex_word & w, uint32_t expected) {
    plat->wait_on(plat->ctx, futex_addr(w), expected);
}

inline void futex_wake(const platform * plat, const futex_word & w) { plat->wake_all(plat->ctx, futex_addr(w)); }

} // namespace hexnpu::htp
