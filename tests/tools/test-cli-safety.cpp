// Issue 11 end to end: no `hexnpu` command destroys its input or a file it did not create, and
// every setting is parsed strictly. One test (or a few) per defect class, each reproducing the
// issue's example through the real binary and checking what the issue asks: the input's bytes
// before and after, the directory's names (no stray temporaries), device nodes and FIFOs as they
// were, exit code 1 with an "error:" line on stderr. Issue 29's hostile inputs too: text inputs that
// are no regular files (class 5), thread counts out of range and threads that cannot start (class 8).
// HEXNPU_BIN runs another hexnpu binary (an older build, to see a test fail before its fix).
//
// Device nodes are fakes made with mknod in the test's own directory (needs root; skipped visibly
// otherwise) with the numbers of /dev/null, /dev/full and /dev/zero.
#include "hexnpu/gguf.h"

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <poll.h>
#include <random>
#include <set>
#include <string>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace hexnpu;
using namespace std::chrono_literals;

namespace {

struct run_result {
    int                       exit_code = -1;  // 128 + signal when killed
    std::string               out, err;
    std::chrono::milliseconds elapsed{0};
    bool                      timed_out = false;
};

struct run_options {
    std::map<std::string, std::string> env;          // set for the child
    uint64_t                           fsize_limit = 0;  // RLIMIT_FSIZE (SIGXFSZ ignored), 0: none
    // RLIMIT_NPROC, 0: none. Root is exempt from it, so a root test runs the child as nobody (which
    // has no other processes), and the limit counts the child's own threads.
    uint64_t                           nproc_limit = 0;
    std::chrono::milliseconds          timeout{20000};   // then SIGKILL
};

std::string hexnpu_bin() {
    const char * env = std::getenv("HEXNPU_BIN");
    return env != nullptr && *env != '\0' ? env : HEXNPU_BIN_DIR "/hexnpu";
}

// Runs build/bin/hexnpu with `args` (no shell), capturing stdout and stderr separately.
run_result hexnpu(const std::vector<std::string> & args, const run_options & opt = {}) {
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        return {};
    }
    const auto  t0  = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        for (const auto & [k, v] : opt.env) {
            setenv(k.c_str(), v.c_str(), 1);
        }
        if (opt.fsize_limit) {
            signal(SIGXFSZ, SIG_IGN);
            const rlimit limit{opt.fsize_limit, opt.fsize_limit};
            setrlimit(RLIMIT_FSIZE, &limit);
        }
        if (opt.nproc_limit) {
            const rlimit limit{opt.nproc_limit, opt.nproc_limit};
            if (setrlimit(RLIMIT_NPROC, &limit) != 0 || (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))) {
                _exit(126);
            }
        }
        std::vector<char *> argv;
        std::string         bin = hexnpu_bin();
        argv.push_back(bin.data());
        std::vector<std::string> copy = args;
        for (std::string & a : copy) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        execv(bin.c_str(), argv.data());
        // Say why: a root run drops to nobody for RLIMIT_NPROC, which cannot reach a build under a
        // directory only root may search (mktemp -d makes them 0700).
        const std::string why = "test: cannot execute " + bin + " as uid " + std::to_string(getuid()) + ": " +
                                std::strerror(errno) + "\n";
        (void) !write(2, why.data(), why.size());
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    run_result r;
    pollfd     fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int        open_fds = 2;
    while (open_fds > 0) {
        const auto left = opt.timeout - (std::chrono::steady_clock::now() - t0);
        if (left <= 0ms) {
            r.timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, int(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()) + 1) <= 0) {
            continue;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP))) {
                char          buf[65536];
                const ssize_t n = read(fds[i].fd, buf, sizeof buf);
                if (n > 0) {
                    (i == 0 ? r.out : r.err).append(buf, size_t(n));
                } else {
                    close(fds[i].fd);
                    fds[i].fd = -1;
                    --open_fds;
                }
            }
        }
    }
    for (const pollfd & p : fds) {
        if (p.fd >= 0) {
            close(p.fd);
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.elapsed   = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::string describe(const std::vector<std::string> & args, const run_result & r) {
    std::string s = "hexnpu";
    for (const std::string & a : args) {
        s += " " + a;
    }
    return s + "\n  exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") + "\n  stdout: " +
           r.out.substr(0, 2000) + "\n  stderr: " + r.err;
}

// Exit code 1 and an "error: " line on stderr (containing `text`, when given).
::testing::AssertionResult failed_with(const run_result & r, const std::string & text = "") {
    const bool has_error_line = r.err.rfind("error: ", 0) == 0 || r.err.find("\nerror: ") != std::string::npos;
    if (r.exit_code != 1 || !has_error_line || r.err.find(text) == std::string::npos) {
        return ::testing::AssertionFailure() << "expected exit 1 and an 'error: ' line containing '" << text << "'";
    }
    return ::testing::AssertionSuccess();
}

std::string read_all(const fs::path & p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path & p, const std::vector<uint8_t> & bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// FNV-1a of the whole file: the "hash before/after" of an input.
uint64_t hash_of(const fs::path & p) {
    uint64_t h = 1469598103934665603ull;
    for (const char c : read_all(p)) {
        h = (h ^ uint8_t(c)) * 1099511628211ull;
    }
    return h;
}

std::set<std::string> names_in(const fs::path & dir) {
    std::set<std::string> names;
    for (const fs::directory_entry & e : fs::directory_iterator(dir)) {
        names.insert(e.path().filename().string());
    }
    return names;
}

struct node_state {
    bool   exists = false;
    mode_t mode   = 0;
    dev_t  rdev   = 0;
    ino_t  ino    = 0;
    friend bool operator==(const node_state &, const node_state &) = default;
};

node_state state_of(const fs::path & p) {
    struct stat st{};
    if (lstat(p.c_str(), &st) != 0) {
        return {};
    }
    return {true, st.st_mode, st.st_rdev, st.st_ino};
}

void put16(std::vector<uint8_t> & v, size_t at, uint16_t x) {
    v[at]     = uint8_t(x);
    v[at + 1] = uint8_t(x >> 8);
}

// Hand-made blocks, independent of the quantizers: q8_0 (fp16 d, 32 x int8) with d = 1/64 ...
std::vector<uint8_t> q8_0_rows(int64_t ne0, int64_t rows, std::mt19937 & rng) {
    std::vector<uint8_t> v(size_t(ne0 / 32 * rows * 34));
    for (size_t b = 0; b < v.size() / 34; ++b) {
        put16(v, b * 34, 0x2400);
        for (int i = 0; i < 32; ++i) {
            v[b * 34 + 2 + size_t(i)] = uint8_t(rng() % 200 - 100);
        }
    }
    return v;
}

// ... and q2_K (scales[16], qs[64], fp16 d, fp16 dmin) with d = 1, dmin = 0.5.
std::vector<uint8_t> q2_K_rows(int64_t ne0, int64_t rows, std::mt19937 & rng) {
    std::vector<uint8_t> v(size_t(ne0 / 256 * rows * 84));
    for (size_t b = 0; b < v.size() / 84; ++b) {
        for (int i = 0; i < 80; ++i) {
            v[b * 84 + size_t(i)] = uint8_t(rng());
        }
        put16(v, b * 84 + 80, 0x3C00);
        put16(v, b * 84 + 82, 0x3800);
    }
    return v;
}

std::vector<float> f32_values(size_t n, std::mt19937 & rng) {
    std::normal_distribution<float> dist(0.0f, 0.5f);
    std::vector<float>              v(n);
    for (float & x : v) {
        x = dist(rng);
    }
    return v;
}

// A GGUF of one 4096 x 256 f32 tensor (4 MiB: writing or quantizing it takes a while).
void write_big_model(const fs::path & file) {
    std::mt19937             rng(5);
    const std::vector<float> big = f32_values(size_t(4096) * 256, rng);
    gguf::writer             w;
    const int64_t            ne[] = {4096, 256};
    w.add_tensor("big", GGML_TYPE_F32, ne, big.data());
    write_bytes(file, w.write_to_memory());
}

class CliSafety : public testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("hexnpu-cli-safety-" + std::to_string(getpid()) + "-" +
                                            testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        // The model every test starts from: an f32 matrix to quantize, a q8_0 matrix to tile, a norm.
        std::mt19937 rng(11);
        f32_    = f32_values(256 * 64, rng);
        q8_     = q8_0_rows(256, 32, rng);
        norm_   = f32_values(256, rng);
        model_  = path("model.gguf");
        gguf::writer w;
        w.set("general.architecture", gguf::value::from_string("llama"));
        const int64_t ne_w[] = {256, 64}, ne_q[] = {256, 32}, ne_n[] = {256};
        w.add_tensor("w", GGML_TYPE_F32, ne_w, f32_.data());
        w.add_tensor("wq", GGML_TYPE_Q8_0, ne_q, q8_.data());
        w.add_tensor("norm", GGML_TYPE_F32, ne_n, norm_.data());
        write_bytes(model_, w.write_to_memory());
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path path(const std::string & name) const { return dir_ / name; }
    std::string p(const std::string & name) const { return path(name).string(); }

    void need_root() {
        if (geteuid() != 0) {
            GTEST_SKIP() << "device-node cases need root (mknod of a fake character device)";
        }
    }
    fs::path make_char_device(const std::string & name, unsigned major, unsigned minor) {
        const fs::path node = path(name);
        EXPECT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(major, minor)), 0) << std::strerror(errno);
        return node;
    }

    fs::path           dir_, model_;
    std::vector<float> f32_, norm_;
    std::vector<uint8_t> q8_;
};

