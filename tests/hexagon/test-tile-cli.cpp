// `hexnpu tile` end to end: a small GGUF written with gguf::writer, the --tensor dump compared with
// repack_tensor, and the --check table compared with the expected sizes and verdicts.
#include "hexagon/repack.h"
#include "hexnpu/gguf.h"
#include "test-repack-util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace hexnpu;
using namespace repack_test;

namespace {

struct command_result {
    int         exit_code;
    std::string output;  // stdout and stderr
};

command_result run(const std::string & args) {
    const std::string command = std::string(HEXNPU_BIN_DIR "/hexnpu tile ") + args + " 2>&1";
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

std::vector<uint8_t> read_file(const std::filesystem::path & path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The whitespace-separated fields of the output line that starts with `name` followed by a space.
std::vector<std::string> table_row(const std::string & output, const std::string & name) {
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(name + " ", 0) == 0) {
            std::istringstream       fields(line);
            std::vector<std::string> row;
            for (std::string f; fields >> f;) {
                row.push_back(f);
            }
            return row;
        }
    }
    return {};
}

struct test_tensor {
    std::string          name;
    ggml_type            type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;

    std::array<int64_t, 4> ne4() const {
        std::array<int64_t, 4> n{1, 1, 1, 1};
        std::copy(ne.begin(), ne.end(), n.begin());
        return n;
    }
};

class TileCli : public testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("hexnpu-tile-cli-" + std::to_string(getpid()));
        std::filesystem::create_directories(dir_);
        std::mt19937_64 rng(9);
        const auto      add = [&](std::string name, ggml_type type, std::vector<int64_t> ne) {
            test_tensor t{std::move(name), type, std::move(ne), {}};
            t.data = random_flat(type, t.ne4().data(), rng);
            tensors_.push_back(std::move(t));
        };
        add("blk.0.attn_q.weight", GGML_TYPE_Q4_0, {64, 45});
        add("blk.0.ffn_experts.weight", GGML_TYPE_Q6_K, {512, 33, 2});
        add("blk.0.ffn_down.weight", GGML_TYPE_Q2_K, {256, 40});
        add("blk.0.mx.weight", GGML_TYPE_MXFP4, {64, 32});
        add("blk.0.norm.weight", GGML_TYPE_F32, {64});
        add("blk.0.q5.weight", GGML_TYPE_Q5_0, {64, 32});
        add("blk.0.overflow.weight", GGML_TYPE_Q6_K, {256, 32});
        std::vector<uint8_t> & big = tensors_.back().data;
        wr16(&big[3 * 210 + 208], 0x6400);  // d = 1024 with scales up to 127: fp16 overflow
        std::fill(big.begin() + 3 * 210 + 192, big.begin() + 3 * 210 + 208, uint8_t(100));

        gguf::writer w;
        w.set("general.architecture", gguf::value::from_string("llama"));
        for (const test_tensor & t : tensors_) {
            w.add_tensor(t.name, t.type, t.ne, t.data.data());
        }
        gguf_ = dir_ / "model.gguf";
        w.write(gguf_.string());
    }

    void TearDown() override { std::filesystem::remove_all(dir_); }

    const test_tensor & tensor(const std::string & name) const {
        return *std::find_if(tensors_.begin(), tensors_.end(), [&](const test_tensor & t) { return t.name == name; });
    }

    std::vector<uint8_t> expected_tiles(const test_tensor & t) const {
        const auto           ne = t.ne4();
        std::vector<uint8_t> tiled(hexagon::tiled_nbytes(t.type, ne.data()));
        EXPECT_TRUE(hexagon::repack_tensor(t.type, ne.data(), t.data.data(), tiled.data()).ok());
        return tiled;
    }

    std::filesystem::path    dir_, gguf_;
    std::vector<test_tensor> tensors_;
};

} // namespace

TEST_F(TileCli, TensorDumpIsTheRepackedBuffer) {
    for (const char * name : {"blk.0.attn_q.weight", "blk.0.ffn_experts.weight", "blk.0.ffn_down.weight", "blk.0.mx.weight"}) {
        SCOPED_TRACE(name);
        const std::filesystem::path out = dir_ / "tiles.bin";
        const command_result        r   = run(gguf_.string() + " --tensor " + name + " -o " + out.string() + " --threads 2");
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_EQ(read_file(out), expected_tiles(tensor(name)));
    }
}

TEST_F(TileCli, TensorDumpErrors) {
    const std::string out = (dir_ / "x.bin").string();
    for (const auto & [args, message] : std::vector<std::pair<std::string, std::string>>{
             {" --tensor blk.0.overflow.weight -o " + out, "does not fit in fp16"},
             {" --tensor blk.0.norm.weight -o " + out, "f32 has no tiled format"},
             {" --tensor nope -o " + out, "no tensor named 'nope'"},
             {" --tensor blk.0.mx.weight", "usage"},
             {" --check --tensor blk.0.mx.weight", "usage"},
         }) {
        const command_result r = run(gguf_.string() + args);
        EXPECT_EQ(r.exit_code, 1) << args;
        EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
    }
    EXPECT_FALSE(std::filesystem::exists(out));
    const command_result missing = run((dir_ / "missing.gguf").string() + " --check");
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_EQ(missing.output.rfind("error: ", 0), 0u) << missing.output;
}

TEST_F(TileCli, CheckTableListsEveryTensor) {
    const command_result r = run(gguf_.string() + " --check");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    struct expected_row {
        const char * name;
        const char * shape;
        const char * lossless;
    };
    uint64_t flat_total = 0, tiled_total = 0;
    for (const expected_row & x : {expected_row{"blk.0.attn_q.weight", "64x45", "yes"},
                                   expected_row{"blk.0.ffn_experts.weight", "512x33x2", "no"},
                                   expected_row{"blk.0.ffn_down.weight", "256x40", "yes"},
                                   expected_row{"blk.0.mx.weight", "64x32", "yes"}}) {
        SCOPED_TRACE(x.name);
        const test_tensor &            t   = tensor(x.name);
        const std::vector<std::string> row = table_row(r.output, x.name);
        ASSERT_EQ(row.size(), 7u) << r.output;
        EXPECT_EQ(row[1], ggml_type_name(t.type));
        EXPECT_EQ(row[2], x.shape);
        EXPECT_EQ(row[3], std::to_string(t.data.size()));
        EXPECT_EQ(row[4], std::to_string(expected_tiles(t).size()));
        EXPECT_EQ(row[5], x.lossless);
        if (std::string(x.lossless) == "yes") {
            EXPECT_EQ(row[6], "0");
        } else {  // rounded scale products differ a little
            EXPECT_GT(std::stod(row[6]), 0.0);
        }
        flat_total += t.data.size();
        tiled_total += expected_tiles(t).size();
    }
    EXPECT_NE(r.output.find("tiled: 4 of 7 tensors"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("not tiled (3):"), std::string::npos) << r.output;
    const std::vector<std::string> norm = table_row(r.output, "blk.0.norm.weight");
    ASSERT_GE(norm.size(), 4u) << r.output;
    EXPECT_EQ(norm[1], "f32");
    EXPECT_NE(r.output.find("f32 has no tiled format"), std::string::npos);
    EXPECT_NE(r.output.find("q5_0 has no tiled format"), std::string::npos);
    const std::vector<std::string> overflow = table_row(r.output, "blk.0.overflow.weight");
    ASSERT_GE(overflow.size(), 4u) << r.output;
    EXPECT_NE(r.output.find("at row 3 "), std::string::npos) << r.output;
    EXPECT_GT(tiled_total, flat_total);
}
