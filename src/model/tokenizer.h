// Tokenizers from GGUF metadata (tokenizer.ggml.*), as llama.cpp's: SentencePiece-style
// (model "llama": score-driven bigram merges, byte fallback <0xNN>, add_space_prefix) and GPT-2
// byte-level BPE (model "gpt2": merges ranked by order, the pre-tokenizer regex chosen by
// tokenizer.ggml.pre). Special tokens (control, user-defined) are matched in the text first.
// Needs only the tokenizer metadata, so vocab-only GGUF files work.
#pragma once

#include "hexnpu/gguf.h"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hexnpu::model {

// tokenizer.ggml.token_type values.
enum class token_type : int32_t { undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class tokenizer {
  public:
    // Throws model_error when a key is missing or inconsistent.
    explicit tokenizer(const gguf::reader & file);

    // add_special: BOS (and EOS) as the model's flags say; parse_special: control tokens written in
    // the text ("<bos>", "<start_of_turn>") become those tokens (user-defined ones always do).
    std::vector<int32_t> tokenize(const std::string & text, bool add_special, bool parse_special) const;
    // The text of one token (special: control tokens' own text, else nothing).
    std::string          token_to_piece(int32_t id, bool special = false) const;
    std::string          detokenize(const std::vector<int32_t> & ids, bool special = false) const;
    // GPT-2 BPE only: the words the pre-tokenizer regex cuts the text into (no special tokens).
    std::vector<std::string> pre_tokenize(const std::string & text) const;

    int32_t            n_vocab() const { return int32_t(tokens_.size()); }
    int32_t            bos() const { return bos_; }
    int32_t            eos() const { return eos_; }
    bool               is_eog(int32_t id) const;  // end of generation (EOS, EOT, <end_of_turn> ...)
    const std::string & text(int32_t id) const { return tokens_[size_t(id)]; }
    token_type         type(int32_t id) const { return types_[size_t(id)]; }
    const std::string & model_name() const { return model_; }
    bool               add_bos() const { return add_bos_; }

  private:
    void tokenize_spm(const std::string & text, std::vector<int32_t> & out) const;
    void tokenize_bpe(const std::string & text, std::vector<int32_t> & out) const;
    void split_words(const std::string & text, const std::function<void(const std::string &)> & fn) const;
    int32_t byte_token(uint8_t b) const;
    static std::string bpe_decode(const std::string & token);  // byte-level BPE text -> bytes

    std::string                              model_;  // "llama" or "gpt2"
    std::string                              pre_;
    std::vector<std::string>                 tokens_;
    std::vector<float>                       scores_;
    std::vector<token_type>                  types_;
    std::unordered_map<std::string, int32_t> token_to_id_;
    std::unordered_map<std::string, int>     bpe_ranks_;  // "left right" -> rank
    std::vector<int32_t>                     specials_;   // longest text first
    std::vector<int32_t>                     eog_;
    int32_t bos_ = -1, eos_ = -1, unk_ = -1;
    bool    add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
};

} // namespace hexnpu::model
