// The x86 side of the htp integer-core differential test: runs the Hexagon build of the shared
// harness under qemu-hexagon and the same harness here, and requires bit-identical results, so
// the 32-bit device build of fastdiv, the mdev partition, tensor extents and the VTCM layout
// computes what the 64-bit host build (the one every other test checks) does.
#include "htp-core-harness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

const char * const kSectionNames[] = {
#define HTP_CORE_DIFF_NAME(NAME) #NAME,
    HTP_CORE_DIFF_SECTIONS(HTP_CORE_DIFF_NAME)
#undef HTP_CORE_DIFF_NAME
};

std::vector<uint32_t> run_under_qemu() {
    const std::string command = std::string(HEXNPU_QEMU_HEXAGON) + " -cpu v67 " + HEXNPU_HTP_CORE_ELF;
    std::vector<uint32_t> words;
    FILE * pipe = popen(command.c_str(), "r");
    if (!pipe) return words;
    uint32_t chunk[1 << 14];
    size_t   n;
    while ((n = fread(chunk, 4, sizeof chunk / 4, pipe)) > 0) words.insert(words.end(), chunk, chunk + n);
    EXPECT_EQ(pclose(pipe), 0) << command << " failed";
    return words;
}

// Compares with qemu's words; remembers the first difference of every section.
class CompareSink {
  public:
    explicit CompareSink(const std::vector<uint32_t> & expected) : expected_(expected) {}

    void begin(uint32_t marker) {
        section_ = marker & 0xFF;
        result_  = 0;
        put_word(marker);
    }
    void put_word(uint32_t w) {
        if (offset_ >= expected_.size()) {
            report("qemu output ended early");
        } else if (w != expected_[offset_]) {
            char text[128];
            std::snprintf(text, sizeof text, "word %d: x86 0x%08x, hexagon 0x%08x", result_, w, expected_[offset_]);
            report(text);
        }
        ++offset_;
        ++result_;
    }

    size_t                           words() const { return offset_; }
    bool                             consumed_all() const { return offset_ == expected_.size(); }
    const std::vector<std::string> & failures() const { return failures_; }

  private:
    void report(const std::string & what) {
        const std::string name = kSectionNames[section_];
        if (!failures_.empty() && failures_.back().rfind(name, 0) == 0) return;
        failures_.push_back(name + ": " + what);
    }

    const std::vector<uint32_t> & expected_;
    size_t                        offset_  = 0;
    uint32_t                      section_ = 0;
    int                           result_  = 0;
    std::vector<std::string>      failures_;
};

}  // namespace

TEST(HtpQemuDiff, IntegerCoresMatchTheHexagonBuild) {
    const std::vector<uint32_t> expected = run_under_qemu();
    ASSERT_FALSE(expected.empty()) << "no output from qemu-hexagon";

    CompareSink sink(expected);
    htp_core_diff::run_all(sink);

    std::string failures;
    for (const std::string & f : sink.failures()) failures += "  " + f + "\n";
    EXPECT_TRUE(sink.failures().empty()) << "the Hexagon build differs:\n" << failures;
    EXPECT_TRUE(sink.consumed_all()) << "qemu output has more results than the x86 run";
    std::printf("%zu result words of fastdiv, mdev partition, rows per chunk, tensor extents, VTCM layout and "
                "matmul tile sums, bitonic sorts compared with qemu-hexagon -cpu v67\n", sink.words());
}
