// The x86 side of the HVX differential test: runs the Hexagon build of the shared harness under
// qemu-hexagon, runs the same harness on the emulation, and requires bit-identical results for
// every integer intrinsic of the shared list that HVX v66 has. Intrinsics qemu cannot execute
// are listed with the reason.
#include "hvx-diff-harness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *const kTestedNames[] = {
#define HVX_DIFF_NAME(NAME, CLASS) #NAME,
    HEXNPU_HVX_INTEGER_UP_TO_V66(HVX_DIFF_NAME)
#undef HVX_DIFF_NAME
};

const char *const kFloatNames[] = {
#define HVX_DIFF_NAME(NAME, CLASS) #NAME,
    HEXNPU_HVX_FLOAT_V68(HVX_DIFF_NAME)
#undef HVX_DIFF_NAME
};

std::vector<unsigned char> run_under_qemu() {
    const std::string command = std::string(HEXNPU_QEMU_HEXAGON) + " -cpu v67 " + HEXNPU_HVX_DIFF_ELF;
    std::vector<unsigned char> out;
    FILE *pipe = popen(command.c_str(), "r");
    if (!pipe) return out;
    unsigned char chunk[1 << 16];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, pipe)) > 0) out.insert(out.end(), chunk, chunk + n);
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << command << " failed";
    return out;
}

// Compares the emulation's results with qemu's byte stream; remembers the first difference of
// every intrinsic.
class CompareSink {
public:
    explicit CompareSink(const std::vector<unsigned char> &expected) : expected_(expected) {}

    void begin(uint32_t marker) {
        current_ = int(marker & 0xFFFFFF);
        result_ = 0;
        check(&marker, 4);
    }
    void put_word(int32_t w) { check(&w, 4); }
    void put_vec(HVX_Vector v) { check(&v, 128); }
    void put_pair(HVX_VectorPair w) { check(&w, 256); }

    bool consumed_all() const { return offset_ == expected_.size(); }
    const std::vector<std::string> &failures() const { return failures_; }

private:
    void check(const void *data, size_t n) {
        const auto *p = static_cast<const unsigned char *>(data);
        if (offset_ + n > expected_.size()) {
            report("qemu output ended early");
        } else if (std::memcmp(p, expected_.data() + offset_, n) != 0) {
            size_t byte = 0;
            while (p[byte] == expected_[offset_ + byte]) ++byte;
            char text[160];
            std::snprintf(text, sizeof text, "result %d (case-major), byte %zu: emulation 0x%02x, hexagon 0x%02x",
                          result_, byte, p[byte], expected_[offset_ + byte]);
            report(text);
        }
        offset_ += n;
        ++result_;
    }
    void report(const std::string &what) {
        if (!failures_.empty() && failures_.back().rfind(kTestedNames[current_], 0) == 0) return;
        failures_.push_back(std::string(kTestedNames[current_]) + ": " + what);
    }

    const std::vector<unsigned char> &expected_;
    size_t offset_ = 0;
    int current_ = 0;
    int result_ = 0;
    std::vector<std::string> failures_;
};

} // namespace

TEST(HvxQemuDiff, EveryIntegerIntrinsicMatchesTheRealInstruction) {
    const std::vector<unsigned char> expected = run_under_qemu();
    ASSERT_FALSE(expected.empty()) << "no output from qemu-hexagon";

    CompareSink sink(expected);
    hvx_diff::run_all(sink);

    std::string failures;
    for (const std::string &f : sink.failures()) failures += "  " + f + "\n";
    EXPECT_TRUE(sink.failures().empty()) << sink.failures().size() << " intrinsics differ from qemu-hexagon:\n" << failures;
    EXPECT_TRUE(sink.consumed_all()) << "qemu output has more results than the emulation";

    const size_t tested = sizeof kTestedNames / sizeof *kTestedNames;
    std::printf("%zu integer intrinsics x %d cases compared bit for bit with qemu-hexagon -cpu v67\n", tested,
                hvx_diff::kCases);
    std::printf("not testable under qemu-hexagon (its HVX is integer-only up to v66; float opcodes crash it and "
                "Q6_Vsf_equals_Vqf32 is mis-decoded):\n");
    for (const char *name : kFloatNames) std::printf("  %s\n", name);
}
