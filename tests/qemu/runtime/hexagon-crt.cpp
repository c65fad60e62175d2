// Start-up, system calls and the compiler-runtime memory and division helpers for freestanding
// Hexagon test programs under qemu-hexagon. Linux on Hexagon: syscall number in r6, arguments in r0..r5,
// `trap0(#1)`, result in r0; numbers from the generic table (write 64, exit_group 94).
#include "hexagon-crt.h"

#include <stdint.h>

namespace {

constexpr long kSysWrite = 64;
constexpr long kSysExitGroup = 94;

long syscall3(long number, long a, long b, long c) {
    register long r0 asm("r0") = a;
    register long r1 asm("r1") = b;
    register long r2 asm("r2") = c;
    register long r6 asm("r6") = number;
    asm volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r6) : "memory");
    return r0;
}

// Hexagon has no divide instruction and Debian ships no Hexagon compiler runtime: restoring
// division, one quotient bit per step, with nothing clang could turn back into a division (which
// would call the helper itself).
uint64_t divide_u64(uint64_t n, uint64_t d, uint64_t *remainder) {
    uint64_t q = 0, r = 0;
    for (int bit = 63; bit >= 0; --bit) {
        r = (r << 1) | ((n >> bit) & 1);
        if (r >= d) {
            r -= d;
            q |= uint64_t(1) << bit;
        }
    }
    *remainder = r;
    return q;
}

} // namespace

extern "C" {

// The helpers clang calls for unsigned / and % (standard calling convention).
uint32_t __hexagon_udivsi3(uint32_t n, uint32_t d) {
    uint64_t r;
    return uint32_t(divide_u64(n, d, &r));
}
uint32_t __hexagon_umodsi3(uint32_t n, uint32_t d) {
    uint64_t r;
    divide_u64(n, d, &r);
    return uint32_t(r);
}
uint64_t __hexagon_udivdi3(uint64_t n, uint64_t d) {
    uint64_t r;
    return divide_u64(n, d, &r);
}
uint64_t __hexagon_umoddi3(uint64_t n, uint64_t d) {
    uint64_t r;
    divide_u64(n, d, &r);
    return r;
}

long hexnpu_write(int fd, const void *data, unsigned long size) {
    const char *p = static_cast<const char *>(data);
    unsigned long done = 0;
    while (done < size) {
        const long n = syscall3(kSysWrite, fd, long(p + done), long(size - done));
        if (n <= 0) return n;
        done += unsigned(n);
    }
    return long(done);
}

[[noreturn]] void _start() {
    const int status = test_main();
    for (;;) syscall3(kSysExitGroup, status, 0, 0);
}

// Clang emits calls to these for block copies and clears; -ffreestanding keeps it from turning
// the loops below back into calls to themselves.
void *memcpy(void *dst, const void *src, unsigned long n) {
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    for (unsigned long i = 0; i < n; ++i) d[i] = s[i];
    return dst;
}

void *memmove(void *dst, const void *src, unsigned long n) {
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    if (d < s)
        for (unsigned long i = 0; i < n; ++i) d[i] = s[i];
    else
        for (unsigned long i = n; i > 0; --i) d[i - 1] = s[i - 1];
    return dst;
}

void *memset(void *dst, int value, unsigned long n) {
    auto *d = static_cast<unsigned char *>(dst);
    for (unsigned long i = 0; i < n; ++i) d[i] = static_cast<unsigned char>(value);
    return dst;
}

} // extern "C"
