// GPT-2 byte-level BPE: bytes mapped to printable code points (GPT-2's bytes_to_unicode), the text
// split by the pre-tokenizer, then each word merged by rank.
#include "model/model.h"
#include "model/tokenizer.h"

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

void tokenizer::tokenize_bpe(const std::string &, std::vector<int32_t> &) const {
    throw model_error("the gpt2 (BPE) tokenizer is not implemented yet");
}

} // namespace hexnpu::model
