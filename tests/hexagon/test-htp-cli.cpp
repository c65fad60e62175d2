// The HTP devices through the CLI: `hexnpu devices` (device lists, arch forcing, bad lists) and
// `hexnpu test-ops -b HTP0` (every supported catalog case on the virtual NPU against the CPU, the
// op filter, --trace) and `hexnpu bench-ops` (one JSON line per case, its bad arguments).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <sys/wait.h>

namespace {

struct command_result {
    int         exit_code;
    std::string output;  // stdout and stderr
};

// Runs `env hexnpu args` (env: VAR=value assignments, or empty).
command_result run(const std::string & env, const std::string & args) {
    const std::string command = env + " " HEXNPU_BIN_DIR "/hexnpu " + args + " 2>&1";
    FILE *            pipe    = popen(command.c_str(), "r");
    if (!pipe) {
        return {-1, "popen failed"};
    }
    std::string output;
    char        buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) {
        output.append(buf, n);
    }
    const int status = pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

bool has_line(const std::string & output, const std::string & pattern) {
    return std::regex_search(output, std::regex(pattern, std::regex::multiline));
}

TEST(HtpCli, DevicesListsEverySessionWithWhatItReports) {
    const auto r = run("GGML_HEXAGON_DEVICES=2 HEXNPU_HOST_THREADS=2", "devices");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(has_line(r.output,
                         "^HTP0:0 +v79 +libhexnpu-htp-v79\\.so +8\\.00 MiB +2 +1 +3\\.12 GiB +HTP0:0, HTP0:0-REPACK"))
        << r.output;
    EXPECT_TRUE(has_line(r.output, "^HTP0:1 +v79 .*HTP0:1, HTP0:1-REPACK")) << r.output;
    EXPECT_TRUE(has_line(r.output, "^CPU ")) << r.output;

    const auto forced = run("GGML_HEXAGON_NDEV=1 GGML_HEXAGON_ARCH=v73 GGML_HEXAGON_VMEM=512", "devices");
    ASSERT_EQ(forced.exit_code, 0) << forced.output;
    EXPECT_TRUE(has_line(forced.output, "^HTP0 +v73 +libhexnpu-htp-v73\\.so .* 512\\.00 MiB +HTP0, HTP0-REPACK"))
        << forced.output;

    const auto bad = run("GGML_HEXAGON_DEVICES=HTP0:0,HTPx", "devices");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.output.find("bad item 'HTPx'"), std::string::npos) << bad.output;
}

TEST(HtpCli, TestOpsRunsEverySupportedCaseOnTheNpu) {
    const auto r = run("", "test-ops -b HTP0");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(has_line(r.output, "^[1-9][0-9]* passed, 0 failed")) << r.output;
    for (const char * op : {"ADD", "SUB", "MUL", "DIV", "SCALE", "SQR", "SQRT", "NEG", "SILU", "RMS_NORM", "SOFT_MAX", "CONT"}) {
        EXPECT_TRUE(has_line(r.output, std::string("^") + op + "\\(type[^\\n]*\\): NMSE=[^ ]+ OK$")) << op;
    }
    // Every matmul case runs, its weights flat and in the REPACK buffer.
    EXPECT_FALSE(has_line(r.output, "^MUL_MAT(_ID)?\\(.*not supported by HTP0$")) << r.output;
    for (const char * op : {"MUL_MAT\\(type_a=q4_K", "MUL_MAT\\(type_a=f16", "MUL_MAT_ID\\(type_a=q5_0"}) {
        EXPECT_TRUE(has_line(r.output, std::string("^") + op + "[^\\n]*: NMSE=[^ ]+ \\(HTP0\\), NMSE=[^ ]+ \\(HTP0-REPACK\\) OK$"))
            << op;
    }
}

