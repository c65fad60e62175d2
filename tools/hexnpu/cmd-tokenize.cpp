// hexnpu tokenize: a text's tokens, with llama-tokenize's flags and output forms. Reads only the
// tokenizer metadata, so vocab-only GGUF files work.
#include "cli-util.h"
#include "commands.h"

#include "model/tokenizer.h"

#include "hexnpu/gguf.h"
#include "hexnpu/input-file.h"
#include "util/json-string.h"

#include <cstdio>
#include <string>

namespace hexnpu::cli {
namespace {

const char * kUsage =
    "usage: hexnpu tokenize -m FILE (-p TEXT | -f FILE) [--ids] [--no-bos] [--no-parse-special] [--show-count]\n"
    "  Prints one line per token, 'id -> 'piece'', or with --ids the list [id, id, ...]. BOS is added as the\n"
    "  model's tokenizer says unless --no-bos; control tokens written in the text are recognised unless\n"
    "  --no-parse-special. --pretokens (GPT-2 BPE models) prints the pre-tokenizer's words instead, one\n"
    "  per line as JSON strings.\n";

} // namespace

int cmd_tokenize(args a) {
    std::string model_path, text, file;
    bool        have_text = false, ids_only = false, pretokens = false, add_bos = true, parse_special = true, show_count = false;
    for (size_t i = 0; i < a.size(); ++i) {
        const bool has_value = i + 1 < a.size();
        if (a[i] == "--help" || a[i] == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if ((a[i] == "-m" || a[i] == "--model") && has_value) {
            model_path = a[++i];
        } else if ((a[i] == "-p" || a[i] == "--prompt") && has_value) {
            text = a[++i], have_text = true;
        } else if ((a[i] == "-f" || a[i] == "--file") && has_value) {
            file = a[++i], have_text = true;
        } else if (a[i] == "--ids") {
            ids_only = true;
        } else if (a[i] == "--no-bos") {
            add_bos = false;
        } else if (a[i] == "--no-parse-special") {
            parse_special = false;
        } else if (a[i] == "--pretokens") {
            pretokens = true;
        } else if (a[i] == "--show-count") {
            show_count = true;
        } else {
            return fail("unexpected argument '%.*s'\n%s", int(a[i].size()), a[i].data(), kUsage);
        }
    }
    if (model_path.empty() || !have_text) {
        std::fputs(kUsage, stderr);
        return 1;
    }
    if (!file.empty()) {
        text = read_text_file(file);
    }
    const gguf::reader     r = gguf::reader::open(model_path);
    const model::tokenizer tok(r);
    if (pretokens) {
        for (const std::string & w : tok.pre_tokenize(text)) {
            std::printf("%s\n", util::json_string(w).c_str());
        }
        return 0;
    }
    const std::vector<int32_t> ids = tok.tokenize(text, add_bos, parse_special);
    if (ids_only) {
        std::string line = "[";
        for (size_t i = 0; i < ids.size(); ++i) {
            line += (i ? ", " : "") + std::to_string(ids[i]);
        }
        std::printf("%s]\n", line.c_str());
    } else {
        for (int32_t id : ids) {
            std::printf("%6d -> '%s'\n", id, tok.token_to_piece(id, true).c_str());
        }
    }
    if (show_count) {
        std::printf("Total number of tokens: %zu\n", ids.size());
    }
    return 0;
}

} // namespace hexnpu::cli