// ---- Class 1: the output aliases the input -------------------------------------------------------

TEST_F(CliSafety, Class1_TileOrQuantizeOntoTheirInputIsRefusedByIdentity) {
    ASSERT_EQ(link(model_.c_str(), path("hard.gguf").c_str()), 0);
    fs::create_symlink("model.gguf", path("soft.gguf"));
    fs::create_directories(path("sub"));
    const uint64_t              before = hash_of(model_);
    const std::set<std::string> names  = names_in(dir_);
    for (const std::string & out : {p("model.gguf"), (dir_ / "." / "model.gguf").string(),
                                    (dir_ / "sub" / ".." / "model.gguf").string(), p("hard.gguf"), p("soft.gguf")}) {
        for (const std::vector<std::string> & args : {
                 std::vector<std::string>{"tile", p("model.gguf"), "--tensor", "wq", "-o", out},
                 std::vector<std::string>{"quantize", p("model.gguf"), out, "q4_0"},
                 // the input spelled differently from the output
                 std::vector<std::string>{"quantize", out, p("model.gguf"), "q8_0"},
             }) {
            const run_result r = hexnpu(args);
            EXPECT_TRUE(failed_with(r, "is the input")) << describe(args, r);
            EXPECT_EQ(hash_of(model_), before) << describe(args, r);
        }
    }
    EXPECT_EQ(names_in(dir_), names) << "no temporary left behind";
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("soft.gguf"))));
}