// The whole catalog on a device group of three sessions (row split: every op sliced over the
// members, fences between ops) passes exactly the cases one session passes; the HMX matmul too.
TEST(HtpCli, TestOpsOnADeviceGroupPassesWhatOneSessionPasses) {
    const char * env  = "GGML_HEXAGON_DEVICES=3";
    const auto   one  = run(env, "test-ops -b HTP0:0");
    const auto   many = run(env, "test-ops -b HTP0:0+HTP0:1+HTP0:2");
    ASSERT_EQ(one.exit_code, 0) << one.output;
    ASSERT_EQ(many.exit_code, 0) << many.output;
    const std::regex summary("([0-9]+) passed, 0 failed, ([0-9]+) skipped");
    std::smatch      a, b;
    ASSERT_TRUE(std::regex_search(one.output, a, summary)) << one.output;
    ASSERT_TRUE(std::regex_search(many.output, b, summary)) << many.output;
    EXPECT_EQ(a.str(0), b.str(0));
    EXPECT_TRUE(has_line(many.output, "^FLASH_ATTN_EXT\\(d=256[^\\n]*: NMSE=[^ ]+ OK$")) << many.output;
    const auto hmx = run(std::string(env) + " GGML_HEXAGON_MM_SELECT=4", "test-ops -b HTP0:0+HTP0:1+HTP0:2 -o MUL_MAT");
    ASSERT_EQ(hmx.exit_code, 0) << hmx.output;
    EXPECT_TRUE(has_line(hmx.output, "^[1-9][0-9]* passed, 0 failed")) << hmx.output;
}

// GGML_HEXAGON_FA_SELECT: prompts' attention on the HMX unit (the batch lines name the kernel),
// forced for every case it takes with 3, HVX only with 1, the CPU with 0; every case still matches.
TEST(HtpCli, FlashAttentionSelectChoosesTheKernel) {
    const auto hmx_default = run("GGML_HEXAGON_VERBOSE=1", "test-ops -b HTP0 -o FLASH_ATTN_EXT");
    const auto hmx_always  = run("GGML_HEXAGON_VERBOSE=1 GGML_HEXAGON_FA_SELECT=3", "test-ops -b HTP0 -o FLASH_ATTN_EXT");
    const auto hvx_only    = run("GGML_HEXAGON_VERBOSE=1 GGML_HEXAGON_FA_SELECT=1", "test-ops -b HTP0 -o FLASH_ATTN_EXT");
    const auto cpu         = run("GGML_HEXAGON_FA_SELECT=0", "test-ops -b HTP0 -o FLASH_ATTN_EXT");
    auto count = [](const std::string & text, const std::string & what) {
        size_t n = 0;
        for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
            ++n;
        }
        return n;
    };
    for (const auto * r : {&hmx_default, &hmx_always, &hvx_only}) {
        ASSERT_EQ(r->exit_code, 0) << r->output;
        EXPECT_TRUE(has_line(r->output, "^[1-9][0-9]* passed, 0 failed")) << r->output;
    }
    const size_t on_hmx = count(hmx_always.output, "[FLASH_ATTN_EXT_HMX]");
    EXPECT_GT(on_hmx, count(hmx_default.output, "[FLASH_ATTN_EXT_HMX]"));  // decode rows stay on HVX
    EXPECT_GT(count(hmx_default.output, "[FLASH_ATTN_EXT_HMX]"), 0u);
    EXPECT_EQ(count(hvx_only.output, "[FLASH_ATTN_EXT_HMX]"), 0u);
    EXPECT_TRUE(has_line(hmx_always.output, "^FLASH_ATTN_EXT\\(.*max_bias=8.*: NMSE=[^ ]+ OK$")) << "ALiBi: on HVX";
    EXPECT_EQ(cpu.exit_code, 1);  // test-ops: none of the selected cases ran on HTP0
    EXPECT_TRUE(has_line(cpu.output, "^0 passed, 0 failed, [1-9][0-9]* skipped")) << cpu.output;
}

