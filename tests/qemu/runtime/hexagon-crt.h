// Freestanding runtime for test programs that run under qemu-hexagon (Linux user mode): the
// program defines test_main(); _start calls it and exits with its return value.
#pragma once

extern "C" {
int test_main();
// write(2) on the Linux syscall ABI; returns the byte count or a negative errno.
long hexnpu_write(int fd, const void *data, unsigned long size);
}