// ---- Class 2: the temporary aliases the input --------------------------------------------------------

TEST_F(CliSafety, Class2_AnInputNamedLikeTheOldTemporaryIsUntouched) {
    // quantize m.gguf.tmp m.gguf: the old writer's fixed temporary for m.gguf was the input itself.
    fs::copy_file(model_, path("m.gguf.tmp"));
    const uint64_t   before = hash_of(path("m.gguf.tmp"));
    const std::vector<std::string> args{"quantize", p("m.gguf.tmp"), p("m.gguf"), "q4_0", "--allow-requantize"};
    const run_result r = hexnpu(args);
    ASSERT_EQ(r.exit_code, 0) << describe(args, r);
    EXPECT_EQ(hash_of(path("m.gguf.tmp")), before);
    const gguf::reader out = gguf::reader::open(p("m.gguf"));
    ASSERT_NE(out.find_tensor("w"), nullptr);
    EXPECT_EQ(out.find_tensor("w")->type, GGML_TYPE_Q4_0);
    EXPECT_EQ(names_in(dir_), (std::set<std::string>{"model.gguf", "m.gguf.tmp", "m.gguf"}));

    // synth and tile next to a file named OUT.tmp (here a link to the model): neither writes
    // through it nor removes it.
    fs::create_symlink("model.gguf", path("s.gguf.tmp"));
    fs::create_symlink("model.gguf", path("t.bin.tmp"));
    const uint64_t model_hash = hash_of(model_);
    EXPECT_EQ(hexnpu({"synth", p("s.gguf")}).exit_code, 0);
    EXPECT_EQ(hexnpu({"tile", p("m.gguf"), "--tensor", "w", "-o", p("t.bin")}).exit_code, 0);
    EXPECT_EQ(hash_of(model_), model_hash);
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("s.gguf.tmp"))));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("t.bin.tmp"))));
    EXPECT_EQ(names_in(dir_), (std::set<std::string>{"model.gguf", "m.gguf.tmp", "m.gguf", "s.gguf", "s.gguf.tmp",
                                                     "t.bin", "t.bin.tmp"}));
}

// ---- Class 3: concurrent writers ----------------------------------------------------------------------

TEST_F(CliSafety, Class3_ConcurrentQuantizeRunsToOneOutputLeaveOneWholeResult) {
    write_big_model(path("in.gguf"));
    const uint64_t in_hash = hash_of(path("in.gguf"));

    // The two possible results, written one at a time.
    ASSERT_EQ(hexnpu({"quantize", p("in.gguf"), p("ref-q4.gguf"), "q4_0"}).exit_code, 0);
    ASSERT_EQ(hexnpu({"quantize", p("in.gguf"), p("ref-q8.gguf"), "q8_0"}).exit_code, 0);
    const std::string ref_q4 = read_all(path("ref-q4.gguf")), ref_q8 = read_all(path("ref-q8.gguf"));
    ASSERT_NE(ref_q4, ref_q8);

    for (int round = 0; round < 6; ++round) {
        // Start both at once (two children of a forked helper would not be closer than this).
        std::vector<pid_t> pids;
        for (const char * type : {"q4_0", "q8_0"}) {
            const pid_t pid = fork();
            if (pid == 0) {
                const int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                std::string bin = hexnpu_bin(), in = p("in.gguf"), out = p("out.gguf");
                std::string q = "quantize", t = type, th = "--threads", n = "1";
                char *      argv[] = {bin.data(), q.data(), in.data(), out.data(),
                                      t.data(),   th.data(), n.data(), nullptr};
                execv(bin.c_str(), argv);
                _exit(127);
            }
            pids.push_back(pid);
        }
        for (const pid_t pid : pids) {
            int status = 0;
            waitpid(pid, &status, 0);
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": status " << status;
        }
        const std::string result = read_all(path("out.gguf"));
        EXPECT_TRUE(result == ref_q4 || result == ref_q8)
            << "round " << round << ": " << result.size() << " bytes, neither whole result (" << ref_q4.size()
            << " or " << ref_q8.size() << ")";
        EXPECT_EQ(names_in(dir_),
                  (std::set<std::string>{"model.gguf", "in.gguf", "ref-q4.gguf", "ref-q8.gguf", "out.gguf"}))
            << "round " << round;
    }
    EXPECT_EQ(hash_of(path("in.gguf")), in_hash);
}

// ---- Class 4: outputs that are not regular files --------------------------------------------------------

// Every writing command, pointed at `out`.
std::vector<std::vector<std::string>> writers_to(const std::string & model, const std::string & out) {
    return {
        {"synth", out},
        {"quantize", model, out, "q4_0", "--allow-requantize"},
        {"tile", model, "--tensor", "wq", "-o", out},
        {"test-ops", "-b", "CPU", "-o", "ADD", "--trace", out},
    };
}

