// The malformed-GGUF corpus (tests/data/gguf-malformed, made by make_corpus.py and by the fuzzer):
// every file must be rejected with gguf::error, with the expected message and an offset inside
// the file. Files are opened through reader::open so the memory-mapped path is the one tested.
#include "hexnpu/gguf.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using hexnpu::gguf::reader;

const fs::path kCorpus = fs::path(HEXNPU_TEST_DATA_DIR) / "gguf-malformed";

struct corpus_case {
    std::string file;
    std::string expected;  // substring of the error message
};

std::vector<corpus_case> load_expectations(const fs::path & list) {
    std::vector<corpus_case> cases;
    std::ifstream            in(list);
    std::string              line;
    while (std::getline(in, line)) {
        if (line.empty()) {
            continue;
        }
        const size_t space = line.find(' ');
        cases.push_back({line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1)});
    }
    return cases;
}

std::vector<corpus_case> all_cases() {
    std::vector<corpus_case> cases = load_expectations(kCorpus / "expected.txt");
    for (corpus_case & c : load_expectations(kCorpus / "fuzz-expected.txt")) {
        cases.push_back(std::move(c));
    }
    return cases;
}

TEST(GgufMalformed, EveryFileIsRejectedWithTheExpectedMessage) {
    const std::vector<corpus_case> cases = all_cases();
    ASSERT_GE(cases.size(), 60u) << "corpus missing: run make_corpus.py";
    for (const corpus_case & c : cases) {
        SCOPED_TRACE(c.file);
        ASSERT_FALSE(c.expected.empty());
        const fs::path path = kCorpus / c.file;
        ASSERT_TRUE(fs::exists(path));
        try {
            reader::open(path.string());
            ADD_FAILURE() << "accepted";
        } catch (const hexnpu::gguf::error & e) {
            EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos)
                << "message: " << e.what() << "\nexpected to contain: " << c.expected;
            EXPECT_LE(e.offset(), fs::file_size(path)) << e.what();
        }
    }
}

TEST(GgufMalformed, EveryCorpusFileIsListed) {
    std::set<std::string> listed;
    for (const corpus_case & c : all_cases()) {
        EXPECT_TRUE(listed.insert(c.file).second) << c.file << " listed twice";
    }
    for (const fs::directory_entry & entry : fs::directory_iterator(kCorpus)) {
        if (entry.path().extension() == ".gguf") {
            EXPECT_TRUE(listed.count(entry.path().filename().string())) << entry.path() << " has no expectation";
        }
    }
}

} // namespace
