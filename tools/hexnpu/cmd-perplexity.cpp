// hexnpu perplexity: like llama-perplexity. The text is cut into chunks of n_ctx tokens, each
// evaluated from an empty cache with its first token replaced by BOS; the second half of each
// chunk is scored (every token sees at least n_ctx/2 tokens of context). Prints the running
// estimate per chunk, then the final estimate with its standard error.
#include "cli-util.h"
#include "commands.h"
#include "model-util.h"

#include "hexnpu/input-file.h"

#include "model/context.h"
#include "model/tokenizer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu perplexity -m FILE -f TEXT [-c 512] [-ub N] [--chunks N] [-t N] [--device LIST [-sm none|layer] [-ts P,..]]\n"
    "  Perplexity of the model over the text, as llama-perplexity computes it: chunks of -c tokens, the\n"
    "  second half of each scored. Prints [chunk]running-PPL lines and 'Final estimate: PPL = X +/- E'.\n"
    "  --top1: then a line 'top1: ID ID ...', the most likely token at each scored position (to compare\n"
    "  devices).\n";

} // namespace

int cmd_perplexity(args a) {
    device_choice dev_choice;
    std::string model_path, text_file;
    long long   n_ctx = 512, n_ubatch = 512, n_threads = 0, max_chunks = -1;
    bool        top1 = false;
    std::string top1_line = "top1:";
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string_view f = a[i];
        const bool has_value = i + 1 < a.size();
        auto need_int = [&](long long & out, long long min) { out = int_option(a, i, min); };
        if (f == "--help" || f == "-h") {
            std::fputs(kUsage, stdout);
            std::fputs(kThreadsUsage, stdout);
            std::fputs(kDeviceFlagsUsage, stdout);
            return 0;
        } else if ((f == "-m" || f == "--model") && has_value) {
            model_path = a[++i];
        } else if ((f == "-f" || f == "--file") && has_value) {
            text_file = a[++i];
        } else if (f == "-c" || f == "--ctx-size") {
            need_int(n_ctx, 8);
        } else if (f == "-ub" || f == "--ubatch-size" || f == "-b" || f == "--batch-size") {
            need_int(n_ubatch, 1);
        } else if (f == "--top1") {
            top1 = true;
        } else if (f == "--chunks") {
            need_int(max_chunks, 1);
        } else if (f == "-t" || f == "--threads") {
            n_threads = thread_option(a, i);
        } else if (parse_device_flag(a, i, dev_choice)) {
        } else {
            return fail("unexpected argument '%.*s'\n%s", int(f.size()), f.data(), kUsage);
        }
    }
    if (text_file.empty()) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    if (model_path.empty()) {
        model_path = find_default_model();
        if (model_path.empty()) {
            return fail("no -m and the real model is not installed (bash scripts/fetch-model.sh)");
        }
        std::fprintf(stderr, "perplexity: no -m: using the real model %s\n", model_path.c_str());
    }
    const std::string text = read_text_file(text_file);

    devices d = open_devices(dev_choice, int(n_threads));
    auto    m = load_model(model_path, d);
    const model::hparams & h = m->hp();
    const model::tokenizer tok(m->file());
    const std::vector<int32_t> tokens = tok.tokenize(text, true, false);
    long long n_chunk = int64_t(tokens.size()) / n_ctx;
    if (n_chunk == 0) {
        return fail("the text has %zu tokens, fewer than one chunk of -c %lld (use a longer text or a smaller -c)",
                    tokens.size(), n_ctx);
    }
    if (max_chunks > 0) {
        n_chunk = std::min(n_chunk, max_chunks);
    }
    model::context_params cp = context_params_for(d);
    cp.n_ctx    = n_ctx;
    cp.n_ubatch = n_ubatch;
    model::context ctx(*m, cp);
    std::fprintf(stderr, "perplexity: %s on %s: %zu tokens, %lld chunks of %lld, scoring the second half of each\n",
                 printable(h.name).c_str(), d.names.c_str(), tokens.size(), n_chunk, n_ctx);

    const int64_t first = n_ctx / 2;
    double        nll = 0, nll2 = 0;
    int64_t       count = 0;
    const auto    t0    = std::chrono::steady_clock::now();
    for (long long c = 0; c < n_chunk; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (tok.add_bos() && tok.bos() >= 0) {
            chunk[0] = tok.bos();
        }
        ctx.clear();
        const std::vector<float> & logits = ctx.decode_from(chunk, first);  // the scored half only
        for (int64_t j = first; j < n_ctx - 1; ++j) {
            const float * row = logits.data() + size_t(j - first) * size_t(h.n_vocab);
            float         mx  = row[0];
            int64_t       best = 0;
            for (int64_t v = 1; v < h.n_vocab; ++v) {
                if (row[v] > mx) {
                    mx = row[v], best = v;
                }
            }
            if (top1) {
                top1_line += " " + std::to_string(best);
            }
            double sum = 0;
            for (int64_t v = 0; v < h.n_vocab; ++v) {
                sum += std::exp(double(row[v] - mx));
            }
            const double lp = double(row[tokens[size_t(c * n_ctx + j + 1)]] - mx) - std::log(sum);
            nll -= lp;
            nll2 += lp * lp;
            ++count;
        }
        if (c == 0) {
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", s, s * double(n_chunk) / 60.0);
        }
        std::printf("[%lld]%.4f,", c + 1, std::exp(nll / double(count)));
        std::fflush(stdout);
    }
    std::printf("\n");
    const double mean = nll / double(count);
    const double ppl  = std::exp(mean);
    const double var  = nll2 / double(count) - mean * mean;
    if (var > 0 && count > 1) {
        std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, std::sqrt(var / double(count - 1)) * ppl);
    } else {
        std::printf("Final estimate: PPL = %.4f\n", ppl);
    }
    if (top1) {
        std::printf("%s\n", top1_line.c_str());
    }
    return 0;
}

} // namespace hexnpu::cli