TEST_F(CliSafety, Class4_DeviceOutputsAreRefusedAndLeftInPlace) {
    need_root();
    const fs::path null = make_char_device("null", 1, 3), full = make_char_device("full", 1, 7);
    fs::create_symlink("full", path("link-to-full"));
    const uint64_t              model_hash = hash_of(model_);
    const std::set<std::string> names      = names_in(dir_);
    const node_state            null_state = state_of(null), full_state = state_of(full),
                                link_state = state_of(path("link-to-full"));
    for (const fs::path & out : {null, full, path("link-to-full")}) {
        for (const std::vector<std::string> & args : writers_to(model_.string(), out.string())) {
            const run_result r = hexnpu(args);
            EXPECT_TRUE(failed_with(r, "is a character device, not a regular file")) << describe(args, r);
        }
    }
    EXPECT_EQ(state_of(null), null_state);
    EXPECT_EQ(state_of(full), full_state);
    EXPECT_EQ(state_of(path("link-to-full")), link_state);
    EXPECT_TRUE(S_ISCHR(state_of(null).mode) && state_of(null).rdev == makedev(1, 3));
    EXPECT_EQ(hash_of(model_), model_hash);
    EXPECT_EQ(names_in(dir_), names);
}

TEST_F(CliSafety, Class4_FifoAndDirectoryOutputsAreRefusedAtOnce) {
    ASSERT_EQ(mkfifo(path("fifo").c_str(), 0644), 0);
    fs::create_directories(path("dir"));
    const node_state            fifo  = state_of(path("fifo"));
    const std::set<std::string> names = names_in(dir_);
    for (const auto & [out, kind] : std::vector<std::pair<std::string, std::string>>{{p("fifo"), "is a FIFO"},
                                                                                       {p("dir"), "is a directory"}}) {
        for (const std::vector<std::string> & args : writers_to(model_.string(), out)) {
            run_options opt;
            opt.timeout      = 5s;
            const run_result r = hexnpu(args, opt);
            EXPECT_TRUE(failed_with(r, kind)) << describe(args, r);
            EXPECT_LT(r.elapsed, 1000ms) << describe(args, r);
        }
    }
    EXPECT_EQ(state_of(path("fifo")), fifo);
    EXPECT_TRUE(fs::is_empty(path("dir")));
    EXPECT_EQ(names_in(dir_), names);
}

TEST_F(CliSafety, Class4_AFailedWriteKeepsTheExistingOutput) {
    // ENOSPC's stand-in: RLIMIT_FSIZE makes the write fail (EFBIG) partway through.
    const std::vector<uint8_t> old(1000, 0x5a);
    for (const std::vector<std::string> & args : writers_to(model_.string(), p("out.bin"))) {
        if (args[0] == "test-ops") {
            continue;  // the CPU backend records no trace: nothing big to write
        }
        write_bytes(path("out.bin"), old);
        const std::set<std::string> names = names_in(dir_);
        run_options                 opt;
        opt.fsize_limit     = 4096;  // the tiled q8_0 tensor (8704 bytes) and both models are larger
        const run_result r = hexnpu(args, opt);
        EXPECT_TRUE(failed_with(r, std::strerror(EFBIG))) << describe(args, r);
        EXPECT_TRUE(read_all(path("out.bin")) == std::string(old.begin(), old.end())) << describe(args, r);
        EXPECT_EQ(names_in(dir_), names) << describe(args, r);
    }
}

// In a private mount namespace (root only; the rest of the system never sees its mounts): `body`
// runs in a child that has unshared its mounts; its return value is the child's exit code.
template <typename F> int in_mount_namespace(F && body) {
    const pid_t pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            _exit(77);
        }
        _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The issue's own examples on the real paths: /dev/null and /dev/full, in a namespace whose /dev is
// a fresh tmpfs holding just those two nodes.
TEST_F(CliSafety, Class4_DevNullAndDevFullInAPrivateDevAreLeftInPlace) {
    need_root();
    const std::string model = model_.string();
    const int         code  = in_mount_namespace([&] {
        if (mount("none", "/dev", "tmpfs", 0, "size=64k") != 0 ||
            mknod("/dev/null", S_IFCHR | 0666, makedev(1, 3)) != 0 ||
            mknod("/dev/full", S_IFCHR | 0666, makedev(1, 7)) != 0) {
            return 77;
        }
        const node_state null = state_of("/dev/null"), full = state_of("/dev/full");
        int              bad  = 0;
        for (const std::vector<std::string> & args : {
                 std::vector<std::string>{"synth", "/dev/null"},
                 std::vector<std::string>{"quantize", model, "/dev/null", "q4_0", "--allow-requantize"},
                 std::vector<std::string>{"tile", model, "--tensor", "wq", "-o", "/dev/full"},
                 std::vector<std::string>{"test-ops", "-b", "CPU", "-o", "ADD", "--trace", "/dev/full"},
             }) {
            const run_result r = hexnpu(args);
            if (!failed_with(r, "is a character device")) {
                std::fprintf(stderr, "%s\n", describe(args, r).c_str());
                bad |= 1;
            }
        }
        if (!(state_of("/dev/null") == null) || !(state_of("/dev/full") == full)) {
            bad |= 2;
        }
        if (names_in("/dev") != std::set<std::string>{"null", "full"}) {
            bad |= 4;
        }
        return bad;
    });
    if (code == 77) {
        GTEST_SKIP() << "no private mount namespace with a tmpfs /dev here (unshare/mount refused)";
    }
    EXPECT_EQ(code, 0) << "1: a command did not fail with the error, 2: a device node changed, 4: /dev gained a file";
}

