// A 32-bit atomic word that the platform's wait_on/wake_all (futex analogs) can sleep on. Built on
// the compiler's __atomic builtins rather than <atomic>, which a freestanding Hexagon build lacks.
#pragma once

#include "htp/platform.h"

#include <stdint.h>

namespace hexnpu::htp {

class futex_word {
  public:
    uint32_t load_acquire() const { return __atomic_load_n(&value_, __ATOMIC_ACQUIRE); }
    uint32_t load_relaxed() const { return __atomic_load_n(&value_, __ATOMIC_RELAXED); }
    void     store_release(uint32_t v) { __atomic_store_n(&value_, v, __ATOMIC_RELEASE); }
    void     store_relaxed(uint32_t v) { __atomic_store_n(&value_, v, __ATOMIC_RELAXED); }
    uint32_t fetch_add_release(uint32_t v) { return __atomic_fetch_add(&value_, v, __ATOMIC_RELEASE); }
    uint32_t fetch_sub_acq_rel(uint32_t v) { return __atomic_fetch_sub(&value_, v, __ATOMIC_ACQ_REL); }

    const volatile uint32_t * address() const { return &value_; }

  private:
    uint32_t value_ = 0;
};

// Sleeps until w differs from expected (spurious returns are fine: callers re-check).
inline void futex_wait(const platform * plat, const futex_word & w, uint32_t expected) {
    plat->wait_on(plat->ctx, w.address(), expected);
}

inline void futex_wake(const platform * plat, const futex_word & w) { plat->wake_all(plat->ctx, w.address()); }

} // namespace hexnpu::htp
