// The SentencePiece-style tokenizer on a small hand-made vocabulary whose merges are worked out by
// hand below (llama.cpp's algorithm: merge the highest-scoring adjacent pair, leftmost on ties;
// symbols that are no token split back along their merges; bytes for the rest), special tokens,
// byte fallback and detokenization round trips.
#include "model/model.h"
#include "model/tokenizer.h"

#include "hexnpu/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace hexnpu;
using model::tokenizer;

namespace {

const std::string S = "\xE2\x96\x81";  // U+2581

struct vocab {
    std::vector<std::string> tokens;
    std::vector<float>       scores;
    std::vector<int32_t>     types;
    int32_t add(const std::string & t, float score, int32_t type = 1) {
        tokens.push_back(t), scores.push_back(score), types.push_back(type);
        return int32_t(tokens.size() - 1);
    }
};

struct fixture {
    std::vector<uint8_t> bytes;
    gguf::reader         reader;
    tokenizer            tok;
    explicit fixture(const vocab & v, bool add_space_prefix, const std::string & model = "llama")
        : bytes(make(v, add_space_prefix, model)), reader(gguf::reader::from_memory(bytes.data(), bytes.size())),
          tok(reader) {}

    static std::vector<uint8_t> make(const vocab & v, bool add_space_prefix, const std::string & model) {
        gguf::writer w;
        w.set("general.architecture", gguf::value::from_string("llama"));
        w.set("tokenizer.ggml.model", gguf::value::from_string(model));
        w.set("tokenizer.ggml.tokens", gguf::value::from_strings(v.tokens));
        std::vector<uint8_t> s(v.scores.size() * 4), t(v.types.size() * 4);
        std::memcpy(s.data(), v.scores.data(), s.size());
        std::memcpy(t.data(), v.types.data(), t.size());
        w.set("tokenizer.ggml.scores", gguf::value::from_array(gguf::value_type::FLOAT32, v.scores.size(), s));
        w.set("tokenizer.ggml.token_type", gguf::value::from_array(gguf::value_type::INT32, v.types.size(), t));
        w.set("tokenizer.ggml.bos_token_id", gguf::value::from_u32(1));
        w.set("tokenizer.ggml.eos_token_id", gguf::value::from_u32(2));
        w.set("tokenizer.ggml.add_space_prefix", gguf::value::from_bool(add_space_prefix));
        return w.write_to_memory();
    }
};

// ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the pieces.
struct spm_vocab : vocab {
    int32_t sp, a, b, c, ab, bc, sp_a, abc, sp_ab, nl2, ctl;
    spm_vocab() {
        add("<unk>", 0, 2);
        add("<s>", 0, 3);
        add("</s>", 0, 3);
        for (int i = 0; i < 256; ++i) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", i);
            add(buf, 0, 6);
        }
        sp    = add(S, -5);
        a     = add("a", -10);
        b     = add("b", -10);
        c     = add("c", -10);
        ab    = add("ab", -1);
        bc    = add("bc", -0.5f);
        sp_a  = add(S + "a", -2);
        abc   = add("abc", -0.1f);
        sp_ab = add(S + "ab", -3);
        nl2   = add("\n\n", 0, 4);            // user-defined: always matched
        ctl   = add("<start_of_turn>", 0, 3);  // control: matched when parsing specials
    }
};

int32_t byte_id(uint8_t b) { return 3 + b; }

} // namespace

TEST(SpmTokenizer, MergesByScoreAsWorkedByHand) {
    spm_vocab v;
    fixture   f(v, false);
    // a b c: pairs ab (-1), bc (-0.5) -> bc first; then a+bc = abc (-0.1) -> one token.
    EXPECT_EQ(f.tok.tokenize("abc", false, true), (std::vector<int32_t>{v.abc}));
    // a b ▁ c: only ab is a token: [ab, ▁, c].
    EXPECT_EQ(f.tok.tokenize("ab c", false, true), (std::vector<int32_t>{v.ab, v.sp, v.c}));
    // ▁ a b: ▁a (-2) and ab (-1): ab first, then ▁+ab = ▁ab (-3): one token.
    EXPECT_EQ(f.tok.tokenize(" ab", false, true), (std::vector<int32_t>{v.sp_ab}));
    // BOS is added when asked.
    EXPECT_EQ(f.tok.tokenize("abc", true, true), (std::vector<int32_t>{1, v.abc}));
}

TEST(SpmTokenizer, SpacePrefix) {
    spm_vocab v;
    fixture   f(v, true);
    // ▁ a b c: bc, then abc; ▁+abc is no token: [▁, abc].
    EXPECT_EQ(f.tok.tokenize("abc", false, true), (std::vector<int32_t>{v.sp, v.abc}));
    // The prefix space comes off again on decoding.
    EXPECT_EQ(f.tok.detokenize(f.tok.tokenize("abc", true, true)), "abc");
}