// The ENOSPC itself: a tmpfs of three pages, already holding the old output.
TEST_F(CliSafety, Class4_ADiskFullKeepsTheExistingOutput) {
    need_root();
    const std::string model = model_.string(), small = p("small");
    fs::create_directories(small);
    const int code = in_mount_namespace([&] {
        if (mount("none", small.c_str(), "tmpfs", 0, "size=12k") != 0) {
            return 77;
        }
        const std::string out = small + "/out.bin", old(1000, 'o');
        int               bad = 0;
        for (const std::vector<std::string> & args : {
                 std::vector<std::string>{"synth", out},
                 std::vector<std::string>{"quantize", model, out, "q8_0", "--allow-requantize"},
                 std::vector<std::string>{"tile", model, "--tensor", "wq", "-o", out},  // 8704 bytes
             }) {
            write_bytes(out, std::vector<uint8_t>(old.begin(), old.end()));
            const run_result r = hexnpu(args);
            if (!failed_with(r, std::strerror(ENOSPC))) {
                std::fprintf(stderr, "%s\n", describe(args, r).c_str());
                bad |= 1;
            }
            if (read_all(out) != old) {
                bad |= 2;
            }
            if (names_in(small) != std::set<std::string>{"out.bin"}) {
                bad |= 4;
            }
        }
        return bad;
    });
    if (code == 77) {
        GTEST_SKIP() << "no private mount namespace with a small tmpfs here (unshare/mount refused)";
    }
    EXPECT_EQ(code, 0) << "1: no ENOSPC error, 2: the old output changed, 4: a temporary was left";
}

// ---- Class 5: special inputs ------------------------------------------------------------------------------

// Every reading command, pointed at `in` (outputs go to out.*, which must not appear).
std::vector<std::vector<std::string>> readers_of(const std::string & in, const fs::path & dir) {
    return {
        {"gguf", "info", in},
        {"quantize", in, (dir / "out.gguf").string(), "q4_0"},
        {"tile", in, "--check"},
        {"tile", in, "--tensor", "wq", "-o", (dir / "out.bin").string()},
    };
}

TEST_F(CliSafety, Class5_AFifoInputIsRefusedWithinASecond) {
    ASSERT_EQ(mkfifo(path("fifo").c_str(), 0644), 0);
    const std::set<std::string> names = names_in(dir_);
    for (const std::vector<std::string> & args : readers_of(p("fifo"), dir_)) {
        run_options opt;
        opt.timeout      = 5s;
        const run_result r = hexnpu(args, opt);
        EXPECT_FALSE(r.timed_out) << describe(args, r);
        EXPECT_TRUE(failed_with(r, "is a FIFO, not a regular file")) << describe(args, r);
        EXPECT_LT(r.elapsed, 1000ms) << describe(args, r);
    }
    EXPECT_TRUE(S_ISFIFO(state_of(path("fifo")).mode));
    EXPECT_EQ(names_in(dir_), names);
}

TEST_F(CliSafety, Class5_DeviceAndDirectoryInputsAreRefused) {
    fs::create_directories(path("dir"));
    std::vector<std::pair<std::string, std::string>> inputs{{p("dir"), "is a directory"}};
    if (geteuid() == 0) {
        make_char_device("zero", 1, 5);
        inputs.push_back({p("zero"), "is a character device"});
    } else {
        std::printf("note: not root, the character-device input case is skipped\n");
    }
    const std::set<std::string> names = names_in(dir_);
    for (const auto & [in, kind] : inputs) {
        for (const std::vector<std::string> & args : readers_of(in, dir_)) {
            const run_result r = hexnpu(args);
            EXPECT_TRUE(failed_with(r, kind)) << describe(args, r);
        }
    }
    EXPECT_EQ(names_in(dir_), names);
}

// Issue 29: every command reading a text file (-f), pointed at `in`. The model is never reached.
std::vector<std::vector<std::string>> text_readers_of(const std::string & in, const std::string & model) {
    return {
        {"run", "-m", model, "-f", in, "-n", "1"},
        {"perplexity", "-m", model, "-f", in},
        {"tokenize", "-m", model, "-f", in},
    };
}

TEST_F(CliSafety, Class5_TextInputsThatAreNoRegularFilesAreRefusedAtOnce) {
    ASSERT_EQ(mkfifo(path("fifo").c_str(), 0644), 0);
    fs::create_directories(path("dir"));
    // The real /dev/zero (endless) and /dev/null (empty): only looked at, never opened.
    const std::vector<std::pair<std::string, std::string>> inputs{{p("fifo"), "is a FIFO, not a regular file"},
                                                                  {p("dir"), "is a directory, not a regular file"},
                                                                  {"/dev/zero", "is a character device, not a regular file"},
                                                                  {"/dev/null", "is a character device, not a regular file"}};
    const std::set<std::string> names = names_in(dir_);
    for (const auto & [in, kind] : inputs) {
        for (const std::vector<std::string> & args : text_readers_of(in, model_.string())) {
            run_options opt;
            opt.timeout        = 5s;
            const run_result r = hexnpu(args, opt);
            EXPECT_FALSE(r.timed_out) << describe(args, r);
            EXPECT_TRUE(failed_with(r, "'" + in + "' " + kind)) << describe(args, r);
            EXPECT_LT(r.elapsed, 1000ms) << describe(args, r);
        }
    }
    EXPECT_TRUE(S_ISFIFO(state_of(path("fifo")).mode));
    EXPECT_EQ(names_in(dir_), names);
}

TEST_F(CliSafety, Class5_ATextInputBeyondTheBoundIsRefusedUnread) {
    // 256 MiB and one byte, sparse: no disk space, and refused by its size before any byte is read.
    {
        std::ofstream big(path("big.txt"));
    }
    fs::resize_file(path("big.txt"), (uint64_t(256) << 20) + 1);
    for (const std::vector<std::string> & args : text_readers_of(p("big.txt"), model_.string())) {
        const run_result r = hexnpu(args);
        EXPECT_TRUE(failed_with(r, "is larger than 268435456 bytes, the most a text input may have"))
            << describe(args, r);
        EXPECT_LT(r.elapsed, 1000ms) << describe(args, r);
    }
}

