// input_file (include/hexnpu/input-file.h): look before opening, regular files only, bounded text.
#include "hexnpu/input-file.h"

#include "file-kind.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace hexnpu {
namespace {

std::string quote(const std::string & path) { return "'" + path + "'"; }

[[noreturn]] void fail_errno(const std::string & action, const std::string & path, int err) {
    throw input_error("cannot " + action + " " + quote(path) + ": " + std::strerror(err));
}

} // namespace

input_file input_file::open(const std::string & path) {
    struct stat st {};
    {
        const int probe = ::open(path.c_str(), O_PATH | O_CLOEXEC);
        if (probe < 0) {
            fail_errno("open", path, errno);
        }
        const int rc = fstat(probe, &st);
        const int e  = errno;
        ::close(probe);
        if (rc != 0) {
            fail_errno("stat", path, e);
        }
        if (!S_ISREG(st.st_mode)) {
            throw input_error(quote(path) + " is " + file_kind_name(st.st_mode) + ", not a regular file");
        }
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        fail_errno("open", path, errno);
    }
    const dev_t dev = st.st_dev;
    const ino_t ino = st.st_ino;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail_errno("stat", path, e);
    }
    if (!S_ISREG(st.st_mode) || st.st_dev != dev || st.st_ino != ino) {
        ::close(fd);
        throw input_error(quote(path) + " changed while being opened (now " + file_kind_name(st.st_mode) + ")");
    }
    return input_file(fd, uint64_t(st.st_size));
}

input_file::input_file(input_file && other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(std::exchange(other.size_, 0)) {}

input_file & input_file::operator=(input_file && other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_   = std::exchange(other.fd_, -1);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

input_file::~input_file() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

std::string read_text_file(const std::string & path, uint64_t max_bytes) {
    const input_file in    = input_file::open(path);
    const auto       limit = [&] {
        return input_error(quote(path) + " is larger than " + std::to_string(max_bytes) +
                           " bytes, the most a text input may have");
    };
    if (in.size() > max_bytes) {
        throw limit();
    }
    // One byte more than fstat said: a file that grew since is noticed, and read up to the bound.
    std::string text(size_t(in.size()) + 1, '\0');
    size_t      got = 0;
    for (;;) {
        if (got == text.size()) {
            if (got > max_bytes) {
                throw limit();
            }
            text.resize(size_t(std::min<uint64_t>(max_bytes, 2 * uint64_t(got)) + 1));
        }
        const ssize_t n = ::read(in.fd(), text.data() + got, text.size() - got);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail_errno("read", path, errno);
        }
        if (n == 0) {
            break;
        }
        got += size_t(n);
    }
    text.resize(got);
    return text;
}

} // namespace hexnpu
