// Whole decoder layers on the virtual NPU through the scheduler: synthesized llama and gemma3 models
// (attention with the F16 KV cache — SET_ROWS, ROPE, FLASH_ATTN_EXT — norms, the FFN with its GLU,
// the output head) run with the NPU first and the CPU as fallback. The scheduler's plan must put
// every computing node on the NPU but the token-embedding lookup (GET_ROWS from the file's mapping,
// which the CPU reads in place): two splits, prompt and decode alike. The logits must match the CPU
// backend's for a prompt and for single-token steps.
#include "model/context.h"
#include "model/model.h"
#include "model/synth-model.h"

#include "cpu/cpu-backend.h"
#include "hexagon/htp-device.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace hexnpu;
using namespace std::chrono_literals;

namespace {

struct logits_run {
    std::vector<float>          prompt, steps;
    std::optional<model::plan_summary> prompt_plan, decode_plan;
};

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 99, 7, 7, 3, 250, 11};
const std::vector<int32_t> kSteps  = {5, 123, 64};

logits_run run(const std::string & path, backend_device & cpu_dev, backend * npu,
               const std::vector<int32_t> & prompt = kPrompt, uint32_t n_ubatch = 16) {
    std::unique_ptr<backend> cpu = cpu_dev.init_backend();
    model::load_options      o;
    o.host_buft = cpu_dev.buffer_type();
    model::context_params cp;
    cp.n_ctx        = prompt.size() + kSteps.size() <= 64 ? 64 : 256;
    cp.n_ubatch     = n_ubatch;
    cp.record_plans = true;
    cp.backends     = {cpu.get()};
    if (npu) {
        backend_device *      dev    = npu->device();
        backend_buffer_type * repack = dev->extra_buffer_types().at(0);
        // As `hexnpu run` places them: matmul weights into the REPACK buffers, norm weights and
        // biases into the NPU's compute buffers, the token embedding read from the mapping.
        o.placement = [dev, repack](const ggml_tensor *, const model::weight_use & use) -> backend_buffer_type * {
            return use.is_matmul ? repack : use.is_table ? nullptr : dev->buffer_type();
        };
        cp.backends = {npu, cpu.get()};
        cp.kv_buft  = dev->buffer_type();
    }
    auto           m = model::model::load(path, o);
    model::context ctx(*m, cp);
    logits_run     r;
    r.prompt = ctx.decode(prompt, true);
    for (int32_t t : kSteps) {
        const std::vector<float> & l = ctx.decode(std::vector<int32_t>{t});
        r.steps.insert(r.steps.end(), l.begin(), l.end());
    }
    r.prompt_plan = ctx.prompt_plan();
    r.decode_plan = ctx.decode_plan();
    return r;
}

double nmse(const std::vector<float> & got, const std::vector<float> & want) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        norm += double(want[i]) * want[i];
    }
    return err / norm;
}

// Every node on HTP0 but, for an untied model, the token rows: their table stays in the file's
// mapping, read in place by the CPU. A tied table is the output head's, in the NPU's REPACK buffer.
void expect_one_npu_split(const model::plan_summary & p, bool tied, const char * what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(p.n_splits, tied ? 1 : 2);
    EXPECT_EQ(p.per_backend.count("CPU") ? p.per_backend.at("CPU") : 0, tied ? 0 : 1);
    ASSERT_EQ(p.fallbacks.size(), tied ? 0u : 1u);
    if (!tied) {
        EXPECT_EQ(p.fallbacks.begin()->first.rfind("GET_ROWS", 0), 0u) << p.fallbacks.begin()->first;
    }
    EXPECT_GT(p.per_backend.at("HTP0"), 30);
}

// HTP0 with two HVX threads and the given matmul / flash-attention paths, in a 256 MiB window.
std::vector<std::unique_ptr<hexagon::htp_device>> npu_devices(uint32_t mm_select, uint32_t fa_select,
                                                               uint32_t gdn_select = 2) {
    hexagon::htp_options ho;
    ho.devices   = {{"HTP0", 0, 0}};
    ho.n_hvx     = 2;
    ho.mm_select = mm_select;
    ho.fa_select = fa_select;
    ho.gdn_select = gdn_select;
    vnpu::rpc::session_options so;
    so.window_size  = 256 << 20;
    so.host_threads = 2;
    so.timeout      = 30s;
    return hexagon::make_htp_devices(ho, so);
}

class DecoderOnNpu : public ::testing::TestWithParam<const char *> {};