// ---- Class 6: every setting parsed strictly -----------------------------------------------------------

TEST_F(CliSafety, Class6_BadSettingsAreErrorsNamingVariableValueAndRange) {
    struct bad_setting {
        const char * var;
        const char * value;
        const char * expected;  // in the error line, after "VAR='value': "
    };
    const std::vector<bad_setting> cases = {
        {"HEXNPU_VTCM_SIZE", "abc", "not a number; expected an integer in [0, "},
        {"HEXNPU_VTCM_SIZE", "1000", "must be in [0, 1073741824], a multiple of 4096"},
        {"HEXNPU_HVX_COUNT", "4294967297", "out of range; must be in [0, "},
        {"HEXNPU_SESSION_TIMEOUT_MS", "18446744073709551615", "out of range; must be in [1, "},
        {"HEXNPU_SESSION_TIMEOUT_MS", "18446744073709551616", "out of range; must be in [1, "},
        {"HEXNPU_WINDOW_SIZE", "12k", "not a number"},
        {"HEXNPU_HOST_THREADS", "-1", "not a number"},
        {"HEXNPU_HOST_THREADS", " 2", "not a number"},
        {"HEXNPU_ARCH", "v70", "expected one of v73, v75, v79, v81"},
        {"HEXNPU_STRICT", "2", "expected 0 or 1"},
        {"GGML_HEXAGON_NHVX", "abc", "not a number; expected an integer in [0, 64]"},
        {"GGML_HEXAGON_NHVX", "65", "out of range; must be in [0, 64]"},
        {"GGML_HEXAGON_NHVX", "99999999999999999999", "out of range; must be in [0, 64]"},
    };
    for (const bad_setting & c : cases) {
        run_options opt;
        opt.env[c.var]     = c.value;
        const std::vector<std::string> args{"devices"};
        const run_result r = hexnpu(args, opt);
        EXPECT_TRUE(failed_with(r, std::string(c.var) + "='" + c.value + "': " + c.expected))
            << c.var << "=" << c.value << "\n" << describe(args, r);
    }
}

// ---- Class 7: the small ones ------------------------------------------------------------------------------

TEST_F(CliSafety, Class7_ControlBytesInKeysAndNamesAreEscapedInEveryTable) {
    const std::string key("bad\nkey\0z\x1b[31m", 15);
    const std::string name("t\0\n\x1b", 4);
    gguf::writer      w;
    w.set(key, gguf::value::from_string("v"));
    const int64_t ne[] = {256, 32};
    w.add_tensor(name, GGML_TYPE_Q8_0, ne, q8_.data());
    w.add_tensor(name + "f", GGML_TYPE_F32, ne, f32_.data());
    const std::string plain_controls = "c\x1b\t";  // no NUL: it can be passed as an argument
    w.add_tensor(plain_controls, GGML_TYPE_F32, ne, f32_.data());
    write_bytes(path("odd.gguf"), w.write_to_memory());
    const auto raw_control = [](const std::string & s) {
        for (const char c : s) {
            if ((uint8_t(c) < 0x20 && c != '\n') || c == 0x7f) {
                return true;
            }
        }
        return false;
    };
    for (const std::vector<std::string> & args : {
             std::vector<std::string>{"gguf", "info", p("odd.gguf")},
             std::vector<std::string>{"quantize", p("odd.gguf"), p("odd-q4.gguf"), "q4_0", "--allow-requantize"},
             std::vector<std::string>{"tile", p("odd.gguf"), "--check"},
         }) {
        const run_result r = hexnpu(args);
        ASSERT_EQ(r.exit_code, 0) << describe(args, r);
        EXPECT_FALSE(raw_control(r.out)) << describe(args, r);
        EXPECT_NE(r.out.find("t\\x00\\n\\x1b"), std::string::npos) << describe(args, r);
        if (args[0] == "gguf") {
            EXPECT_NE(r.out.find("bad\\nkey\\x00z\\x1b[31m"), std::string::npos) << describe(args, r);
        }
    }
    // Error lines too.
    for (const std::vector<std::string> & args : {
             // q8_0 needs --allow-requantize
             std::vector<std::string>{"quantize", p("odd.gguf"), p("odd-q4.gguf"), "q4_0"},
             std::vector<std::string>{"tile", p("odd.gguf"), "--tensor", plain_controls, "-o", p("t.bin")},  // f32
             std::vector<std::string>{"tile", p("odd.gguf"), "--tensor", plain_controls + "x", "-o", p("t.bin")},
         }) {
        const run_result r = hexnpu(args);
        EXPECT_TRUE(failed_with(r, args[0] == "quantize" ? "t\\x00\\n\\x1b" : "c\\x1b\\t")) << describe(args, r);
        EXPECT_FALSE(raw_control(r.err)) << describe(args, r);
    }
}

TEST_F(CliSafety, Class7_TestOpsWithNoMatchingCaseIsAnError) {
    const run_result r = hexnpu({"test-ops", "-o", "BOGUS"});
    EXPECT_TRUE(failed_with(r, "BOGUS")) << describe({"test-ops", "-o", "BOGUS"}, r);
}

