// output_file (include/hexnpu/output-file.h): unique temporary next to the target, identity checks
// against the inputs, regular files only, atomic rename, cleanup on failure and on SIGINT/SIGTERM/SIGHUP.
#include "hexnpu/output-file.h"

#include "file-kind.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits.h>
#include <mutex>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hexnpu {
namespace {

std::string quote(const std::string & path) { return "'" + path + "'"; }

[[noreturn]] void fail(const std::string & message) { throw output_error(message); }

[[noreturn]] void fail_errno(const std::string & action, const std::string & path, int err) {
    fail("cannot " + action + " " + quote(path) + ": " + std::strerror(err));
}

// --- Removing temporaries when the process is interrupted ------------------------------------
//
// A fixed table of temporary paths that a SIGINT/SIGTERM/SIGHUP handler unlinks before letting the
// signal end the process (async-signal-safe: atomics, unlink, raise). Handlers are installed once,
// only for signals whose disposition is still the default (a host program's own handler, or
// nohup's SIG_IGN, is left alone).

struct cleanup_slot {
    std::atomic<int> state{0};  // 0 free, 1 being filled, 2 armed
    char             path[PATH_MAX];
};

constexpr int      kSlots = 64;
cleanup_slot       g_slots[kSlots];
constexpr int      kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

void on_terminating_signal(int sig) {
    for (cleanup_slot & s : g_slots) {
        if (s.state.load(std::memory_order_acquire) == 2) {
            ::unlink(s.path);
        }
    }
    // SA_RESETHAND restored the default action; the signal is blocked in this handler, so it is
    // delivered (and ends the process) as soon as the handler returns.
    ::raise(sig);
}

void install_cleanup_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (const int sig : kCleanupSignals) {
            struct sigaction old{};
            if (sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) {
                continue;
            }
            struct sigaction sa{};
            sa.sa_handler = on_terminating_signal;
            sa.sa_flags   = SA_RESETHAND;
            sigemptyset(&sa.sa_mask);
            sigaction(sig, &sa, nullptr);
        }
    });
}

int arm_cleanup(const std::string & path) {
    if (path.size() >= PATH_MAX) {
        return -1;
    }
    install_cleanup_handlers();
    for (int i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (g_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
            std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
            g_slots[i].state.store(2, std::memory_order_release);
            return i;
        }
    }
    return -1;  // more than kSlots files in flight: they are still removed on ordinary failures
}

void disarm_cleanup(int slot) {
    if (slot >= 0) {
        g_slots[slot].state.store(0, std::memory_order_release);
    }
}

// --- Paths -----------------------------------------------------------------------------------

std::string dir_of(const std::string & path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string & path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string random_suffix() {
    uint8_t bytes[6];
    size_t  got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {  // no entropy source: pid and a counter are still unique per process
            static std::atomic<uint64_t> counter{0};
            const uint64_t v = (uint64_t(getpid()) << 24) ^ counter.fetch_add(1) ^ uint64_t(uintptr_t(&got));
            std::memcpy(bytes, &v, sizeof bytes);
            break;
        }
        got += size_t(n);
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string           s;
    for (const uint8_t b : bytes) {
        s += hex[b >> 4];
        s += hex[b & 15];
    }
    return s;
}

} // namespace

output_file output_file::create(const std::string & path, std::span<const std::string> inputs) {
    if (path.empty()) {
        fail("no output file given (an empty path)");
    }
    output_file out;
    out.path_ = path;
    out.inputs_.assign(inputs.begin(), inputs.end());
    for (const std::string & in : inputs) {
        struct stat st{};
        out.input_ids_.push_back(::stat(in.c_str(), &st) == 0 ? identity{uint64_t(st.st_dev), uint64_t(st.st_ino)}
                                                               : identity{});
    }

    // Which file gets replaced: the path itself, or the regular file a symbolic link names.
    out.target_ = path;
    struct stat st{};
    bool        exists = false;
    if (::lstat(path.c_str(), &st) == 0) {
        exists = true;
        if (S_ISLNK(st.st_mode)) {
            if (::stat(path.c_str(), &st) != 0) {
                fail(quote(path) + " is a symbolic link to a missing file (" + std::strerror(errno) +
                     "); give the file itself as the output");
            }
            char resolved[PATH_MAX];
            if (::realpath(path.c_str(), resolved) == nullptr) {
                fail_errno("resolve the symbolic link", path, errno);
            }
            out.target_ = resolved;
        }
    } else if (errno != ENOENT) {
        fail_errno("write", path, errno);
    }
    if (!exists && (path.back() == '/')) {
        fail(quote(path) + " names a directory, not a file");
    }
    out.check_target(false);

    // The temporary: a fresh name in the target's directory, created exclusively.
    const std::string dir  = dir_of(out.target_);
    std::string       base = base_of(out.target_);
    if (base.size() > 200) {
        base.resize(200);  // room for the suffix within NAME_MAX
    }
    const mode_t mode = exists ? (st.st_mode & 0777) : 0666;
    for (int attempt = 0; attempt < 100 && out.fd_ < 0; ++attempt) {
        std::string temp = (dir == "/" ? "" : dir) + "/" + base + ".tmp-" + random_suffix();
        const int   fd   = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0) {
            out.fd_   = fd;
            out.temp_ = std::move(temp);
        } else if (errno != EEXIST) {
            fail("cannot create a temporary file in " + quote(dir) + " for " + quote(path) + ": " +
                 std::strerror(errno));
        }
    }
    if (out.fd_ < 0) {
        fail("cannot create a temporary file in " + quote(dir) + " for " + quote(path) + ": every name tried exists");
    }
    if (exists) {
        ::fchmod(out.fd_, mode);  // the umask applied at open; a replaced file keeps its bits
    }
    struct stat tst{};
    if (::fstat(out.fd_, &tst) != 0) {
        const int e = errno;
        out.discard();
        fail_errno("stat the temporary file", out.temp_, e);
    }
    out.temp_id_ = {uint64_t(tst.st_dev), uint64_t(tst.st_ino)};
    out.slot_    = arm_cleanup(out.temp_);
    return out;
}