TEST_P(DecoderOnNpu, RunsAsOneNpuSplitAndMatchesTheCpu) {
    synth_params p;
    ASSERT_TRUE(synth_preset(GetParam(), p));
    p.type                 = GGML_TYPE_F16;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("hexnpu-test-npu-" + std::to_string(getpid()) + "-" + GetParam() + ".gguf"))
                                 .string();
    synth_model(p).writer().write(path);

    const logits_run want = run(path, *make_cpu_device(), nullptr);
    // MM_SELECT=2 with FA_SELECT=1: the HVX matmuls (F16 weights times fp32 activations, as the
    // CPU) and attention; the NPU's exp/rsqrt/sin helpers are within a few ulp of the CPU's libm:
    // differences stay near fp32 rounding. MM_SELECT=3 and FA_SELECT=2 (the defaults): the
    // prompt's matmuls and attention on HMX, activations, scores and probabilities rounded to fp16
    // (relative error 2^-11 per element: NMSE ~2^-22 = 2.4e-7 per product, a few layers of them,
    // carried into the KV cache and so into the decode steps too).
    struct mode {
        uint32_t mm_select, fa_select;
        double   bound;
    };
    for (const mode & m : {mode{2u, 1u, 1e-8}, mode{3u, 2u, 1e-5}}) {
        SCOPED_TRACE("GGML_HEXAGON_MM_SELECT=" + std::to_string(m.mm_select) +
                     " GGML_HEXAGON_FA_SELECT=" + std::to_string(m.fa_select));
        // qwen35: the delta net's state sums k v^T over the prompt's tokens, each of q, k, v and
        // beta from an fp16-rounded HMX product, and its gated RMS norm rescales each head: about
        // four rounded factors per output where attention has one, so four times the bound
        // (measured 1.9e-5 for the prompt).
        const double         bound = m.bound * (std::string(GetParam()) == "qwen35-tiny" && m.mm_select == 3 ? 4 : 1);
        auto htp_devices = npu_devices(m.mm_select, m.fa_select);
        auto cpu_dev     = make_cpu_device();
        std::unique_ptr<backend> npu = htp_devices[0]->init_backend();
        const logits_run got = run(path, *cpu_dev, npu.get());

        ASSERT_TRUE(got.prompt_plan && got.decode_plan);
        const bool tied = std::string(GetParam()) == "gemma3-tiny";
        expect_one_npu_split(*got.prompt_plan, tied, "prompt");
        expect_one_npu_split(*got.decode_plan, tied, "decode");
        ASSERT_EQ(got.prompt.size(), want.prompt.size());
        ASSERT_EQ(got.steps.size(), want.steps.size());
        EXPECT_LT(nmse(got.prompt, want.prompt), bound);
        EXPECT_LT(nmse(got.steps, want.steps), bound);
    }
    std::remove(path.c_str());
}

// A prompt of 70 tokens in one ubatch: the delta net's prompt on the HMX unit (GDN_SELECT=2: three
// chunks, the last of 6 tokens) and on HVX (1), with the HVX matmuls and attention, both within
// fp32 rounding of the CPU (the HMX kernel's products are exact to fp32's order); and not the same
// bits, so the selection does pick another kernel.
TEST(DecoderOnNpuLongPrompt, Qwen35DeltaNetOnHmxMatchesTheCpu) {
    synth_params p;
    ASSERT_TRUE(synth_preset("qwen35-tiny", p));
    p.type                 = GGML_TYPE_F16;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("hexnpu-test-npu-long-" + std::to_string(getpid()) + ".gguf"))
                                 .string();
    synth_model(p).writer().write(path);
    std::vector<int32_t> prompt(70);
    for (size_t i = 0; i < prompt.size(); ++i) {
        prompt[i] = int32_t((i * 37 + 11) % 250) + 1;
    }
    const logits_run want = run(path, *make_cpu_device(), nullptr, prompt, 128);
    std::vector<logits_run> got;
    for (uint32_t gdn_select : {2u, 1u}) {
        SCOPED_TRACE("GGML_HEXAGON_GDN_SELECT=" + std::to_string(gdn_select));
        auto                     htp_devices = npu_devices(2, 1, gdn_select);
        std::unique_ptr<backend> npu         = htp_devices[0]->init_backend();
        got.push_back(run(path, *make_cpu_device(), npu.get(), prompt, 128));
        ASSERT_TRUE(got.back().prompt_plan);
        expect_one_npu_split(*got.back().prompt_plan, false, "prompt");
        ASSERT_EQ(got.back().prompt.size(), want.prompt.size());
        EXPECT_LT(nmse(got.back().prompt, want.prompt), 1e-8);
        EXPECT_LT(nmse(got.back().steps, want.steps), 1e-8);
    }
    EXPECT_NE(got[0].prompt, got[1].prompt);
    std::remove(path.c_str());
}

// A valid model whose weights go past fp16's range (every ffn_up.weight times 1e6, to ~2e5) runs on
// HTP0 with the HMX unit on, as on the CPU: those matmuls take the HVX kernel (fp32 weights and
// sums), the others the HMX unit as usual (the default bound above). It failed with INVAL_PARAMS.
TEST(DecoderOnNpuBeyondFp16, MatchesTheCpuWithHmxOn) {
    synth_params p;
    ASSERT_TRUE(synth_preset("tiny", p));
    p.type                 = GGML_TYPE_F32;
    p.ffn_up_scale         = 1e6f;
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("hexnpu-test-npu-" + std::to_string(getpid()) + "-beyond-fp16.gguf"))
                                 .string();
    synth_model(p).writer().write(path);
    const logits_run     want = run(path, *make_cpu_device(), nullptr);
    auto                     htp_devices = npu_devices(3, 2);  // the defaults: HMX for prompts
    auto                     cpu_dev     = make_cpu_device();
    std::unique_ptr<backend> npu         = htp_devices[0]->init_backend();
    const logits_run         got         = run(path, *cpu_dev, npu.get());
    ASSERT_EQ(got.prompt.size(), want.prompt.size());
    EXPECT_LT(nmse(got.prompt, want.prompt), 1e-5);
    EXPECT_LT(nmse(got.steps, want.steps), 1e-5);
    std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Architectures, DecoderOnNpu,
                         ::testing::Values("tiny", "gemma3-tiny", "qwen3moe-tiny", "gpt-oss-tiny", "qwen35-tiny", "lfm2-tiny"),
                         [](const auto & info) {
                             std::string name = info.param;  // the architecture: "gpt-oss-tiny" -> gpt_oss
                             name = name == "tiny" ? "llama" : name.substr(0, name.rfind('-'));
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

} // namespace