TEST_F(CliSafety, Class7_GgufInfoHelpIsHelpNotAFile) {
    for (const std::vector<std::string> & args : {std::vector<std::string>{"gguf", "info", "--help"},
                                                  std::vector<std::string>{"gguf", "--help"},
                                                  std::vector<std::string>{"gguf", "info", "-h"}}) {
        const run_result r = hexnpu(args);
        EXPECT_EQ(r.exit_code, 0) << describe(args, r);
        EXPECT_EQ(r.out.rfind("usage: hexnpu gguf info FILE", 0), 0u) << describe(args, r);
        EXPECT_EQ(r.err, "") << describe(args, r);
    }
    const run_result bad = hexnpu({"gguf", "info", "--bogus"});
    EXPECT_TRUE(failed_with(bad, "unknown option '--bogus'")) << describe({"gguf", "info", "--bogus"}, bad);
}

TEST_F(CliSafety, Class7_TileCheckComparesNaNsAsEqual) {
    // A q2_K block whose dmin is NaN: every value of it is NaN, flat and tiled; the tiled form stores
    // -dmin, so the NaNs differ in sign. That is no mismatch.
    std::mt19937         rng(3);
    std::vector<uint8_t> q2 = q2_K_rows(512, 8, rng);
    put16(q2, 5 * 84 + 82, 0x7e00);  // block 5: dmin = NaN
    put16(q2, 9 * 84 + 82, 0xfe00);  // block 9: dmin = -NaN
    gguf::writer  w;
    const int64_t ne[] = {512, 8};
    w.add_tensor("q2", GGML_TYPE_Q2_K, ne, q2.data());
    write_bytes(path("nan.gguf"), w.write_to_memory());
    const std::vector<std::string> args{"tile", p("nan.gguf"), "--check"};
    const run_result               r = hexnpu(args);
    EXPECT_EQ(r.exit_code, 0) << describe(args, r);
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << describe(args, r);
    EXPECT_NE(r.out.find("q2    q2_K  512x8"), std::string::npos) << describe(args, r);
}

// ---- Class 8: thread counts (issue 29) -----------------------------------------------------------------

// Every command with a thread-count flag, with `threads` as its value (before the fix run, bench and
// perplexity took any 64-bit value and cut it to an int: 99999999999 threads exhausted the
// machine's process table, so these run under a process limit, whatever the binary does).
std::vector<std::vector<std::string>> thread_flag_users(const std::string & model, const std::string & threads,
                                                        const fs::path & dir) {
    return {
        {"run", "-m", model, "-p", "hi", "-n", "1", "-t", threads},
        {"bench", "-m", model, "-p", "1", "-n", "1", "-r", "1", "-t", threads},
        {"perplexity", "-m", model, "-f", model, "--threads", threads},
        {"quantize", model, (dir / "out.gguf").string(), "q4_0", "-t", threads},
        {"tile", model, "--check", "--threads", threads},
    };
}

TEST_F(CliSafety, Class8_ThreadCountsOutsideOneTo1024AreErrors) {
    const std::set<std::string> names = names_in(dir_);
    for (const auto & [threads, why] : std::vector<std::pair<std::string, std::string>>{
             {"99999999999", "out of range; must be in [1, 1024]"},
             {"99999999999999999999999", "out of range; must be in [1, 1024]"},
             {"4294967297", "out of range; must be in [1, 1024]"},
             {"1025", "out of range; must be in [1, 1024]"},
             {"0", "out of range; must be in [1, 1024]"},
             {"-1", "out of range; must be in [1, 1024]"},
             {"4x", "not a number; expected an integer in [1, 1024]"},
         }) {
        for (const std::vector<std::string> & args : thread_flag_users(model_.string(), threads, dir_)) {
            run_options opt;
            opt.nproc_limit    = 64;
            opt.timeout        = 10s;
            const run_result r = hexnpu(args, opt);
            const std::string flag = args[args.size() - 2];
            EXPECT_TRUE(failed_with(r, flag + " '" + threads + "': " + why)) << describe(args, r);
        }
    }
    EXPECT_EQ(names_in(dir_), names);
}

TEST_F(CliSafety, Class8_AThreadThatCannotStartIsAnErrorNotAHang) {
    // The reproduction: more threads than the process limit allows. run's CPU thread pool
    // may start one worker (which then waits for work) and must stop it and fail with the reason,
    // not hang; quantize's parallel_for may start none (its chunks are too short to count on one
    // still running when the next starts) and must fail the same way.
    write_big_model(path("in.gguf"));
    fs::permissions(dir_, fs::perms::all);  // the child may run as nobody: let it make out.gguf's temporary
    const std::set<std::string> names = names_in(dir_);
    for (const auto & [args, limit, error] : std::vector<std::tuple<std::vector<std::string>, int, std::string>>{
             {{"run", "-m", model_.string(), "-p", "hi", "-n", "1", "-t", "64"}, 2, "cannot start CPU thread "},
             {{"quantize", p("in.gguf"), p("out.gguf"), "q8_0", "-t", "64"}, 1, "cannot start thread 2 of 16: "},
         }) {
        run_options opt;
        opt.nproc_limit    = uint64_t(limit);
        opt.timeout        = 10s;
        const run_result r = hexnpu(args, opt);
        EXPECT_FALSE(r.timed_out) << describe(args, r);
        EXPECT_TRUE(failed_with(r, error)) << describe(args, r);
        EXPECT_NE(r.err.find(std::strerror(EAGAIN)), std::string::npos) << describe(args, r);
    }
    EXPECT_EQ(names_in(dir_), names) << "no output, no temporary";
}

// ---- Class 9: values without meaning and messages (issue 29) -------------------------------------------

