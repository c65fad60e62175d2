// HVX register types for the x86 emulation (128-byte HVX mode) and the lane helpers the
// intrinsic headers share. Kernels never include this directly: they include "vnpu/hvx/hvx.h".
#pragma once

#include <cstddef>
#include <cstdint>

// A vector register: 32 x 32-bit elements, exactly the toolchain's shape (`long` is 32-bit on
// Hexagon), so GCC/Clang vector-extension operators on HVX_Vector mean the same on both targets.
// may_alias: kernels read any buffer through HVX_Vector pointers, as on the device.
typedef int32_t HVX_Vector __attribute__((__vector_size__(128), __aligned__(128), __may_alias__));
// A register pair; lo (the first 128 bytes) is the even register, hi the odd one.
typedef int32_t HVX_VectorPair __attribute__((__vector_size__(256), __aligned__(256), __may_alias__));
// Under-aligned views: on Hexagon `*(HVX_UVector *)p` compiles to vmemu (unaligned access).
typedef int32_t HVX_UVector __attribute__((__vector_size__(128), __aligned__(4), __may_alias__));
typedef int32_t HVX_UVectorPair __attribute__((__vector_size__(256), __aligned__(4), __may_alias__));

// A vector predicate: one bit per byte lane. Stored as a byte mask (0xFF where the bit is set,
// 0x00 elsewhere), the same form the toolchain uses when it moves a Q register into a vector
// (vand(Q, -1)). It is a distinct type so that a predicate cannot be mixed up with data by
// accident; every producer below writes only 0x00/0xFF bytes.
struct HVX_VectorPred {
    HVX_Vector mask;
};

namespace hexnpu::hvx::detail {

inline constexpr int kVectorBytes = 128;

// Lane-typed views of a register as GCC/Clang vectors (same bits, different element type).
typedef uint8_t VecU8 __attribute__((__vector_size__(128)));
typedef int16_t VecI16 __attribute__((__vector_size__(128)));
typedef uint16_t VecU16 __attribute__((__vector_size__(128)));
typedef int32_t VecI32 __attribute__((__vector_size__(128)));
typedef uint32_t VecU32 __attribute__((__vector_size__(128)));

// Plain arrays of lanes: the portable paths work on these with element loops.
template <class T>
struct alignas(128) Lanes {
    static constexpr int count = kVectorBytes / int(sizeof(T));
    T at[count];
    T &operator[](int i) { return at[i]; }
    const T &operator[](int i) const { return at[i]; }
};

template <class T>
inline Lanes<T> lanes(HVX_Vector v) {
    Lanes<T> l;
    __builtin_memcpy(l.at, &v, kVectorBytes);
    return l;
}

template <class T>
inline HVX_Vector vector_of(const Lanes<T> &l) {
    HVX_Vector v;
    __builtin_memcpy(&v, l.at, kVectorBytes);
    return v;
}

inline HVX_Vector lo_of(HVX_VectorPair w) {
    HVX_Vector v;
    __builtin_memcpy(&v, &w, kVectorBytes);
    return v;
}

inline HVX_Vector hi_of(HVX_VectorPair w) {
    HVX_Vector v;
    __builtin_memcpy(&v, reinterpret_cast<const char *>(&w) + kVectorBytes, kVectorBytes);
    return v;
}

inline HVX_VectorPair pair_of(HVX_Vector lo, HVX_Vector hi) {
    HVX_VectorPair w;
    __builtin_memcpy(&w, &lo, kVectorBytes);
    __builtin_memcpy(reinterpret_cast<char *>(&w) + kVectorBytes, &hi, kVectorBytes);
    return w;
}

// Element-wise maps over lanes of type T. The callable gets the lanes promoted to int64_t-safe
// values and returns the exact result; storing it into T wraps modulo 2^bits (C++20).
template <class T, class F>
inline HVX_Vector map_lanes(HVX_Vector a, F f) {
    const Lanes<T> x = lanes<T>(a);
    Lanes<T> d;
    for (int i = 0; i < Lanes<T>::count; ++i) d[i] = T(f(x[i]));
    return vector_of(d);
}

template <class T, class F>
inline HVX_Vector map_lanes(HVX_Vector a, HVX_Vector b, F f) {
    const Lanes<T> x = lanes<T>(a), y = lanes<T>(b);
    Lanes<T> d;
    for (int i = 0; i < Lanes<T>::count; ++i) d[i] = T(f(x[i], y[i]));
    return vector_of(d);
}

template <class T, class F>
inline HVX_Vector map_lanes(HVX_Vector a, HVX_Vector b, HVX_Vector c, F f) {
    const Lanes<T> x = lanes<T>(a), y = lanes<T>(b), z = lanes<T>(c);
    Lanes<T> d;
    for (int i = 0; i < Lanes<T>::count; ++i) d[i] = T(f(x[i], y[i], z[i]));
    return vector_of(d);
}

// Clamp an exact value to the range of T (the instructions' :sat).
template <class T>
constexpr T saturate(int64_t v) {
    constexpr int64_t lo = int64_t(T(0)) - (T(-1) < T(0) ? (int64_t(1) << (8 * sizeof(T) - 1)) : 0);
    constexpr int64_t hi = T(-1) < T(0) ? (int64_t(1) << (8 * sizeof(T) - 1)) - 1
                                        : int64_t((uint64_t(1) << (8 * sizeof(T))) - 1);
    return T(v < lo ? lo : (v > hi ? hi : v));
}

// Byte k (0..3) / halfword k (0..1) of a scalar register, signed or unsigned.
inline int8_t byte_of(int32_t r, int k) { return int8_t(uint32_t(r) >> (8 * k)); }
inline uint8_t ubyte_of(int32_t r, int k) { return uint8_t(uint32_t(r) >> (8 * k)); }
inline int16_t half_of(int32_t r, int k) { return int16_t(uint32_t(r) >> (16 * k)); }
inline uint16_t uhalf_of(int32_t r, int k) { return uint16_t(uint32_t(r) >> (16 * k)); }

} // namespace hexnpu::hvx::detail
