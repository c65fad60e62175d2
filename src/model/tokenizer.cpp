#include "model/tokenizer.h"

#include "model/model.h"

#include <algorithm>
#include <cstring>
#include <queue>

namespace hexnpu::model {
namespace {

const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

size_t utf8_len(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;  // stray continuation byte: a symbol of its own
}

std::string replace_all(std::string s, const std::string & from, const std::string & to) {
    std::string out;
    size_t      pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos).append(to);
    }
    return out.append(s, pos, std::string::npos);
}

// A piece of the input: raw text, or an already recognised special token.
struct fragment {
    int32_t     token = -1;
    std::string text;
};

} // namespace

tokenizer::tokenizer(const gguf::reader & file) {
    auto str = [&](const char * key) -> const std::string * {
        const gguf::value * v = file.find(key);
        return v ? v->as_string() : nullptr;
    };
    const std::string * m = str("tokenizer.ggml.model");
    if (!m) {
        throw model_error("missing key tokenizer.ggml.model");
    }
    model_ = *m;
    if (model_ != "llama" && model_ != "gpt2") {
        throw model_error("unsupported tokenizer.ggml.model '" + model_ + "' (supported: llama, gpt2)");
    }
    if (const std::string * p = str("tokenizer.ggml.pre")) {
        pre_ = *p;
    }
    const gguf::value * toks = file.find("tokenizer.ggml.tokens");
    if (!toks || !toks->as_strings() || toks->as_strings()->empty()) {
        throw model_error("missing key tokenizer.ggml.tokens (an array of strings)");
    }
    tokens_ = *toks->as_strings();
    const size_t n = tokens_.size();
    scores_.assign(n, 0.0f);
    types_.assign(n, token_type::normal);
    if (const gguf::value * s = file.find("tokenizer.ggml.scores")) {
        if (s->type() != gguf::value_type::ARRAY || s->elem_type() != gguf::value_type::FLOAT32 || s->array_size() != n) {
            throw model_error("tokenizer.ggml.scores must be " + std::to_string(n) + " float32 values");
        }
        std::memcpy(scores_.data(), s->array_bytes().data(), n * sizeof(float));
    } else if (model_ == "llama") {
        throw model_error("missing key tokenizer.ggml.scores");
    }
    if (const gguf::value * t = file.find("tokenizer.ggml.token_type")) {
        if (t->type() != gguf::value_type::ARRAY || t->elem_type() != gguf::value_type::INT32 || t->array_size() != n) {
            throw model_error("tokenizer.ggml.token_type must be " + std::to_string(n) + " int32 values");
        }
        std::memcpy(types_.data(), t->array_bytes().data(), n * sizeof(int32_t));
    }
    token_to_id_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        token_to_id_.emplace(tokens_[i], int32_t(i));
    }
    if (model_ == "gpt2") {
        const gguf::value * mg = file.find("tokenizer.ggml.merges");
        if (!mg || !mg->as_strings()) {
            throw model_error("missing key tokenizer.ggml.merges (gpt2 tokenizer)");
        }
        int rank = 0;
        for (const std::string & s : *mg->as_strings()) {
            bpe_ranks_.emplace(s, rank++);
        }
    }
    auto id_key = [&](const char * key, int32_t def) {
        const gguf::value * v = file.find(key);
        if (!v) {
            return def;
        }
        const auto u = v->as_int();
        if (!u || *u < 0 || *u >= int64_t(n)) {
            throw model_error(std::string("key ") + key + " must be a token id below " + std::to_string(n));
        }
        return int32_t(*u);
    };
    auto bool_key = [&](const char * key, bool def) {
        const gguf::value * v = file.find(key);
        return v && v->as_bool() ? *v->as_bool() : def;
    };
    const bool spm = model_ == "llama";
    bos_ = id_key("tokenizer.ggml.bos_token_id", spm ? 1 : -1);
    eos_ = id_key("tokenizer.ggml.eos_token_id", spm ? 2 : -1);
    unk_ = id_key("tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
    add_bos_          = bool_key("tokenizer.ggml.add_bos_token", spm);
    add_eos_          = bool_key("tokenizer.ggml.add_eos_token", false);
    add_space_prefix_ = bool_key("tokenizer.ggml.add_space_prefix", spm);
    if (eos_ >= 0) {
        eog_.push_back(eos_);
    }
    const int32_t eot = id_key("tokenizer.ggml.eot_token_id", -1);
    if (eot >= 0) {
        eog_.push_back(eot);
    }
    for (const char * t : {"<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>", "<|end|>"}) {
        if (auto it = token_to_id_.find(t); it != token_to_id_.end() && types_[size_t(it->second)] == token_type::control) {
            eog_.push_back(it->second);
        }
    }
    for (size_t i = 0; i < n; ++i) {
        const token_type ty = types_[i];
        if ((ty == token_type::control || ty == token_type::user_defined || ty == token_type::unknown) &&
            !tokens_[i].empty()) {
            specials_.push_back(int32_t(i));
        }
    }
    std::stable_sort(specials_.begin(), specials_.end(),
                     [&](int32_t a, int32_t b) { return tokens_[size_t(a)].size() > tokens_[size_t(b)].size(); });
}

bool tokenizer::is_eog(int32_t id) const { return std::find(eog_.begin(), eog_.end(), id) != eog_.end(); }

int32_t tokenizer::byte_token(uint8_t b) const {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    if (auto it = token_to_id_.find(buf); it != token_to_id_.end()) {
        return it->second;
    }
    return unk_;
}

