// hexnpu run: generate text from a GGUF model (like llama-completion), then llama.cpp's timing lines.
#include "cli-util.h"
#include "commands.h"
#include "model-util.h"

#include "hexnpu/input-file.h"

#include "model/context.h"
#include "model/sampler.h"
#include "model/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu run [-m FILE] [-p PROMPT | -f FILE] [-n N] [-c N] [-ub N] [-t N] [--device LIST [-sm none|layer] [-ts P,..]]\n"
    "                  [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S]\n"
    "                  [--repeat-last-n N] [--ignore-eos] [--no-parse-special] [--verbose] [--tokens ID,... [--logits|--argmax]]\n"
    "  Streams the continuation of the prompt, then the timing lines. Defaults: -n 64, -c 4096 (at most the\n"
    "  model's), -ub 512, greedy unless --temp > 0 (then top-k 40, top-p 0.95, min-p 0.05), seed 42,\n"
    "  --device CPU. Without -m: the real Gemma 3 270M if installed (scripts/fetch-model.sh), else a\n"
    "  synthesized tiny llama. --tokens evaluates those ids instead of a prompt; --logits then prints the\n"
    "  logits of every position (one line of n_vocab numbers each; --logits-from K: of positions K..),\n"
    "  --argmax the top token of each, and\n"
    "  generates nothing.\n";