// GGML_HEXAGON_GDN_SELECT: the delta net's prompts (32 tokens on) on the HMX unit by default, HVX
// only with 1, the CPU with 0; every case still matches.
TEST(HtpCli, DeltaNetSelectChoosesTheKernel) {
    const auto hmx = run("GGML_HEXAGON_VERBOSE=1", "test-ops -b HTP0 -o GATED_DELTA_NET");
    const auto hvx = run("GGML_HEXAGON_VERBOSE=1 GGML_HEXAGON_GDN_SELECT=1", "test-ops -b HTP0 -o GATED_DELTA_NET");
    const auto cpu = run("GGML_HEXAGON_GDN_SELECT=0", "test-ops -b HTP0 -o GATED_DELTA_NET");
    for (const auto * r : {&hmx, &hvx}) {
        ASSERT_EQ(r->exit_code, 0) << r->output;
        EXPECT_TRUE(has_line(r->output, "^[1-9][0-9]* passed, 0 failed$")) << r->output;
    }
    EXPECT_NE(hmx.output.find("[GATED_DELTA_NET_HMX]"), std::string::npos) << hmx.output;
    EXPECT_TRUE(has_line(hmx.output, "^HTP0:   op [0-9]+ GATED_DELTA_NET src.*")) << "decode stays on HVX";
    EXPECT_EQ(hvx.output.find("[GATED_DELTA_NET_HMX]"), std::string::npos) << hvx.output;
    EXPECT_EQ(cpu.exit_code, 1);
    EXPECT_TRUE(has_line(cpu.output, "^0 passed, 0 failed, [1-9][0-9]* skipped")) << cpu.output;
}

TEST(HtpCli, OpFilterKeepsMatchingOpsOffTheNpu) {
    const auto r = run("GGML_HEXAGON_OPFILTER='add|sq.*'", "test-ops -b HTP0 -o ADD");
    EXPECT_EQ(r.exit_code, 1) << "nothing ran: " << r.output;
    EXPECT_TRUE(has_line(r.output, "^0 passed, 0 failed, [1-9][0-9]* skipped$")) << r.output;
    const auto sub = run("GGML_HEXAGON_OPFILTER='add|sq.*'", "test-ops -b HTP0 -o SUB");
    EXPECT_EQ(sub.exit_code, 0) << sub.output;
}

TEST(HtpCli, TraceFileHoldsTheOpsAndKernelEvents) {
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "hexnpu-test-htp-cli-trace.json";
    const auto                  r    = run("", "test-ops -b HTP0 -o SCALE --trace " + file.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream     in(file);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::filesystem::remove(file);
    EXPECT_EQ(text.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
    EXPECT_NE(text.find("\"name\":\"SCALE\""), std::string::npos);
    EXPECT_NE(text.find("\"name\":\"HVX_COMP\""), std::string::npos);
    EXPECT_NE(text.find("\"args\":{\"name\":\"HTP0\"}"), std::string::npos);
    EXPECT_EQ(r.output.find("profile-op"), std::string::npos) << "--trace alone prints no profile lines";
}

TEST(HtpCli, BenchOpsPrintsOneJsonObjectPerCase) {
    const auto r = run("", "bench-ops -b HTP0 -t q4_0 --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char * n : {"1", "2", "4", "8"}) {
        EXPECT_TRUE(has_line(r.output, std::string("^\\{\"op\": \"MUL_MAT\", \"params\": \"type_a=q4_0,type_b=f32,m=4096,n=") +
                                           n + ",k=4096[^\"]*\", \"backend\": \"HTP0\", \"us_per_run\": [0-9.]+, " +
                                           "\"gflops\": [0-9.]+, \"gbps\": [0-9.]+\\}$"))
            << n << "\n" << r.output;
    }
    EXPECT_TRUE(has_line(r.output, "^\\{\"read_bandwidth_gbs\": [0-9.]+, \"threads\": [1-9][0-9]*\\}$")) << r.output;
}

TEST(HtpCli, BenchOpsRefusesBadArguments) {
    const auto type = run("", "bench-ops -t bogus");
    EXPECT_EQ(type.exit_code, 1);
    EXPECT_NE(type.output.find("unknown type 'bogus'"), std::string::npos) << type.output;
    const auto backend = run("", "bench-ops -b NOPE");
    EXPECT_EQ(backend.exit_code, 1);
    EXPECT_NE(backend.output.find("no backend named 'NOPE'"), std::string::npos) << backend.output;
    const auto empty = run("", "bench-ops -o ADD");
    EXPECT_EQ(empty.exit_code, 1);
    EXPECT_NE(empty.output.find("no benchmark case matches"), std::string::npos) << empty.output;
}

} // namespace