std::vector<int32_t> tokenizer::tokenize(const std::string & text, bool add_special, bool parse_special) const {
    // Split the text at special tokens, longest first (llama.cpp's tokenizer_st_partition). An empty
    // text is no fragment at all, as in llama.cpp: SentencePiece's space prefix alone is no token.
    std::vector<fragment> frags;
    if (!text.empty()) {
        frags.push_back({-1, text});
    }
    for (int32_t id : specials_) {
        const token_type ty = types_[size_t(id)];
        if (!parse_special && ty != token_type::user_defined) {
            continue;
        }
        const std::string & s = tokens_[size_t(id)];
        std::vector<fragment> next;
        for (fragment & f : frags) {
            if (f.token >= 0 || f.text.find(s) == std::string::npos) {
                next.push_back(std::move(f));
                continue;
            }
            size_t pos = 0;
            for (size_t hit; (hit = f.text.find(s, pos)) != std::string::npos; pos = hit + s.size()) {
                if (hit > pos) {
                    next.push_back({-1, f.text.substr(pos, hit - pos)});
                }
                next.push_back({id, {}});
            }
            if (pos < f.text.size()) {
                next.push_back({-1, f.text.substr(pos)});
            }
        }
        frags = std::move(next);
    }

    std::vector<int32_t> out;
    if (add_special && add_bos_ && bos_ >= 0) {
        out.push_back(bos_);
    }
    bool prev_special = true;
    for (const fragment & f : frags) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        if (model_ == "llama") {
            std::string t = f.text;
            if (add_space_prefix_ && prev_special) {
                t = " " + t;
            }
            tokenize_spm(replace_all(t, " ", kSpace), out);
        } else {
            tokenize_bpe(f.text, out);
        }
        prev_special = false;
    }
    if (add_special && add_eos_ && eos_ >= 0) {
        out.push_back(eos_);
    }
    return out;
}

// SentencePiece BPE as llama.cpp's llm_tokenizer_spm: start from UTF-8 characters, repeatedly merge
// the adjacent pair whose concatenation is the highest-scoring token (leftmost on ties), then emit
// each symbol's token, splitting symbols that are no token back along their merges, and bytes
// (<0xNN>) for what remains.
void tokenizer::tokenize_spm(const std::string & text, std::vector<int32_t> & out) const {
    struct symbol {
        int    prev, next;
        size_t start, n;
    };
    struct bigram {
        int    left, right;
        float  score;
        size_t size;
    };
    auto worse = [](const bigram & a, const bigram & b) {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::vector<symbol> sym;
    for (size_t off = 0; off < text.size();) {
        const size_t len = std::min(utf8_len(static_cast<unsigned char>(text[off])), text.size() - off);
        sym.push_back({int(sym.size()) - 1, int(sym.size()) + 1, off, len});
        off += len;
    }
    if (sym.empty()) {
        return;
    }
    sym.back().next = -1;
    std::priority_queue<bigram, std::vector<bigram>, decltype(worse)> queue(worse);
    std::unordered_map<std::string, std::pair<int, int>>            rev_merge;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) {
            return;
        }
        const std::string s  = text.substr(sym[size_t(left)].start, sym[size_t(left)].n + sym[size_t(right)].n);
        auto              it = token_to_id_.find(s);
        if (it == token_to_id_.end()) {
            return;
        }
        queue.push({left, right, scores_[size_t(it->second)], s.size()});
        rev_merge[s] = {left, right};
    };
    for (int i = 1; i < int(sym.size()); ++i) {
        try_add(i - 1, i);
    }
    while (!queue.empty()) {
        const bigram b = queue.top();
        queue.pop();
        symbol & l = sym[size_t(b.left)];
        symbol & r = sym[size_t(b.right)];
        if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) {
            continue;  // outdated
        }
        l.n += r.n;
        r.n    = 0;
        l.next = r.next;
        if (r.next >= 0) {
            sym[size_t(r.next)].prev = b.left;
        }
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }
    auto resegment = [&](auto & self, const symbol & s) -> void {
        const std::string t = text.substr(s.start, s.n);
        if (auto it = token_to_id_.find(t); it != token_to_id_.end()) {
            out.push_back(it->second);
            return;
        }
        auto p = rev_merge.find(t);
        if (p == rev_merge.end()) {
            for (unsigned char c : t) {
                out.push_back(byte_token(c));
            }
            return;
        }
        self(self, sym[size_t(p->second.first)]);
        self(self, sym[size_t(p->second.second)]);
    };
    for (int i = 0; i >= 0; i = sym[size_t(i)].next) {
        resegment(resegment, sym[size_t(i)]);
    }
}

std::string tokenizer::token_to_piece(int32_t id, bool special) const {
    if (id < 0 || id >= n_vocab()) {
        return {};
    }
    const std::string & t = tokens_[size_t(id)];
    switch (types_[size_t(id)]) {
        case token_type::control: return special ? t : std::string();
        case token_type::unknown: return special ? t : std::string("\xE2\x96\x85");
        case token_type::user_defined: return t;
        case token_type::byte:
            if (model_ == "llama" && t.size() == 6 && t.starts_with("<0x")) {
                return std::string(1, char(std::stoi(t.substr(3, 2), nullptr, 16)));
            }
            [[fallthrough]];
        default:
            if (model_ == "llama") {
                return replace_all(t, kSpace, " ");
            }
            return bpe_decode(t);
    }
}

std::string tokenizer::detokenize(const std::vector<int32_t> & ids, bool special) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string p = token_to_piece(ids[i], special);
        // SentencePiece's prefix space comes off the first word again.
        if (model_ == "llama" && add_space_prefix_ && !p.empty() && p[0] == ' ' &&
            (out.empty() && (i == 0 || (i == 1 && ids[0] == bos_)))) {
            p.erase(0, 1);
        }
        out += p;
    }
    return out;
}

} // namespace hexnpu::model