TEST(SpmTokenizer, AnEmptyTextIsNoTokens) {
    // Issue 29: llama.cpp gives [] (ggml-vocab-llama-spm's empty case), not the space prefix's token.
    spm_vocab v;
    fixture   f(v, true);
    EXPECT_EQ(f.tok.tokenize("", false, true), (std::vector<int32_t>{}));
    EXPECT_EQ(f.tok.tokenize("", true, true), (std::vector<int32_t>{1})) << "BOS alone when asked for";
    EXPECT_EQ(f.tok.tokenize(" ", false, true), (std::vector<int32_t>{v.sp, v.sp})) << "a space is text";
}

TEST(SpmTokenizer, ByteFallback) {
    spm_vocab v;
    fixture   f(v, false);
    // é is C3 A9 and no token: its bytes.
    EXPECT_EQ(f.tok.tokenize("a\xC3\xA9", false, true), (std::vector<int32_t>{v.a, byte_id(0xC3), byte_id(0xA9)}));
    // A 4-byte emoji, a tab.
    EXPECT_EQ(f.tok.tokenize("\xF0\x9F\x99\x82\t", false, true),
              (std::vector<int32_t>{byte_id(0xF0), byte_id(0x9F), byte_id(0x99), byte_id(0x82), byte_id(0x09)}));
    EXPECT_EQ(f.tok.detokenize(f.tok.tokenize("a\xC3\xA9 \xF0\x9F\x99\x82\tabc", false, true)),
              "a\xC3\xA9 \xF0\x9F\x99\x82\tabc");
}

TEST(SpmTokenizer, SpecialTokens) {
    spm_vocab v;
    fixture   f(v, false);
    // Control tokens only when parsing specials; user-defined ones always.
    EXPECT_EQ(f.tok.tokenize("<start_of_turn>ab", false, true), (std::vector<int32_t>{v.ctl, v.ab}));
    const auto raw = f.tok.tokenize("<start_of_turn>", false, false);
    // < s t a r t _ o f _ t u r n >: 'a' is a piece, the other 14 characters are bytes.
    ASSERT_EQ(raw.size(), 15u);
    EXPECT_EQ(raw[0], byte_id('<'));
    EXPECT_EQ(raw[3], v.a);
    EXPECT_EQ(f.tok.tokenize("ab\n\nc", false, false), (std::vector<int32_t>{v.ab, v.nl2, v.c}));
    EXPECT_EQ(f.tok.tokenize("<s>", false, true), (std::vector<int32_t>{1}));
    // Control tokens decode to nothing unless asked for.
    EXPECT_EQ(f.tok.detokenize({1, v.ctl, v.ab}), "ab");
    EXPECT_EQ(f.tok.detokenize({1, v.ctl, v.ab}, true), "<s><start_of_turn>ab");
}

TEST(SpmTokenizer, MissingKeysAreNamed) {
    gguf::writer w;
    w.set("tokenizer.ggml.model", gguf::value::from_string("llama"));
    const auto bytes = w.write_to_memory();
    const auto r     = gguf::reader::from_memory(bytes.data(), bytes.size());
    try {
        tokenizer t(r);
        FAIL() << "no error";
    } catch (const model::model_error & e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.tokens"), std::string::npos) << e.what();
    }
    gguf::writer w2;
    w2.set("tokenizer.ggml.model", gguf::value::from_string("wordpiece"));
    const auto b2 = w2.write_to_memory();
    const auto r2 = gguf::reader::from_memory(b2.data(), b2.size());
    EXPECT_THROW(tokenizer t(r2), model::model_error);
}

// ---- GPT-2 byte-level BPE ---------------------------------------------------------------------

