// GPT-2 byte-level BPE: bytes mapped to printable code points (GPT-2's bytes_to_unicode), the text
// split by the pre-tokenizer, then each word merged by rank.
#include "model/model.h"
#include "model/tokenizer.h"

#include <cctype>
#include <functional>
#include <string>
#include <vector>

namespace hexnpu::model {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the rest to U+0100 ...
uint32_t byte_to_cp(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) {
        return b;
    }
    int n = 0;
    for (int c = 0; c < b; ++c) {
        if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE))) {
            ++n;
        }
    }
    return 0x100 + uint32_t(n);
}

void append_utf8(std::string & s, uint32_t cp) {
    if (cp < 0x80) {
        s += char(cp);
    } else if (cp < 0x800) {
        s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += char(0xE0 | (cp >> 12)), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
    } else {
        s += char(0xF0 | (cp >> 18)), s += char(0x80 | ((cp >> 12) & 0x3F)), s += char(0x80 | ((cp >> 6) & 0x3F)),
            s += char(0x80 | (cp & 0x3F));
    }
}

} // namespace

std::string tokenizer::bpe_decode(const std::string & token) {
    static const auto inverse = [] {
        std::vector<int> inv(0x200, -1);
        for (int b = 0; b < 256; ++b) {
            inv[byte_to_cp(uint8_t(b))] = b;
        }
        return inv;
    }();
    std::string out;
    for (size_t i = 0; i < token.size();) {
        const unsigned char c  = static_cast<unsigned char>(token[i]);
        uint32_t            cp = c;
        size_t              len = 1;
        if ((c & 0xE0) == 0xC0 && i + 1 < token.size()) {
            cp = ((c & 0x1F) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3F), len = 2;
        } else if ((c & 0xF0) == 0xE0 || (c & 0xF8) == 0xF0) {
            len = (c & 0xF0) == 0xE0 ? 3 : 4;
            out.append(token, i, len);  // outside the byte map: kept as it is
            i += len;
            continue;
        }
        if (cp < inverse.size() && inverse[cp] >= 0) {
            out += char(inverse[cp]);
        } else {
            append_utf8(out, cp);
        }
        i += len;
    }
    return out;
}

namespace {

std::vector<uint32_t> decode_utf8(const std::string & s, std::vector<size_t> & offs) {
    std::vector<uint32_t> cps;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c   = static_cast<unsigned char>(s[i]);
        size_t              len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        if (i + len > s.size()) {
            len = 1;
        }
        uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
        for (size_t k = 1; k < len; ++k) {
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        }
        offs.push_back(i);
        cps.push_back(cp);
        i += len;
    }
    offs.push_back(s.size());
    return cps;
}

bool in(uint32_t c, uint32_t a, uint32_t b) { return c >= a && c <= b; }

