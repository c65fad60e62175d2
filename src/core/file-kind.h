// "a character device", "a FIFO" ...: what a non-regular file is, for the messages of
// input_file (inputs: GGUF models, text files) and output_file (outputs).
#pragma once

#include <sys/stat.h>

namespace hexnpu {

inline const char * file_kind_name(mode_t mode) {
    if (S_ISREG(mode)) {
        return "a regular file";
    }
    if (S_ISDIR(mode)) {
        return "a directory";
    }
    if (S_ISCHR(mode)) {
        return "a character device";
    }
    if (S_ISBLK(mode)) {
        return "a block device";
    }
    if (S_ISFIFO(mode)) {
        return "a FIFO";
    }
    if (S_ISSOCK(mode)) {
        return "a socket";
    }
    if (S_ISLNK(mode)) {
        return "a symbolic link";
    }
    return "a special file";
}

} // namespace hexnpu