namespace {

// GPT-2's bytes_to_unicode, written out independently of the tokenizer: printable Latin-1 bytes
// keep their code point, the others get U+0100 + their rank among the non-printable ones.
std::string byte_symbol(int b) {
    auto printable = [](int c) { return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE; };
    int  cp        = b;
    if (!printable(b)) {
        cp = 0x100;
        for (int c = 0; c < b; ++c) {
            cp += printable(c) ? 0 : 1;
        }
    }
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else {
        s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

struct bpe_fixture {
    std::vector<uint8_t> bytes;
    gguf::reader         reader;
    tokenizer            tok;
    static std::vector<std::string> merges() {
        const std::string G = byte_symbol(' '), C = byte_symbol('\n');
        return {"h e", "l l", "he ll", G + " w", "hell o", "3 4", "1 2", G + " " + G, C + " " + C, "' S"};
    }
    static std::vector<uint8_t> make(const std::string & pre) {
        std::vector<std::string> toks;
        for (int b = 0; b < 256; ++b) {
            toks.push_back(byte_symbol(b));  // id b: byte b
        }
        for (const std::string & m : merges()) {
            std::string t = m;
            t.erase(t.find(' '), 1);
            toks.push_back(t);  // ids 256...: the merge results in rank order
        }
        toks.push_back("xyz");  // 266: a token no merge makes
        toks.push_back("<|endoftext|>");  // 267
        std::vector<uint8_t> types(toks.size() * 4, 0);
        for (size_t i = 0; i < toks.size(); ++i) {
            const int32_t t = i == 267 ? 3 : 1;
            std::memcpy(types.data() + i * 4, &t, 4);
        }
        gguf::writer w;
        w.set("tokenizer.ggml.model", gguf::value::from_string("gpt2"));
        w.set("tokenizer.ggml.pre", gguf::value::from_string(pre));
        w.set("tokenizer.ggml.tokens", gguf::value::from_strings(toks));
        w.set("tokenizer.ggml.token_type", gguf::value::from_array(gguf::value_type::INT32, toks.size(), types));
        w.set("tokenizer.ggml.merges", gguf::value::from_strings(merges()));
        w.set("tokenizer.ggml.bos_token_id", gguf::value::from_u32(267));
        w.set("tokenizer.ggml.eos_token_id", gguf::value::from_u32(267));
        return w.write_to_memory();
    }
    explicit bpe_fixture(const std::string & pre)
        : bytes(make(pre)), reader(gguf::reader::from_memory(bytes.data(), bytes.size())), tok(reader) {}
    std::vector<int32_t> operator()(const std::string & s) const { return tok.tokenize(s, false, true); }
};

enum : int32_t { HE = 256, LL, HELL, GW, HELLO, T34, T12, GG, CC, QS, XYZ, EOT };

} // namespace

TEST(BpeTokenizer, MergesByRankAsWorkedByHand) {
    bpe_fixture f("default");
    // "hello": he (0), ll (1), hell (2), hello (4); " world": Ġw (3), then single bytes.
    EXPECT_EQ(f("hello world"), (std::vector<int32_t>{HELLO, GW, 'o', 'r', 'l', 'd'}));
    EXPECT_EQ(f.tok.detokenize(f("hello world")), "hello world");
    EXPECT_EQ(f("<|endoftext|>hello"), (std::vector<int32_t>{EOT, HELLO}));
}

TEST(BpeTokenizer, PreTokenizerRegexes) {
    bpe_fixture gpt2("default"), llama3("llama-bpe"), qwen2("qwen2");
    // Digits: one word for gpt2 (34 first, then 12); groups of three for llama3 (123|45); single for qwen2.
    EXPECT_EQ(gpt2("12345"), (std::vector<int32_t>{T12, T34, '5'}));
    EXPECT_EQ(llama3("12345"), (std::vector<int32_t>{T12, '3', '4', '5'}));
    EXPECT_EQ(qwen2("12345"), (std::vector<int32_t>{'1', '2', '3', '4', '5'}));
    // \s+(?!\S): of two spaces before a word, the last goes with the word, so ĠĠ never forms.
    EXPECT_EQ(gpt2("a  b"), (std::vector<int32_t>{'a', ' ', ' ', 'b'}));
    EXPECT_EQ(gpt2("a  "), (std::vector<int32_t>{'a', GG}));  // at the end both stay together
    // Newlines: llama3's \s*[\r\n]+ keeps them together; gpt2 splits before the word.
    EXPECT_EQ(llama3("a\n\nb"), (std::vector<int32_t>{'a', CC, 'b'}));
    EXPECT_EQ(gpt2("a\n\nb"), (std::vector<int32_t>{'a', '\n', '\n', 'b'}));
    // Contractions: case-insensitive for llama3 only.
    EXPECT_EQ(llama3("IT'S"), (std::vector<int32_t>{'I', 'T', QS}));
    EXPECT_EQ(gpt2("IT'S"), (std::vector<int32_t>{'I', 'T', '\'', 'S'}));
    // llama3 ignores merges for a word that is a token.
    EXPECT_EQ(llama3("xyz"), (std::vector<int32_t>{XYZ}));
    EXPECT_EQ(gpt2("xyz"), (std::vector<int32_t>{'x', 'y', 'z'}));
}

TEST(BpeTokenizer, BytesRoundTrip) {
    bpe_fixture f("llama-bpe");
    const std::string text = "Gr\xC3\xBC\xC3\x9F" "e \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x99\x82\t\r\n x";
    const auto        ids  = f(text);
    EXPECT_EQ(f.tok.detokenize(ids), text);
    // é (C3 A9) is two byte tokens.
    EXPECT_EQ(f("\xC3\xA9"), (std::vector<int32_t>{0xC3, 0xA9}));
}

TEST(BpeTokenizer, UnknownPreTokenizerIsNamed) {
    bpe_fixture f("mystery");
    try {
        f("abc");
        FAIL() << "no error";
    } catch (const model::model_error & e) {
        EXPECT_NE(std::string(e.what()).find("'mystery'"), std::string::npos) << e.what();
    }
}