// Text to stdout, whole: a NUL (from a prompt file, or a <0x00> token) as \x00, not the end of it.
void echo(std::string_view text) {
    for (size_t nul; (nul = text.find('\0')) != std::string_view::npos; text.remove_prefix(nul + 1)) {
        std::fwrite(text.data(), 1, nul, stdout);
        std::fputs("\\x00", stdout);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int cmd_run(args a) {
    device_choice dev_choice;
    std::string model_path, prompt, prompt_file;
    bool        have_prompt = false, verbose = false, parse_special = true, print_logits = false, print_argmax = false,
                ignore_eos = false;
    std::vector<int32_t> given_tokens;
    long long   logits_from = 0;
    long long   n_predict = 64, n_ctx = 4096, n_ubatch = 512, n_threads = 0, seed = 42;
    model::sampler_params sp;
    sp.temp = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string_view f = a[i];
        const bool has_value = i + 1 < a.size();
        auto need_int = [&](long long & out, long long min, long long max = INT32_MAX) { out = int_option(a, i, min, max); };
        // Sampling values without a meaning (a negative temperature, a probability above 1, a
        // penalty of 0, NaN) are refused rather than sampled with.
        auto need_float = [&](float & out, double min, double max, bool min_open = false) {
            out = float(float_option(a, i, min, max, min_open));
        };
        if (f == "--help" || f == "-h") {
            std::fputs(kUsage, stdout);
            std::fputs(kThreadsUsage, stdout);
            std::fputs(kDeviceFlagsUsage, stdout);
            return 0;
        } else if ((f == "-m" || f == "--model") && has_value) {
            model_path = a[++i];
        } else if ((f == "-p" || f == "--prompt") && has_value) {
            prompt = a[++i], have_prompt = true;
        } else if ((f == "-f" || f == "--file") && has_value) {
            prompt_file = a[++i], have_prompt = true;
        } else if (f == "-n" || f == "--n-predict") {
            need_int(n_predict, 0);
        } else if (f == "-c" || f == "--ctx-size") {
            need_int(n_ctx, 1);
        } else if (f == "-ub" || f == "--ubatch-size") {
            need_int(n_ubatch, 1);
        } else if (f == "-t" || f == "--threads") {
            n_threads = thread_option(a, i);
        } else if (f == "--seed" || f == "-s") {
            need_int(seed, 0, UINT32_MAX);
        } else if (f == "--temp") {
            need_float(sp.temp, 0, INFINITY);
        } else if (f == "--top-k") {
            long long k = 0;
            need_int(k, 0);
            sp.top_k = int(k);
        } else if (f == "--top-p") {
            need_float(sp.top_p, 0, 1);
        } else if (f == "--min-p") {
            need_float(sp.min_p, 0, 1);
        } else if (f == "--repeat-penalty") {
            need_float(sp.repeat_penalty, 0, INFINITY, true);
        } else if (f == "--repeat-last-n") {
            long long n = 0;
            need_int(n, 0);
            sp.repeat_last_n = int(n);
        } else if (f == "--ignore-eos") {
            ignore_eos = true;
        } else if (parse_device_flag(a, i, dev_choice)) {
        } else if (f == "--no-parse-special") {
            parse_special = false;
        } else if (f == "--tokens" && has_value) {
            const std::string list(a[++i]);
            for (size_t pos = 0; pos < list.size();) {
                size_t    end = list.find(',', pos);
                long long id  = 0;
                end           = end == std::string::npos ? list.size() : end;
                if (!parse_int(std::string_view(list).substr(pos, end - pos), id) || id < 0 || id > INT32_MAX) {
                    return fail("--tokens needs a comma-separated list of token ids (integers in [0, %d])", INT32_MAX);
                }
                given_tokens.push_back(int32_t(id));
                pos = end + 1;
            }
        } else if (f == "--logits") {
            print_logits = true;
        } else if (f == "--logits-from") {
            need_int(logits_from, 0);
            print_logits = true;
        } else if (f == "--argmax") {
            print_argmax = true;
        } else if (f == "--verbose" || f == "-v") {
            verbose = true;
        } else {
            return fail("unexpected argument '%.*s'\n%s", int(f.size()), f.data(), kUsage);
        }
    }
    sp.seed = uint64_t(seed);
    if ((print_argmax || print_logits) && given_tokens.empty()) {  // before loading the model
        return fail("%s needs --tokens", print_argmax ? "--argmax" : "--logits");
    }
    if (!prompt_file.empty()) {
        prompt = read_text_file(prompt_file);
    }
    if (!have_prompt) {
        prompt = "The capital of France is";
    }
    if (model_path.empty()) {
        model_path = find_default_model();
        if (model_path.empty()) {
            model_path = synth_default_model();
            std::fprintf(stderr, "run: no -m and the real model is not installed (bash scripts/fetch-model.sh): "
                                 "using a synthesized tiny llama (random weights, the text is noise)\n");
        } else {
            std::fprintf(stderr, "run: no -m: using the real model %s\n", model_path.c_str());
        }
    }

    const auto t_load = std::chrono::steady_clock::now();
    devices    d      = open_devices(dev_choice, int(n_threads));
    auto       m      = load_model(model_path, d);
    const model::hparams & h = m->hp();
    model::tokenizer tok(m->file());
    model::context_params cp = context_params_for(d);
    cp.n_ctx    = std::min<long long>(n_ctx, h.n_ctx_train > 0 ? h.n_ctx_train : n_ctx);
    cp.n_ubatch = n_ubatch;
    cp.plan_out = verbose ? stderr : nullptr;
    model::context ctx(*m, cp);
    const double load_ms = ms_since(t_load);
    std::fprintf(stderr, "run: %s (%s, %lld layers, n_embd %lld, vocab %lld, %.2f M params, %s) on %s, n_ctx %lld\n",
                 printable(h.name).c_str(), model::arch_name(h.architecture), (long long) h.n_layer, (long long) h.n_embd,
                 (long long) h.n_vocab, double(m->n_params()) / 1e6, human_bytes(m->weight_bytes()).c_str(),
                 d.names.c_str(), (long long) cp.n_ctx);

    std::vector<int32_t> tokens = given_tokens.empty() ? tok.tokenize(prompt, true, parse_special) : given_tokens;
    if (print_argmax) {
        const std::vector<float> & all = ctx.decode(tokens, true);
        for (size_t t = 0; t < tokens.size(); ++t) {
            std::printf("%d\n", model::argmax(std::span<const float>(all.data() + t * size_t(h.n_vocab), size_t(h.n_vocab))));
        }
        print_run_reports(d);
        return 0;
    }
    if (print_logits) {
        if (logits_from >= (long long) tokens.size()) {
            return fail("--logits-from %lld: there are only %zu tokens", logits_from, tokens.size());
        }
        const std::vector<float> & all = ctx.decode_from(tokens, logits_from);
        std::string                line;
        for (size_t t = 0; t < tokens.size() - size_t(logits_from); ++t) {
            line.clear();
            for (int64_t j = 0; j < h.n_vocab; ++j) {
                line += format(j ? " %.9g" : "%.9g", double(all[t * size_t(h.n_vocab) + size_t(j)]));
            }
            std::printf("%s\n", line.c_str());
        }
        print_run_reports(d);
        return 0;
    }
    if (int64_t(tokens.size()) + n_predict > cp.n_ctx) {
        return fail("the prompt (%zu tokens) and -n %lld do not fit the context size %lld (raise -c)", tokens.size(),
                    n_predict, (long long) cp.n_ctx);
    }
    if (tokens.empty()) {
        return fail("the prompt is empty and the model adds no BOS token: nothing to continue");
    }
    echo(given_tokens.empty() ? prompt : tok.detokenize(tokens));

    model::sampler smp(sp);
    for (int32_t t : tokens) {
        smp.accept(t);
    }
    const auto t_prompt = std::chrono::steady_clock::now();
    const std::vector<float> * logits = &ctx.decode(tokens);
    const double prompt_ms = ms_since(t_prompt);

    const auto t_eval = std::chrono::steady_clock::now();
    int        n_eval = 0;
    for (long long i = 0; i < n_predict; ++i) {
        const std::span<const float> last(logits->data(), size_t(h.n_vocab));
        if (!std::all_of(last.begin(), last.end(), [](float x) { return std::isfinite(x); })) {
            // Sampling NaN gives some token (often end of text) and the run would end silently.
            std::fputs("\n", stdout);
            std::fflush(stdout);
            return fail("the model's logits are NaN or infinite after %zu tokens (a NaN or overflowing weight, "
                        "or a broken backend: compare --device CPU)", tokens.size() + size_t(i));
        }
        const int32_t next = smp.sample(last);
        if (tok.is_eog(next) && !ignore_eos) {
            break;
        }
        smp.accept(next);
        echo(tok.token_to_piece(next));
        if (i + 1 == n_predict) {
            break;
        }
        const int32_t one[1] = {next};
        logits               = &ctx.decode(one);
        ++n_eval;
    }
    const double eval_ms = ms_since(t_eval);
    std::fputs("\n\n", stdout);
    std::fflush(stdout);  // the text before the timing lines on stderr, also when both go to one file
    const double np = double(tokens.size());
    std::fprintf(stderr, "hexnpu_perf:        load time = %10.2f ms\n", load_ms);
    std::fprintf(stderr,
                 "hexnpu_perf: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n",
                 prompt_ms, int(np), prompt_ms / np, 1e3 * np / prompt_ms);
    if (n_eval > 0) {
        std::fprintf(stderr,
                     "hexnpu_perf:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)\n",
                     eval_ms, n_eval, eval_ms / n_eval, 1e3 * n_eval / eval_ms);
    }
    std::fprintf(stderr, "hexnpu_perf:       total time = %10.2f ms / %5d tokens\n", load_ms + prompt_ms + eval_ms,
                 int(np) + n_eval);
    print_run_reports(d);
    return 0;
}

} // namespace hexnpu::cli