bool is_space(uint32_t c) {
    return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680 || in(c, 0x2000, 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_number(uint32_t c) {
    return in(c, '0', '9') || c == 0xB2 || c == 0xB3 || c == 0xB9 || in(c, 0xBC, 0xBE) || in(c, 0x660, 0x669) ||
           in(c, 0x6F0, 0x6F9) || in(c, 0x966, 0x96F) || in(c, 0x2070, 0x2079) || in(c, 0x2080, 0x2089) ||
           in(c, 0x2150, 0x2189) || in(c, 0x2460, 0x249B) || in(c, 0x24EA, 0x24FF) || in(c, 0x3007, 0x3007) ||
           in(c, 0x3021, 0x3029) || in(c, 0xFF10, 0xFF19) || in(c, 0x9E6, 0x9EF) || in(c, 0xA66, 0xA6F) ||
           in(c, 0xAE6, 0xAEF) || in(c, 0xB66, 0xB6F) || in(c, 0xBE6, 0xBF2) || in(c, 0xC66, 0xC6F) ||
           in(c, 0xCE6, 0xCEF) || in(c, 0xD66, 0xD78) || in(c, 0xE50, 0xE59) || in(c, 0xED0, 0xED9) ||
           in(c, 0xF20, 0xF33) || in(c, 0x1040, 0x1049) || in(c, 0x17E0, 0x17E9) || in(c, 0x1810, 0x1819);
}

// Letters: ASCII letters, and outside ASCII every code point that is not a space, a number, a
// combining mark, punctuation or a symbol in the ranges below (an approximation of \p{L} that is
// exact for Latin, Greek, Cyrillic, CJK and kana; other scripts' marks may differ from ICU).
bool is_letter(uint32_t c) {
    if (c < 0x80) {
        return in(c, 'a', 'z') || in(c, 'A', 'Z');
    }
    if (is_space(c) || is_number(c)) {
        return false;
    }
    if (c < 0xC0) {
        return c == 0xAA || c == 0xB5 || c == 0xBA;
    }
    if (c == 0xD7 || c == 0xF7 || in(c, 0x2B9, 0x2FF) || in(c, 0x300, 0x36F) || in(c, 0x483, 0x489) ||
        in(c, 0x591, 0x5C7) || in(c, 0x5F3, 0x5F4) || in(c, 0x600, 0x61F) || in(c, 0x64B, 0x65F) ||
        in(c, 0x900, 0x903) || in(c, 0x93A, 0x93C) || in(c, 0x93E, 0x94F) || in(c, 0x951, 0x957) ||
        in(c, 0x962, 0x965) || c == 0x970 || in(c, 0x981, 0x983) || c == 0x9BC || in(c, 0x9BE, 0x9CD) ||
        c == 0x9D7 || in(c, 0x9E2, 0x9E3) || in(c, 0xA01, 0xA03) || in(c, 0xA3C, 0xA51) || in(c, 0xA70, 0xA71) ||
        c == 0xA75 || in(c, 0xA81, 0xA83) || c == 0xABC || in(c, 0xABE, 0xACD) || in(c, 0xB01, 0xB03) ||
        c == 0xB3C || in(c, 0xB3E, 0xB57) || c == 0xB82 || in(c, 0xBBE, 0xBCD) || c == 0xBD7 ||
        in(c, 0xC00, 0xC04) || in(c, 0xC3E, 0xC56) || in(c, 0xC81, 0xC83) || c == 0xCBC || in(c, 0xCBE, 0xCD6) ||
        in(c, 0xD00, 0xD03) || in(c, 0xD3B, 0xD3C) || in(c, 0xD3E, 0xD4D) || c == 0xD57 || c == 0xE31 ||
        in(c, 0xE34, 0xE3F) || in(c, 0xE47, 0xE4F) || in(c, 0xE5A, 0xE5B) || c == 0xEB1 || in(c, 0xEB4, 0xEBC) ||
        in(c, 0xEC8, 0xECD) || in(c, 0xF01, 0xF1F) || in(c, 0xF34, 0xF3F) || in(c, 0xF71, 0xF87) ||
        in(c, 0xF8D, 0xFBC) || in(c, 0x102B, 0x103E) || in(c, 0x1056, 0x1059) || in(c, 0x17B4, 0x17D3) ||
        in(c, 0x1AB0, 0x1AFF) || in(c, 0x1DC0, 0x1DFF) ||
        in(c, 0x2000, 0x206F) || in(c, 0x20A0, 0x20FF) || in(c, 0x2100, 0x214F) || in(c, 0x2190, 0x2BFF) ||
        in(c, 0x2E00, 0x2E7F) || in(c, 0x3000, 0x3004) || in(c, 0x3008, 0x3020) || in(c, 0x3030, 0x3030) ||
        in(c, 0x303D, 0x303F) || in(c, 0x3099, 0x309C) || c == 0x30A0 || c == 0x30FB || in(c, 0xE000, 0xF8FF) ||
        in(c, 0xFE00, 0xFE6F) || in(c, 0xFF01, 0xFF0F) || in(c, 0xFF1A, 0xFF20) || in(c, 0xFF3B, 0xFF40) ||
        in(c, 0xFF5B, 0xFF65) || in(c, 0xFFF0, 0xFFFF) || in(c, 0x1F000, 0x1FAFF) || in(c, 0xE0000, 0xE007F)) {
        return false;
    }
    return true;
}

enum class pre_kind { gpt2, llama3, qwen2 };

// Length (code points) of the pre-tokenizer regex's match at i; always >= 1.
size_t match_at(const std::vector<uint32_t> & c, size_t i, pre_kind kind) {
    const size_t n     = c.size();
    auto         L     = [&](size_t k) { return k < n && is_letter(c[k]); };
    auto         N     = [&](size_t k) { return k < n && is_number(c[k]); };
    auto         S     = [&](size_t k) { return k < n && is_space(c[k]); };
    auto         other = [&](size_t k) { return k < n && !is_space(c[k]) && !is_letter(c[k]) && !is_number(c[k]); };
    auto         nl    = [&](size_t k) { return k < n && (c[k] == '\r' || c[k] == '\n'); };
    auto         lower = [&](size_t k) { return k < n ? (c[k] < 0x80 ? uint32_t(std::tolower(int(c[k]))) : c[k]) : 0u; };
    const bool   ci    = kind != pre_kind::gpt2;
    // Contractions.
    if (c[i] == '\'' && i + 1 < n) {
        const uint32_t a = ci ? lower(i + 1) : c[i + 1];
        const uint32_t b = i + 2 < n ? (ci ? lower(i + 2) : c[i + 2]) : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') {
            return 2;
        }
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
            return 3;
        }
    }
    size_t k = i;
    if (kind == pre_kind::gpt2) {
        // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
        const size_t j = c[i] == ' ' ? i + 1 : i;
        for (auto cls : {0, 1, 2}) {
            auto is = [&](size_t x) { return cls == 0 ? L(x) : cls == 1 ? N(x) : other(x); };
            if (is(j)) {
                k = j;
                while (is(k)) {
                    ++k;
                }
                return k - i;
            }
        }
    } else {
        // '[^\r\n\p{L}\p{N}]?\p{L}+'
        if (L(i)) {
            for (k = i; L(k); ++k) {
            }
            return k - i;
        }
        if (!nl(i) && !L(i) && !N(i) && L(i + 1)) {
            for (k = i + 1; L(k); ++k) {
            }
            return k - i;
        }
        // '\p{N}{1,3}' (llama3) or '\p{N}' (qwen2)
        if (N(i)) {
            const size_t max = kind == pre_kind::llama3 ? 3 : 1;
            for (k = i; N(k) && k - i < max; ++k) {
            }
            return k - i;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        const size_t j = c[i] == ' ' ? i + 1 : i;
        if (other(j)) {
            for (k = j; other(k); ++k) {
            }
            while (nl(k)) {
                ++k;
            }
            return k - i;
        }
        // '\s*[\r\n]+': up to the last newline of the whitespace run
        if (S(i)) {
            size_t end = i, last_nl = n;
            for (; S(end); ++end) {
                if (nl(end)) {
                    last_nl = end;
                }
            }
            if (last_nl != n) {
                return last_nl + 1 - i;
            }
        }
    }
    // '\s+(?!\S)' then '\s+'
    if (S(i)) {
        for (k = i; S(k); ++k) {
        }
        if (k < n && k - i > 1) {
            return k - 1 - i;  // leave the last space to the next word
        }
        return k - i;
    }
    return 1;  // not reached for well-formed classes; one code point
}

} // namespace

