// Unaligned and partial vector memory access for the NPU runtime and kernels. Written with the
// intrinsics only, so the same helpers compile for Hexagon (real vmemu / predicated vmem) and
// for x86 (the emulation).
//
// On Hexagon an unaligned access is a dereference of an HVX_UVector pointer (vmemu); an aligned
// one of an HVX_Vector pointer (vmem, which ignores the low 7 address bits).
#pragma once

#include <stdint.h>

namespace hexnpu::hvx {

// 128 bytes from any address.
inline HVX_Vector load_unaligned(const void *src) { return *static_cast<const HVX_UVector *>(src); }

// 128 bytes to any address.
inline void store_unaligned(void *dst, HVX_Vector v) { *static_cast<HVX_UVector *>(dst) = v; }

// The first n bytes of v (n <= 128) to any address, touching no other byte: the bytes are
// rotated to the destination's offset inside its 128-byte block and written with predicated
// aligned stores into at most two blocks.
inline void store_first_bytes(void *dst, HVX_Vector v, uint32_t n) {
    if (n == 0) return;
    const uint32_t offset = uint32_t(reinterpret_cast<uintptr_t>(dst)) & 127;
    auto *block = reinterpret_cast<HVX_Vector *>(reinterpret_cast<uintptr_t>(dst) & ~uintptr_t(127));
    const uint32_t end = offset + n;
    const HVX_Vector rotated = Q6_V_vlalign_VVR(v, v, int32_t(offset));
    // First block: bytes [offset, min(end, 128)); vsetq2(128) is all lanes.
    const HVX_VectorPred below_offset = Q6_Q_vsetq_R(int32_t(offset));
    const HVX_VectorPred below_end = Q6_Q_vsetq2_R(int32_t(end < 128 ? end : 128));
    Q6_vmem_QRIV(Q6_Q_and_QQn(below_end, below_offset), block, rotated);
    // Second block: bytes [0, end - 128).
    if (end > 128) Q6_vmem_QRIV(Q6_Q_vsetq_R(int32_t(end - 128)), block + 1, rotated);
}

} // namespace hexnpu::hvx
