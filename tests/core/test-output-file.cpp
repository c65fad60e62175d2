// output_file (include/hexnpu/output-file.h), the one output path: each test sets up the file-system
// state of one defect class of issue 11 and checks the state afterwards against what it set up —
// input bytes, which names exist in the directory, node types and device numbers — never against
// what the code itself reports.
#include "hexnpu/output-file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using hexnpu::output_error;
using hexnpu::output_file;

namespace {

std::string read_all(const fs::path & p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path & p, const std::string & bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
}

std::set<std::string> names_in(const fs::path & dir) {
    std::set<std::string> names;
    for (const fs::directory_entry & e : fs::directory_iterator(dir)) {
        names.insert(e.path().filename().string());
    }
    return names;
}

// The message of the output_error that f throws ("" when it throws nothing).
template <typename F> std::string error_of(F && f) {
    try {
        f();
    } catch (const output_error & e) {
        return e.what();
    }
    return "";
}

class OutputFile : public testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("hexnpu-output-file-" + std::to_string(getpid()) + "-" +
                testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path path(const std::string & name) const { return dir_ / name; }

    fs::path dir_;
};

TEST_F(OutputFile, NothingIsVisibleBeforeCommitAndTheTemporaryIsGoneAfter) {
    const fs::path target = path("out.bin");
    output_file    out    = output_file::create(target.string());
    out.write("hello ", 6);
    out.write("world", 5);
    EXPECT_FALSE(fs::exists(target));
    const std::set<std::string> during = names_in(dir_);
    ASSERT_EQ(during.size(), 1u);
    EXPECT_EQ(fs::path(out.temp_path()).parent_path(), dir_) << "the temporary lives next to the target";
    EXPECT_EQ(out.bytes_written(), 11u);
    out.commit();
    EXPECT_EQ(read_all(target), "hello world");
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"});
}

TEST_F(OutputFile, AReplacedFileKeepsItsPermissionsANewOneGetsTheUmask) {
    const fs::path target = path("out.bin");
    write_all(target, "old");
    ASSERT_EQ(chmod(target.c_str(), 0640), 0);
    {
        output_file out = output_file::create(target.string());
        out.write("new", 3);
        out.commit();
    }
    struct stat st{};
    ASSERT_EQ(stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u);
    EXPECT_EQ(read_all(target), "new");

    const mode_t old_mask = umask(027);
    {
        output_file out = output_file::create(path("fresh.bin").string());
        out.commit();
    }
    umask(old_mask);
    ASSERT_EQ(stat(path("fresh.bin").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0640u) << "0666 minus the umask 027";
}

TEST_F(OutputFile, DestroyingOrDiscardingLeavesAnExistingTargetAndNoTemporary) {
    const fs::path target = path("out.bin");
    write_all(target, "precious");
    {
        output_file out = output_file::create(target.string());
        out.write("partial", 7);
    }  // an exception in the producer unwinds here
    EXPECT_EQ(read_all(target), "precious");
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"});
    output_file out = output_file::create(target.string());
    out.discard();
    out.discard();
    EXPECT_NE(error_of([&] { out.commit(); }), "");
    EXPECT_EQ(read_all(target), "precious");
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"});
}

// Class 1: the output is the input, however it is spelled.
TEST_F(OutputFile, AnInputIsRefusedByIdentityNotByName) {
    const fs::path in = path("in.gguf");
    write_all(in, "model bytes");
    ASSERT_EQ(link(in.c_str(), path("hard.gguf").c_str()), 0);
    fs::create_symlink("in.gguf", path("soft.gguf"));
    fs::create_directories(path("sub"));
    const std::string spellings[] = {in.string(), (dir_ / "." / "in.gguf").string(),
                                     (dir_ / "sub" / ".." / "in.gguf").string(), path("hard.gguf").string(),
                                     path("soft.gguf").string()};
    const std::set<std::string> before = names_in(dir_);
    for (const std::string & out : spellings) {
        const std::string e = error_of([&] { output_file::create(out, {in.string()}); });
        EXPECT_NE(e.find("is the input"), std::string::npos) << out << ": " << e;
        // And the other way round: the input spelled differently from the output.
        const std::string e2 = error_of([&] { output_file::create(in.string(), {out}); });
        EXPECT_NE(e2.find("is the input"), std::string::npos) << out << ": " << e2;
    }
    EXPECT_EQ(read_all(in), "model bytes");
    EXPECT_EQ(names_in(dir_), before) << "no temporary left behind";
    // A different file with the same contents is fine.
    write_all(path("copy.gguf"), "model bytes");
    output_file ok = output_file::create(path("copy.gguf").string(), {in.string()});
    ok.commit();
}

TEST_F(OutputFile, AnInputThatBecomesTheTargetBeforeCommitIsRefused) {
    const fs::path in = path("in.gguf"), target = path("out.gguf");
    write_all(in, "input");
    output_file out = output_file::create(target.string(), {in.string()});
    out.write("x", 1);
    ASSERT_EQ(link(in.c_str(), target.c_str()), 0);  // someone hard-links the input to the target
    EXPECT_NE(error_of([&] { out.commit(); }).find("is the input"), std::string::npos);
    EXPECT_EQ(read_all(in), "input");
    EXPECT_EQ(names_in(dir_), (std::set<std::string>{"in.gguf", "out.gguf"}));
}

// Class 2: the temporary is never an existing file, whatever is lying around.
TEST_F(OutputFile, TheTemporaryIsAFreshFileNeverOneThatExists) {
    const fs::path input = path("m.gguf.tmp");  // the old writer's fixed temporary name for m.gguf
    write_all(input, "the input");
    std::set<std::string> temps;
    for (int i = 0; i < 20; ++i) {
        output_file out = output_file::create(path("m.gguf").string(), {input.string()});
        EXPECT_NE(out.temp_path(), input.string());
        temps.insert(out.temp_path());
        out.write("out", 3);
        out.commit();
    }
    EXPECT_EQ(temps.size(), 20u) << "a new name every time";
    EXPECT_EQ(read_all(input), "the input");
    EXPECT_EQ(names_in(dir_), (std::set<std::string>{"m.gguf", "m.gguf.tmp"}));
}

// Class 3: concurrent writers of one target: the result is one writer's complete file.
TEST_F(OutputFile, ConcurrentWritersNeverInterleave) {
    const fs::path target = path("out.bin");
    constexpr int  kWriters = 8;
    constexpr int  kChunks  = 64;
    std::vector<std::string> contents;
    for (int w = 0; w < kWriters; ++w) {
        contents.push_back(std::string(size_t(4096 * kChunks + w * 977), char('A' + w)));
    }
    for (int round = 0; round < 5; ++round) {
        std::atomic<int>         failures{0};
        std::vector<std::thread> threads;
        for (int w = 0; w < kWriters; ++w) {
            threads.emplace_back([&, w] {
                try {
                    output_file    out  = output_file::create(target.string());
                    const auto &   data = contents[size_t(w)];
                    const size_t   step = data.size() / kChunks + 1;
                    for (size_t at = 0; at < data.size(); at += step) {
                        out.write(data.data() + at, std::min(step, data.size() - at));
                        std::this_thread::yield();
                    }
                    out.commit();
                } catch (const std::exception &) {
                    ++failures;
                }
            });
        }
        for (std::thread & t : threads) {
            t.join();
        }
        EXPECT_EQ(failures.load(), 0);
        const std::string result = read_all(target);
        EXPECT_NE(std::find(contents.begin(), contents.end(), result), contents.end())
            << "round " << round << ": " << result.size() << " bytes, not one writer's whole file";
        EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"});
    }
}

// Class 4: what is not a regular file is never written, replaced or removed.
struct node_state {
    bool    exists = false;
    mode_t  type   = 0;
    dev_t   rdev   = 0;
    ino_t   ino    = 0;
    friend bool operator==(const node_state &, const node_state &) = default;
};

node_state state_of(const fs::path & p) {
    struct stat st{};
    if (lstat(p.c_str(), &st) != 0) {
        return {};
    }
    return {true, mode_t(st.st_mode & S_IFMT), st.st_rdev, st.st_ino};
}

void expect_refused_and_untouched(const fs::path & dir, const fs::path & node, const std::string & kind) {
    const node_state            before = state_of(node);
    const std::set<std::string> names  = names_in(dir);
    const std::string           e      = error_of([&] { output_file::create(node.string()); });
    EXPECT_NE(e.find(kind), std::string::npos) << node << ": " << e;
    EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
    EXPECT_EQ(state_of(node), before) << node << " was touched";
    EXPECT_EQ(names_in(dir), names) << "no temporary left behind";
}

TEST_F(OutputFile, FifosDirectoriesAndSocketsAreRefusedAndLeftAlone) {
    ASSERT_EQ(mkfifo(path("fifo").c_str(), 0644), 0);
    expect_refused_and_untouched(dir_, path("fifo"), "a FIFO");
    fs::create_directories(path("dir"));
    expect_refused_and_untouched(dir_, path("dir"), "a directory");
    expect_refused_and_untouched(dir_, path("dir/"), "a directory");

    const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(sock, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path("sock").c_str(), sizeof addr.sun_path - 1);
    if (path("sock").string().size() < sizeof addr.sun_path &&
        bind(sock, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0) {
        expect_refused_and_untouched(dir_, path("sock"), "a socket");
    }
    close(sock);
}

TEST_F(OutputFile, DevicesAreRefusedAndLeftAlone) {
    // Fake device nodes in the test's own directory (root only): /dev/null's and /dev/full's numbers.
    if (geteuid() != 0) {
        GTEST_SKIP() << "making character device nodes (mknod) needs root";
    }
    ASSERT_EQ(mknod(path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
    ASSERT_EQ(mknod(path("full").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0) << std::strerror(errno);
    expect_refused_and_untouched(dir_, path("null"), "a character device");
    expect_refused_and_untouched(dir_, path("full"), "a character device");
    // Through a symbolic link the device is still what would be written: refused, link and node kept.
    fs::create_symlink("null", path("link-to-null"));
    const node_state link = state_of(path("link-to-null"));
    expect_refused_and_untouched(dir_, path("link-to-null"), "a character device");
    EXPECT_EQ(state_of(path("link-to-null")), link);
    EXPECT_EQ(state_of(path("null")).rdev, makedev(1, 3));
    if (mknod(path("block").c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0) {  // a loop device number
        expect_refused_and_untouched(dir_, path("block"), "a block device");
    }
}

TEST_F(OutputFile, ATargetThatBecomesADeviceOrFifoBeforeCommitIsNotReplaced) {
    const fs::path target = path("out.bin");
    output_file    out    = output_file::create(target.string());
    out.write("data", 4);
    ASSERT_EQ(mkfifo(target.c_str(), 0644), 0);
    const node_state fifo = state_of(target);
    EXPECT_NE(error_of([&] { out.commit(); }).find("became a FIFO"), std::string::npos);
    EXPECT_EQ(state_of(target), fifo);
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"});
}

TEST_F(OutputFile, ASymbolicLinkToARegularFileIsWrittenThroughADanglingOneIsRefused) {
    write_all(path("real.bin"), "old");
    fs::create_symlink("real.bin", path("link.bin"));
    output_file out = output_file::create(path("link.bin").string());
    out.write("new", 3);
    out.commit();
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("link.bin"))));
    EXPECT_EQ(read_all(path("real.bin")), "new");

    fs::create_symlink("missing.bin", path("dangling.bin"));
    EXPECT_NE(error_of([&] { output_file::create(path("dangling.bin").string()); }).find("missing file"),
              std::string::npos);
    EXPECT_FALSE(fs::exists(path("missing.bin")));
    EXPECT_EQ(names_in(dir_), (std::set<std::string>{"real.bin", "link.bin", "dangling.bin"}));
}

TEST_F(OutputFile, AMissingDirectoryIsAClearError) {
    const std::string e = error_of([&] { output_file::create(path("no-such-dir/out.bin").string()); });
    EXPECT_NE(e.find("cannot create a temporary file"), std::string::npos) << e;
    EXPECT_NE(e.find(std::strerror(ENOENT)), std::string::npos) << e;
    EXPECT_NE(error_of([&] { output_file::create(""); }), "");
}

// Running a child process: `body` returns the child's exit code.
template <typename F> int in_child(F && body) {
    const pid_t pid = fork();
    if (pid == 0) {
        _exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Class 4's "an existing output is lost on ENOSPC": a write that fails (here: beyond RLIMIT_FSIZE,
// EFBIG) leaves the existing target whole and no temporary.
TEST_F(OutputFile, AFailedWriteKeepsTheExistingTarget) {
    const fs::path target = path("out.bin");
    write_all(target, std::string(100, 'o'));
    const std::string target_str = target.string();
    const int         code       = in_child([&] {
        signal(SIGXFSZ, SIG_IGN);
        const rlimit limit{64 * 1024, 64 * 1024};
        setrlimit(RLIMIT_FSIZE, &limit);
        try {
            output_file             out = output_file::create(target_str);
            const std::vector<char> block(16 * 1024, 'n');
            for (int i = 0; i < 16; ++i) {
                out.write(block.data(), block.size());
            }
            out.commit();
            return 2;  // the limit did not bite
        } catch (const output_error & e) {
            return std::string(e.what()).find(std::strerror(EFBIG)) != std::string::npos ? 0 : 3;
        }
    });
    EXPECT_EQ(code, 0) << "2: the write succeeded, 3: the error did not name EFBIG";
    EXPECT_EQ(read_all(target), std::string(100, 'o'));
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"});
}

TEST_F(OutputFile, AnInterruptedWriterRemovesItsTemporary) {
    write_all(path("out.bin"), "old");
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        const std::string target = path("out.bin").string();
        const int         code   = in_child([&] {
            struct sigaction old{};
            sigaction(sig, nullptr, &old);
            if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) {
                return 77;  // ignored by whoever started the tests (nohup): nothing to clean up after
            }
            output_file out = output_file::create(target);
            out.write("partial", 7);
            raise(sig);
            return 0;
        });
        if (code == 77) {
            std::printf("note: %s is ignored in this process; its case is not checked\n", strsignal(sig));
            continue;
        }
        EXPECT_EQ(code, 128 + sig) << "the signal still ends the process";
        EXPECT_EQ(read_all(path("out.bin")), "old");
        EXPECT_EQ(names_in(dir_), std::set<std::string>{"out.bin"}) << strsignal(sig);
    }
}

} // namespace
