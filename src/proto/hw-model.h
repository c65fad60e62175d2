// The per-arch hardware model of the virtual NPU (architecture.md §3). The session reports it via
// hwinfo; tests override VTCM size, window size and HVX count.
#pragma once

#include <stdint.h>

namespace hexnpu::proto {

struct hw_model {
    uint32_t arch;              // 73, 75, 79, 81
    uint32_t vtcm_size;         // bytes
    uint32_t n_hvx;             // HVX contexts reported
    uint32_t n_hmx;             // HMX units (fp16 32x32)
    uint64_t window_size;       // usable bytes of the 32-bit session address window
    uint32_t dma_2d_field_bits; // width of row_size / nrows / stride fields of a 2-D descriptor
    uint32_t dma64;             // 64-bit DMA base addresses (dma_addr_t)
};

inline constexpr uint64_t MiB = uint64_t(1) << 20;

// VTCM is banked in 4 MiB: one HMX tile run may not cross a bank boundary (a bus error on the device).
inline constexpr uint32_t HW_VTCM_BANK_BYTES = 4u << 20;

constexpr bool hw_model_for_arch(uint32_t arch, hw_model & out) {
    switch (arch) {
        case 73: out = hw_model{73, uint32_t(8 * MiB), 4, 1, 3072 * MiB, 16, 0}; return true;
        case 75: out = hw_model{75, uint32_t(8 * MiB), 6, 1, 3584 * MiB, 24, 0}; return true;
        case 79: out = hw_model{79, uint32_t(8 * MiB), 6, 1, 3584 * MiB, 24, 0}; return true;
        case 81: out = hw_model{81, uint32_t(8 * MiB), 6, 1, 3584 * MiB, 24, 1}; return true;
        default: return false;
    }
}

inline constexpr uint32_t HW_DEFAULT_ARCH = 79;

} // namespace hexnpu::proto
