// hexnpu synth OUT.gguf [--preset NAME] [--type f32|f16|bf16] [--seed N] [--ffn-up-scale S]
#include "cli-util.h"
#include "commands.h"

#include "hexnpu/output-file.h"
#include "model/synth-model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu synth OUT.gguf [--preset NAME] [--type f32|f16|bf16] [--seed N] [--ffn-up-scale S]\n"
    "  Writes a GGUF with deterministic pseudo-random weights (default: tiny, f32). Presets:\n"
    "  tiny, small, 1b (TinyLlama 1.1B's shapes, 4 of its 22 layers): llama; gemma3-tiny,\n"
    "  qwen2-tiny, qwen3-tiny, qwen3moe-tiny, gpt-oss-tiny, qwen35-tiny, lfm2-tiny: those\n"
    "  architectures; qwen35-0.8b: Qwen3.5-0.8B's widths, 4 of its layers. --ffn-up-scale S multiplies every layer's\n"
    "  ffn_up.weight (1e6: weights past fp16's range, for testing that such a model runs on HTP0).\n";

} // namespace

int cmd_synth(args a) {
    synth_params p;
    std::string  out;
    for (size_t i = 0; i < a.size(); ++i) {
        const bool has_value = i + 1 < a.size();
        if (a[i] == "--help" || a[i] == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a[i] == "--preset" && has_value) {
            const ggml_type type = p.type;
            const uint64_t  seed = p.seed;
            if (!synth_preset(std::string(a[++i]), p)) {
                return fail("unknown preset '%s' (%s)", printable(a[i]).c_str(), synth_preset_names().c_str());
            }
            p.type = type, p.seed = seed;
        } else if (a[i] == "--type" && has_value) {
            const auto t = ggml_type_from_name(a[++i]);
            if (!t || (*t != GGML_TYPE_F32 && *t != GGML_TYPE_F16 && *t != GGML_TYPE_BF16)) {
                return fail("--type must be f32, f16 or bf16 (quantize the result with 'hexnpu quantize')");
            }
            p.type = *t;
        } else if (a[i] == "--ffn-up-scale" && has_value) {
            // Weights past fp16's range (1e6) for the tests that a valid model runs on HTP0.
            char *      end = nullptr;
            const std::string v(a[++i]);
            p.ffn_up_scale = std::strtof(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !std::isfinite(p.ffn_up_scale) || p.ffn_up_scale == 0.0f) {
                return fail("--ffn-up-scale needs a finite non-zero number, not '%s'", printable(v).c_str());
            }
        } else if (a[i] == "--seed" && has_value) {
            long long s = 0;
            if (!parse_int(a[++i], s) || s < 0) {
                return fail("--seed needs a non-negative integer");
            }
            p.seed = uint64_t(s);
        } else if (!a[i].starts_with("-") && out.empty()) {
            out = a[i];
        } else {
            return fail("unexpected argument '%.*s'\n%s", int(a[i].size()), a[i].data(), kUsage);
        }
    }
    if (out.empty()) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    output_file       file = output_file::create(out);  // refused before the work when OUT is not writable
    const synth_model model(p);
    model.writer().write(file);
    file.commit();
    std::printf("wrote %s: %s, preset %s, %d layers, n_embd %d, vocab %d, weights %s\n", out.c_str(), p.arch.c_str(),
                p.name.c_str(), p.n_layer, p.n_embd, p.n_vocab, ggml_type_name(p.type));
    return 0;
}

} // namespace hexnpu::cli