TEST_F(CliSafety, Class9_RunValuesWithoutMeaningAreRefusedBeforeTheModelLoads) {
    // A model path that does not exist: each error must come before the model is opened.
    const std::string missing = p("missing.gguf");
    for (const auto & [flags, error] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--temp", "-1"}, "--temp '-1': out of range; must be in [0, inf)"},
             {{"--temp", "nan"}, "--temp 'nan': out of range"},
             {{"--temp", "inf"}, "--temp 'inf': out of range"},
             {{"--top-p", "2"}, "--top-p '2': out of range; must be in [0, 1]"},
             {{"--min-p", "-1"}, "--min-p '-1': out of range; must be in [0, 1]"},
             {{"--repeat-penalty", "0"}, "--repeat-penalty '0': out of range; must be in (0, inf)"},
             {{"-ub", "4294967297"}, "-ub '4294967297': out of range; must be in [1, 2147483647]"},
             {{"-c", "99999999999999999999"}, "-c '99999999999999999999': out of range"},
             {{"--tokens", "1,4294967297"}, "--tokens needs a comma-separated list of token ids"},
             {{"--argmax"}, "--argmax needs --tokens"},
             {{"--logits"}, "--logits needs --tokens"},
         }) {
        std::vector<std::string> args{"run", "-m", missing};
        args.insert(args.end(), flags.begin(), flags.end());
        const run_result r = hexnpu(args);
        EXPECT_TRUE(failed_with(r, error)) << describe(args, r);
    }
}

TEST_F(CliSafety, Class9_DeviceListsWithoutMeaningAreRefused) {
    for (const auto & [flags, error] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--device", ""}, "--device '': an empty device name"},
             {{"--device", "HTP0,"}, "--device 'HTP0,': an empty device name"},
             {{"--device", "CPU,CPU"}, "'CPU' is listed twice"},
             {{"--device", "HTP0,HTP0"}, "'HTP0' is listed twice"},
             {{"--device", "HTP0", "-sm", "row"}, "-sm row splits each op over two or more NPU devices; --device 'HTP0' has 1"},
             {{"-sm", "row"}, "--device 'CPU' has 0"},
         }) {
        for (const std::string & cmd : {"run", "bench"}) {
            std::vector<std::string> args{cmd, "-m", p("missing.gguf")};
            args.insert(args.end(), flags.begin(), flags.end());
            const run_result r = hexnpu(args);
            EXPECT_TRUE(failed_with(r, error)) << describe(args, r);
        }
    }
}

TEST_F(CliSafety, Class9_SynthNamesEveryPresetAndItsArchitecture) {
    const run_result bad = hexnpu({"synth", p("huge.gguf"), "--preset", "huge"});
    EXPECT_TRUE(failed_with(bad, "unknown preset 'huge' (tiny, small, 1b, gemma3-tiny, qwen2-tiny, qwen3-tiny, qwen3moe-tiny, gpt-oss-tiny, qwen35-tiny, qwen35-0.8b, lfm2-tiny)"))
        << describe({"synth", "--preset", "huge"}, bad);
    const run_result gemma = hexnpu({"synth", p("gemma.gguf"), "--preset", "gemma3-tiny"});
    EXPECT_EQ(gemma.exit_code, 0) << describe({"synth", "--preset", "gemma3-tiny"}, gemma);
    EXPECT_NE(gemma.out.find(": gemma3, preset gemma3-tiny,"), std::string::npos) << gemma.out;
}

// A synthesized tiny llama (a tokenizer, real shapes), its tensor `nan_tensor` set to NaN if named.
fs::path tiny_model(const fs::path & dir, const std::string & nan_tensor = "") {
    const fs::path   synth = dir / "tiny-synth.gguf", out = dir / "tiny.gguf";
    const run_result r     = hexnpu({"synth", synth.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const gguf::reader in = gguf::reader::open(synth.string());
    gguf::writer       w;
    for (const auto & m : in.metadata()) {
        w.set(m.key, m.val);
    }
    std::vector<std::vector<float>> keep;
    for (const auto & t : in.tensors()) {
        const auto d = in.tensor_data(t);
        if (t.name == nan_tensor) {
            keep.emplace_back(d.size() / sizeof(float), std::nanf(""));
        } else {
            keep.emplace_back(d.size() / sizeof(float));
            std::memcpy(keep.back().data(), d.data(), d.size());
        }
        w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), keep.back().data());
    }
    write_bytes(out, w.write_to_memory());
    return out;
}

TEST_F(CliSafety, Class9_ANulInAPromptIsEchoedEscapedNotTheEndOfIt) {
    const fs::path model = tiny_model(dir_);
    write_bytes(path("nul.txt"), {'a', 0, 'b', '\\'});
    const std::vector<std::string> args{"run", "-m", model.string(), "-f", p("nul.txt"), "-n", "1"};
    const run_result               r = hexnpu(args);
    ASSERT_EQ(r.exit_code, 0) << describe(args, r);
    EXPECT_EQ(r.out.rfind("a\\x00b\\", 0), 0u) << describe(args, r);
}

TEST_F(CliSafety, Class9_AModelGoingNaNIsAnErrorNotAnEmptyContinuation) {
    const fs::path                 model = tiny_model(dir_, "output_norm.weight");
    const std::vector<std::string> args{"run", "-m", model.string(), "-p", "hello", "-n", "4"};
    const run_result               r = hexnpu(args);
    EXPECT_TRUE(failed_with(r, "the model's logits are NaN or infinite after ")) << describe(args, r);
}

} // namespace