std::vector<std::string> tokenizer::pre_tokenize(const std::string & text) const {
    if (model_ != "gpt2") {
        throw model_error("pre_tokenize: only the gpt2 tokenizer has a pre-tokenizer");
    }
    std::vector<std::string> words;
    split_words(text, [&](const std::string & w) { words.push_back(w); });
    return words;
}

void tokenizer::split_words(const std::string & text, const std::function<void(const std::string &)> & fn) const {
    pre_kind kind = pre_kind::gpt2;
    if (pre_.empty() || pre_ == "default" || pre_ == "gpt2" || pre_ == "gpt-2") {
        kind = pre_kind::gpt2;
    } else if (pre_ == "llama-bpe" || pre_ == "llama3" || pre_ == "smaug-bpe") {
        kind = pre_kind::llama3;
    } else if (pre_ == "qwen2") {
        kind = pre_kind::qwen2;
    } else {
        throw model_error("unsupported tokenizer.ggml.pre '" + pre_ + "' (supported: default, gpt2, llama-bpe, llama3, qwen2)");
    }
    std::vector<size_t>         offs;
    const std::vector<uint32_t> cps = decode_utf8(text, offs);
    for (size_t i = 0; i < cps.size();) {
        const size_t len = match_at(cps, i, kind);
        fn(text.substr(offs[i], offs[i + len] - offs[i]));
        i += len;
    }
}

void tokenizer::tokenize_bpe(const std::string & text, std::vector<int32_t> & out) const {
    const bool ignore_merges = pre_ == "llama-bpe" || pre_ == "llama3" || pre_ == "smaug-bpe";
    split_words(text, [&](const std::string & word) {
        // Bytes -> GPT-2's printable code points, one symbol per byte.
        std::vector<std::string> sym;
        std::string              mapped;
        for (unsigned char b : word) {
            std::string s;
            append_utf8(s, byte_to_cp(b));
            mapped += s;
            sym.push_back(std::move(s));
        }
        if (ignore_merges) {  // llama.cpp's ignore_merges (llama3): a word that is a token stays whole
            if (auto it = token_to_id_.find(mapped); it != token_to_id_.end()) {
                out.push_back(it->second);
                return;
            }
        }
        // Merge the lowest-ranked adjacent pair (leftmost on ties) until none is in the merges.
        while (sym.size() > 1) {
            int    best_rank = -1;
            size_t best      = 0;
            for (size_t k = 0; k + 1 < sym.size(); ++k) {
                auto it = bpe_ranks_.find(sym[k] + " " + sym[k + 1]);
                if (it != bpe_ranks_.end() && (best_rank < 0 || it->second < best_rank)) {
                    best_rank = it->second, best = k;
                }
            }
            if (best_rank < 0) {
                break;
            }
            sym[best] += sym[best + 1];
            sym.erase(sym.begin() + ptrdiff_t(best) + 1);
        }
        for (const std::string & s : sym) {
            if (auto it = token_to_id_.find(s); it != token_to_id_.end()) {
                out.push_back(it->second);
                continue;
            }
            // Not a token: its single-byte symbols (each byte's code point), else unknown.
            std::vector<size_t>   o2;
            const auto            sub = decode_utf8(s, o2);
            for (size_t k = 0; k < sub.size(); ++k) {
                auto it = token_to_id_.find(s.substr(o2[k], o2[k + 1] - o2[k]));
                if (it != token_to_id_.end()) {
                    out.push_back(it->second);
                } else if (unk_ >= 0) {
                    out.push_back(unk_);
                }
            }
        }
    });
}

} // namespace hexnpu::model
