// The virtual NPU's HMX unit: the state behind the htp/hmx.h API (accumulator, scale/bias
// register, owner, fault) and the strict checks of every call. Header-only, included by
// htp/hmx.h on x86, so the unit runs inside whatever thread calls it (the HMX queue thread). With
// helpers (hmx_unit_set_helpers: the session platform gives it its spare host threads) its stores
// are computed in batches on those threads too (hmx-deferral.h): the same bytes, sooner.
#pragma once

#include "htp/hmx.h"
#include "vnpu/hmx/hmx-compute.h"
#include "vnpu/hmx/hmx-deferral.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

namespace hexnpu::htp {

struct hmx_unit {
    alignas(64) float acc[HMX_TILE_ROWS][HMX_TILE_COLS];
    float      scale[HMX_TILE_COLS];
    float      bias[HMX_TILE_COLS];
    bool       has_scale_bias;
    uint8_t *  vtcm_base;
    uint32_t   vtcm_size;
    uint32_t   locked;  // 0 or 1, __atomic builtins
    const void * owner; // the holding thread's thread pointer (hmx_detail::this_thread)
    int        fault;   // hmx_status of the first fault, __atomic builtins
    char       fault_msg[200];
    vnpu::hmx::deferral * later;  // the stores' batches (nullptr: each call computes at once)
};

namespace hmx_detail {

// The calling thread's identity: its thread pointer (the TLS base), the same in every shared object
// of the process, where a thread_local would not be (the NPU library and the session platform each
// have their own copy, hidden visibility).
inline const void * this_thread() { return __builtin_thread_pointer(); }

// Records the first fault (a misbehaving second thread may race the owner here) and returns it.
__attribute__((format(printf, 3, 4))) inline hmx_status fail(hmx_unit * u, hmx_status s, const char * fmt, ...) {
    int expected = HMX_OK;
    if (__atomic_compare_exchange_n(&u->fault, &expected, int(HMX_ERR_FAULTED), false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(u->fault_msg, sizeof u->fault_msg, fmt, args);
        va_end(args);
        __atomic_store_n(&u->fault, int(s), __ATOMIC_RELEASE);
    }
    return s;
}

// The caller must hold the unit, and the unit must not have faulted.
inline hmx_status check_use(hmx_unit * u, const char * op) {
    if (__atomic_load_n(&u->locked, __ATOMIC_ACQUIRE) == 0 || u->owner != this_thread()) {
        return fail(u, HMX_ERR_NOT_OWNER, "hmx %s: called from a thread that does not hold the unit "
                                          "(only the HMX queue thread may use HMX)", op);
    }
    return __atomic_load_n(&u->fault, __ATOMIC_ACQUIRE) == HMX_OK ? HMX_OK : HMX_ERR_FAULTED;
}

// [p, p + bytes) inside VTCM, p aligned; a tile run also inside one 4 MiB bank.
inline hmx_status check_region(hmx_unit * u, const char * op, const char * what, const void * p, uint64_t bytes,
                               uint32_t align, bool one_bank) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    const uintptr_t base = reinterpret_cast<uintptr_t>(u->vtcm_base);
    if (addr < base || addr - base > u->vtcm_size || bytes > u->vtcm_size - (addr - base)) {
        return fail(u, HMX_ERR_NOT_VTCM, "hmx %s: %s at %p (%llu bytes) is not inside VTCM [%p, +%u)", op, what, p,
                    static_cast<unsigned long long>(bytes), static_cast<const void *>(u->vtcm_base), u->vtcm_size);
    }
    const uintptr_t off = addr - base;
    if (addr % align != 0) {
        return fail(u, HMX_ERR_MISALIGNED, "hmx %s: %s at VTCM offset 0x%llx is not %u-byte aligned", op, what,
                    static_cast<unsigned long long>(off), align);
    }
    if (one_bank && off / HMX_VTCM_BANK_BYTES != (off + bytes - 1) / HMX_VTCM_BANK_BYTES) {
        return fail(u, HMX_ERR_BANK_CROSSING, "hmx %s: %s at VTCM offset 0x%llx (%llu bytes) crosses a 4 MiB VTCM bank",
                    op, what, static_cast<unsigned long long>(off), static_cast<unsigned long long>(bytes));
    }
    return HMX_OK;
}

} // namespace hmx_detail

inline void hmx_unit_init(hmx_unit * u, uint8_t * vtcm_base, uint32_t vtcm_size) {
    memset(u, 0, sizeof *u);
    u->vtcm_base = vtcm_base;
    u->vtcm_size = vtcm_size;
}

inline hmx_status hmx_lock(hmx_unit * u) {
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(&u->locked, &expected, 1u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return hmx_detail::fail(u, HMX_ERR_NOT_OWNER, "hmx lock: another thread holds the unit");
    }
    u->owner = hmx_detail::this_thread();
    return HMX_OK;
}

inline hmx_status hmx_unlock(hmx_unit * u) {
    if (__atomic_load_n(&u->locked, __ATOMIC_ACQUIRE) == 0 || u->owner != hmx_detail::this_thread()) {
        return hmx_detail::fail(u, HMX_ERR_NOT_OWNER, "hmx unlock: this thread does not hold the unit");
    }
    u->owner = nullptr;
    __atomic_store_n(&u->locked, 0u, __ATOMIC_RELEASE);
    return HMX_OK;
}

inline hmx_status hmx_set_scale_bias(hmx_unit * u, const void * block) {
    hmx_status s = hmx_detail::check_use(u, "set_scale_bias");
    if (s == HMX_OK) {
        s = hmx_detail::check_region(u, "set_scale_bias", "scale/bias block", block, HMX_SCALE_BIAS_BYTES,
                                     HMX_SCALE_BIAS_ALIGN, false);
    }
    if (s != HMX_OK) {
        return s;
    }
    const uint8_t * bytes = static_cast<const uint8_t *>(block);
    for (uint32_t i = HMX_SCALE_BIAS_BYTES / 2; i < HMX_SCALE_BIAS_BYTES; ++i) {
        if (bytes[i] != 0) {
            return hmx_detail::fail(u, HMX_ERR_RESERVED, "hmx set_scale_bias: reserved byte %u of the block is 0x%02x, "
                                                         "not zero", i, bytes[i]);
        }
    }
    for (uint32_t n = 0; n < HMX_TILE_COLS; ++n) {
        uint32_t word;
        memcpy(&word, bytes + 4 * n, 4);
        u->scale[n] = vnpu::hmx::portable::f16_to_f32(uint16_t(word));
        u->bias[n]  = vnpu::hmx::portable::f16_to_f32(uint16_t(word >> 16));
    }
    u->has_scale_bias = true;
    return HMX_OK;
}

inline hmx_status hmx_mac_fp16(hmx_unit * u, const void * act_tiles, const void * wt_tiles, uint32_t n_tiles) {
    hmx_status s = hmx_detail::check_use(u, "mac_fp16");
    if (s != HMX_OK) {
        return s;
    }
    if (n_tiles == 0 || n_tiles > HMX_MAX_RUN_TILES) {
        return hmx_detail::fail(u, HMX_ERR_RUN_LENGTH, "hmx mac_fp16: a run of %u tiles (1..%u allowed)", n_tiles,
                                HMX_MAX_RUN_TILES);
    }
    const uint64_t bytes = uint64_t(n_tiles) * HMX_TILE_BYTES;
    s = hmx_detail::check_region(u, "mac_fp16", "activation tiles", act_tiles, bytes, HMX_TILE_ALIGN, true);
    if (s == HMX_OK) {
        s = hmx_detail::check_region(u, "mac_fp16", "weight tiles", wt_tiles, bytes, HMX_TILE_ALIGN, true);
    }
    if (s != HMX_OK) {
        return s;
    }
    const uint16_t * act = static_cast<const uint16_t *>(act_tiles);
    const uint16_t * wt  = static_cast<const uint16_t *>(wt_tiles);
    if (u->later != nullptr) {
        u->later->mac(act, wt, n_tiles);
        return HMX_OK;
    }
    for (uint32_t t = 0; t < n_tiles; ++t) {
        vnpu::hmx::mac_tile(u->acc, act + t * HMX_TILE_ELEMS, wt + t * HMX_TILE_ELEMS);
    }
    return HMX_OK;
}

inline hmx_status hmx_store_fp16(hmx_unit * u, void * out_tile) {
    hmx_status s = hmx_detail::check_use(u, "store_fp16");
    if (s == HMX_OK && !u->has_scale_bias) {
        s = hmx_detail::fail(u, HMX_ERR_NO_SCALE_BIAS, "hmx store_fp16: no scale/bias block loaded "
                                                       "(hmx_set_scale_bias first)");
    }
    if (s == HMX_OK) {
        s = hmx_detail::check_region(u, "store_fp16", "output tile", out_tile, HMX_TILE_BYTES, HMX_TILE_ALIGN, true);
    }
    if (s != HMX_OK) {
        return s;
    }
    if (u->later != nullptr) {
        u->later->store(static_cast<uint16_t *>(out_tile), u->scale, u->bias);
        return HMX_OK;
    }
    vnpu::hmx::store_tile(static_cast<uint16_t *>(out_tile), u->acc, u->scale, u->bias);
    memset(u->acc, 0, sizeof u->acc);
    return HMX_OK;
}

inline hmx_status hmx_clear_acc(hmx_unit * u) {
    const hmx_status s = hmx_detail::check_use(u, "clear_acc");
    if (s == HMX_OK) {
        memset(u->acc, 0, sizeof u->acc);
        if (u->later != nullptr) {
            u->later->clear();
        }
    }
    return s;
}

inline void hmx_drain(hmx_unit * u) {
    if (u->later != nullptr) {
        u->later->drain();
    }
}

// n spare host threads compute the unit's stores with the calling thread (0: none, each call
// computes at once; last_first: for tests, deferral's). Not while the unit is in use.
inline void hmx_unit_set_helpers(hmx_unit * u, uint32_t n, bool last_first = false) {
    delete u->later;
    u->later = n != 0 ? new vnpu::hmx::deferral(n, last_first) : nullptr;
}

inline const char * hmx_fault(const hmx_unit * u) {
    return __atomic_load_n(&u->fault, __ATOMIC_ACQUIRE) == HMX_OK ? nullptr : u->fault_msg;
}

inline void hmx_reset(hmx_unit * u) {
    hmx_drain(u);
    if (u->later != nullptr) {
        u->later->clear();
    }
    memset(u->acc, 0, sizeof u->acc);
    u->has_scale_bias = false;
    u->fault_msg[0]   = '\0';
    __atomic_store_n(&u->fault, int(HMX_OK), __ATOMIC_RELEASE);
}

} // namespace hexnpu::htp
