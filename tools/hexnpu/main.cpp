// hexnpu: command-line entry point. Dispatches to the subcommands in cmd-*.cpp.
#include "commands.h"
#include "cli-util.h"

#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

namespace {

struct command {
    const char * name;
    int (*run)(hexnpu::cli::args);
    const char * summary;
};

const command kCommands[] = {
    {"gguf", hexnpu::cli::cmd_gguf, "inspect GGUF files (gguf info FILE)"},
    {"quantize", hexnpu::cli::cmd_quantize, "quantize a GGUF model: quantize IN.gguf OUT.gguf TYPE"},
    {"synth", hexnpu::cli::cmd_synth, "write a small llama GGUF with deterministic weights"},
    {"tile", hexnpu::cli::cmd_tile, "dump or verify NPU tiled weights: tile IN.gguf --tensor NAME -o OUT.bin | --check"},
    {"devices", hexnpu::cli::cmd_devices, "list the backend devices (HTP sessions: arch, NPU library, VTCM, threads)"},
    {"run", hexnpu::cli::cmd_run, "generate text: run [-m FILE] [-p PROMPT] [-n N] [--device HTP0|CPU]"},
    {"tokenize", hexnpu::cli::cmd_tokenize, "print a text's tokens: tokenize -m FILE -p TEXT [--ids]"},
    {"perplexity", hexnpu::cli::cmd_perplexity, "perplexity over a text: perplexity -m FILE -f TEXT [-c 512]"},
    {"bench", hexnpu::cli::cmd_bench, "prompt/generation speed, the llama-bench table: bench -m FILE [-p 128] [-n 64]"},
    {"test-ops", hexnpu::cli::cmd_test_ops, "check every op on a backend: test-ops [-o OP] [-b BACKEND] [-t TYPE] [--perf]"},
    {"bench-ops", hexnpu::cli::cmd_bench_ops, "time model-sized op cases: bench-ops [-o OP] [-b BACKEND] [-t TYPE] [--json]"},
};

void print_usage(FILE * out) {
    std::fprintf(out, "usage: hexnpu <command> [args...]\n\ncommands:\n");
    for (const command & c : kCommands) {
        std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
    }
    std::fprintf(out, "\nRun 'hexnpu <command> --help' for a command's options.\n");
}

} // namespace

int main(int argc, char ** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_usage(args.empty() ? stderr : stdout);
        return args.empty() ? 1 : 0;
    }
    for (const command & c : kCommands) {
        if (args[0] == c.name) {
            try {
                return c.run(hexnpu::cli::args(args).subspan(1));
            } catch (const std::exception & e) {
                return hexnpu::cli::fail("%s", e.what());
            }
        }
    }
    hexnpu::cli::fail("unknown command '%.*s' (run 'hexnpu --help')", int(args[0].size()), args[0].data());
    return 1;
}
