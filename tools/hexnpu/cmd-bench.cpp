// hexnpu bench: like llama-bench. pp<N>: a prompt of N tokens from an empty cache; tg<N>: N tokens
// generated one at a time from an empty cache; each repeated -r times after a warm-up, reported
// as tokens per second ± standard deviation. After the table: the memory read bandwidth measured in
// the same run and the token-generation bound it gives (weight bytes read per token / bandwidth).
#include "cli-util.h"
#include "memory-bandwidth.h"
#include "commands.h"
#include "model-util.h"

#include "model/context.h"

#include "hexnpu/hexagon.h"
#include "hexnpu/output-file.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu bench [-m FILE] [-p 128] [-n 64] [-r 3] [-ub 512] [-t N] [--device LIST [-sm none|layer] [-ts P,..]] [-o md|json] [--trace FILE]\n"
    "  Prompt processing (pp) and token generation (tg) speed, the llama-bench table. -p 0 or -n 0 skips a test.\n"
    "  Without -m: the real Gemma 3 270M if installed. --trace FILE: the NPU devices' trace events of the\n"
    "  whole run (Perfetto JSON; scripts/trace-summary.py sums them per device and event kind).\n";

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string file_type_name(const model::model & m) {
    const gguf::value * v = m.file().find("general.file_type");
    const auto          t = v ? v->as_uint() : std::nullopt;
    if (!t) {  // no file type recorded: the type of the FFN weights
        std::string s = ggml_type_name(m.layers.front().ffn_down->type);
        for (char & c : s) {
            c = char(std::toupper(static_cast<unsigned char>(c)));
        }
        return s;
    }
    switch (*t) {
        case 0: return "all F32";
        case 1: return "F16";
        case 2: return "Q4_0";
        case 3: return "Q4_1";
        case 7: return "Q8_0";
        case 8: return "Q5_0";
        case 9: return "Q5_1";
        case 10: return "Q2_K - Medium";
        case 12: return "Q3_K - Medium";
        case 14: return "Q4_K - Small";
        case 15: return "Q4_K - Medium";
        case 16: return "Q5_K - Small";
        case 17: return "Q5_K - Medium";
        case 18: return "Q6_K";
        case 25: return "IQ4_NL";
        case 32: return "BF16";
        default: return "type " + std::to_string(*t);
    }
}

struct result {
    std::string         test;
    int                 n_tokens;
    std::vector<double> ts;  // tokens/s per repetition
    double mean() const { return std::accumulate(ts.begin(), ts.end(), 0.0) / double(ts.size()); }
    double stddev() const {
        if (ts.size() < 2) {
            return 0;
        }
        const double m = mean();
        double       s = 0;
        for (double v : ts) {
            s += (v - m) * (v - m);
        }
        return std::sqrt(s / double(ts.size() - 1));
    }
};

} // namespace