// The target is a regular file (or absent) and none of the inputs.
void output_file::check_target(bool at_commit) const {
    struct stat st{};
    if (::lstat(target_.c_str(), &st) != 0) {
        if (errno == ENOENT) {
            return;
        }
        fail_errno("write", path_, errno);
    }
    if (!S_ISREG(st.st_mode)) {
        fail(quote(path_) + (at_commit ? " became " : " is ") + file_kind_name(st.st_mode) +
             ", not a regular file: hexnpu writes outputs only to regular files (through a temporary file "
             "and a rename) and never replaces or removes a device, FIFO, socket or directory");
    }
    const identity id{uint64_t(st.st_dev), uint64_t(st.st_ino)};
    for (size_t i = 0; i < inputs_.size(); ++i) {
        identity now = input_ids_[i];
        if (at_commit) {
            struct stat ist{};
            if (::stat(inputs_[i].c_str(), &ist) == 0) {
                now = {uint64_t(ist.st_dev), uint64_t(ist.st_ino)};
            }
        }
        if ((input_ids_[i] == id && id.ino != 0) || (now == id && id.ino != 0)) {
            fail("the output " + quote(path_) + " is the input " + quote(inputs_[i]) +
                 " (the same file); write the output to another file");
        }
    }
}

output_file::output_file(output_file && o) noexcept
    : path_(std::move(o.path_)), target_(std::move(o.target_)), temp_(std::move(o.temp_)),
      inputs_(std::move(o.inputs_)), input_ids_(std::move(o.input_ids_)), temp_id_(o.temp_id_), fd_(o.fd_),
      slot_(o.slot_), written_(o.written_), committed_(o.committed_) {
    o.fd_   = -1;
    o.slot_ = -1;
    o.temp_.clear();
}

output_file & output_file::operator=(output_file && o) noexcept {
    if (this != &o) {
        discard();
        path_      = std::move(o.path_);
        target_    = std::move(o.target_);
        temp_      = std::move(o.temp_);
        inputs_    = std::move(o.inputs_);
        input_ids_ = std::move(o.input_ids_);
        temp_id_   = o.temp_id_;
        fd_        = o.fd_;
        slot_      = o.slot_;
        written_   = o.written_;
        committed_ = o.committed_;
        o.fd_      = -1;
        o.slot_    = -1;
        o.temp_.clear();
    }
    return *this;
}

output_file::~output_file() { discard(); }

void output_file::write(const void * data, size_t n) {
    if (fd_ < 0) {
        fail("cannot write " + quote(path_) + ": the file is already committed or discarded");
    }
    const auto * p = static_cast<const uint8_t *>(data);
    while (n > 0) {
        const ssize_t done = ::write(fd_, p, n);
        if (done < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail_errno("write", path_, errno);
        }
        p += done;
        n -= size_t(done);
        written_ += uint64_t(done);
    }
}

void output_file::commit() {
    if (fd_ < 0 || committed_) {
        fail("cannot commit " + quote(path_) + ": the file is already committed or discarded");
    }
    try {
        if (::fsync(fd_) != 0) {
            fail_errno("write", path_, errno);
        }
        const int closed = ::close(fd_);
        fd_              = -1;
        if (closed != 0) {
            fail_errno("write", path_, errno);
        }
        check_target(true);
        struct stat st{};
        if (::lstat(temp_.c_str(), &st) != 0 || identity{uint64_t(st.st_dev), uint64_t(st.st_ino)} != temp_id_) {
            fail("cannot write " + quote(path_) + ": the temporary file " + quote(temp_) + " was removed or replaced");
        }
        if (::rename(temp_.c_str(), target_.c_str()) != 0) {
            fail_errno("rename " + quote(temp_) + " to", target_, errno);
        }
    } catch (...) {
        discard();
        throw;
    }
    committed_ = true;
    disarm_cleanup(slot_);
    slot_ = -1;
    temp_.clear();
    // Make the rename itself durable; a failure here cannot undo it and loses nothing.
    const int dfd = ::open(dir_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void output_file::discard() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    if (!temp_.empty() && !committed_) {
        struct stat st{};
        if (::lstat(temp_.c_str(), &st) == 0 && identity{uint64_t(st.st_dev), uint64_t(st.st_ino)} == temp_id_) {
            ::unlink(temp_.c_str());
        }
    }
    disarm_cleanup(slot_);
    slot_ = -1;
    temp_.clear();
}

} // namespace hexnpu
