// The `hexnpu` subcommands. Each takes the arguments after its name and returns the exit code.
#pragma once

#include <span>
#include <string_view>

namespace hexnpu::cli {

using args = std::span<const std::string_view>;

int cmd_gguf(args a);
int cmd_quantize(args a);
int cmd_synth(args a);
int cmd_tile(args a);
int cmd_test_ops(args a);
int cmd_bench_ops(args a);
int cmd_devices(args a);
int cmd_run(args a);
int cmd_tokenize(args a);
int cmd_perplexity(args a);
int cmd_bench(args a);

} // namespace hexnpu::cli