int cmd_bench(args a) {
    device_choice dev_choice;
    std::string model_path, output = "md";
    long long   n_prompt = 128, n_gen = 64, reps = 3, n_ubatch = 512, n_threads = 0;
    std::string trace_path;
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
        } else if (f == "-p" || f == "--n-prompt") {
            need_int(n_prompt, 0);
        } else if (f == "-n" || f == "--n-gen") {
            need_int(n_gen, 0);
        } else if (f == "-r" || f == "--repetitions") {
            need_int(reps, 1);
        } else if (f == "-ub" || f == "--ubatch-size") {
            need_int(n_ubatch, 1);
        } else if (f == "-t" || f == "--threads") {
            n_threads = thread_option(a, i);
        } else if (parse_device_flag(a, i, dev_choice)) {
        } else if (f == "--trace" && has_value) {
            trace_path = std::string(a[++i]);
        } else if (f == "-o" && has_value) {
            output = a[++i];
            if (output != "md" && output != "json") {
                return fail("-o must be md or json");
            }
        } else {
            return fail("unexpected argument '%.*s'\n%s", int(f.size()), f.data(), kUsage);
        }
    }
    if (model_path.empty()) {
        model_path = find_default_model();
        if (model_path.empty()) {
            return fail("no -m and the real model is not installed (bash scripts/fetch-model.sh)");
        }
    }
    const int threads = n_threads > 0 ? int(n_threads) : int(std::max(1u, std::thread::hardware_concurrency()));
    // The trace file is checked (and its temporary made) before the work, not after.
    std::optional<output_file> trace;
    if (!trace_path.empty()) {
        trace.emplace(output_file::create(trace_path));
    }
    devices   d       = open_devices(dev_choice, threads, trace.has_value());
    auto      m       = load_model(model_path, d);
    const model::hparams & h = m->hp();
    model::context_params  cp = context_params_for(d);
    cp.n_ctx    = std::max<long long>(16, std::max(n_prompt, n_gen + 1));
    cp.n_ubatch = n_ubatch;
    model::context ctx(*m, cp);

    std::mt19937 rng(42);
    auto random_tokens = [&](long long n) {
        std::vector<int32_t> t(static_cast<size_t>(n));
        for (int32_t & x : t) {
            x = int32_t(rng() % uint32_t(h.n_vocab));
        }
        return t;
    };
    std::vector<result> results;
    if (n_prompt > 0) {
        result r{"pp" + std::to_string(n_prompt), int(n_prompt), {}};
        for (long long rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
            const auto toks = random_tokens(n_prompt);
            ctx.clear();
            const double t0 = now_s();
            ctx.decode(toks);
            if (rep >= 0) {
                r.ts.push_back(double(n_prompt) / (now_s() - t0));
            }
        }
        results.push_back(r);
    }
    if (n_gen > 0) {
        result r{"tg" + std::to_string(n_gen), int(n_gen), {}};
        for (long long rep = -1; rep < reps; ++rep) {
            ctx.clear();
            int32_t      tok = int32_t(rng() % uint32_t(h.n_vocab));
            const double t0  = now_s();
            for (long long i = 0; i < (rep < 0 ? 1 : n_gen); ++i) {
                const int32_t one[1] = {tok};
                ctx.decode(one);
                tok = int32_t(rng() % uint32_t(h.n_vocab));
            }
            if (rep >= 0) {
                r.ts.push_back(double(n_gen) / (now_s() - t0));
            }
        }
        results.push_back(r);
    }

    if (trace) {
        write_htp_trace(*trace);
        trace->commit();
    }
    print_run_reports(d);

    std::string size_label;
    if (const gguf::value * v = m->file().find("general.size_label"); v && v->as_string()) {
        size_label = " " + *v->as_string();
    }
    const std::string model_name = std::string(model::arch_name(h.architecture)) + size_label + " " +
                                   file_type_name(*m);
    const double bw = read_bandwidth(threads);
    // Per generated token every weight is read once, the token embedding only for one row.
    const double bytes_per_token =
        double(m->weight_bytes()) - (m->tied() ? 0.0 : double(ggml_nbytes(m->tok_embd)));
    const double tg_bound = bw / bytes_per_token;
    if (output == "json") {
        std::printf("[\n");
        for (size_t i = 0; i < results.size(); ++i) {
            const result & r = results[i];
            std::printf("  {\"model\": \"%s\", \"size\": %llu, \"params\": %llu, \"backend\": \"%s\", \"threads\": %d, "
                        "\"test\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, \"avg_ts\": %.4f, \"stddev_ts\": %.4f, "
                        "\"read_bandwidth_gbs\": %.3f, \"tg_bound_ts\": %.4f}%s\n",
                        model_name.c_str(), (unsigned long long) m->weight_bytes(), (unsigned long long) m->n_params(),
                        d.names.c_str(), threads, r.test.c_str(), r.test[0] == 'p' ? r.n_tokens : 0,
                        r.test[0] == 't' ? r.n_tokens : 0, r.mean(), r.stddev(), bw / 1e9, tg_bound,
                        i + 1 < results.size() ? "," : "");
        }
        std::printf("]\n");
        return 0;
    }
    const int bw_col = int(std::max<size_t>(10, d.names.size()));  // the backend column fits every name
    std::printf("| %-30s | %10s | %10s | %-*s | %7s | %15s | %20s |\n", "model", "size", "params", bw_col, "backend",
                "threads", "test", "t/s");
    std::printf("| ------------------------------ | ---------: | ---------: | %s | ------: | --------------: | "
                "-------------------: |\n",
                std::string(size_t(bw_col), '-').c_str());
    for (const result & r : results) {
        std::printf("| %-30s | %10s | %8.2f M | %-*s | %7d | %15s | %20s |\n", model_name.c_str(),
                    human_bytes(m->weight_bytes()).c_str(), double(m->n_params()) / 1e6, bw_col, d.names.c_str(),
                    threads, r.test.c_str(), format("%.2f ± %.2f", r.mean(), r.stddev()).c_str());
    }
    std::printf("\nmemory read bandwidth %.2f GB/s (%d threads); %.1f MiB of weights read per generated token: "
                "tg bound %.2f t/s",
                bw / 1e9, threads, bytes_per_token / 1048576.0, tg_bound);
    for (const result & r : results) {
        if (r.test[0] == 't') {
            std::printf(", %s reaches %.0f %% of it", r.test.c_str(), 100.0 * r.mean() / tg_bound);
        }
    }
    std::printf("\n");
    return 0;
}

} // namespace hexnpu::cli
