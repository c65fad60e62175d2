"""The GPT-2 BPE pre-tokenizers against an independent oracle: Python's `regex` module running
llama.cpp's regex strings for tokenizer.ggml.pre = default (gpt2), llama-bpe (llama3) and qwen2,
on English, code, numbers, whitespace runs, contractions and several scripts. Then a whole BPE
tokenization against a small reference BPE in Python over a synthesized vocabulary."""

import json

import pytest
from gguf import GGUFWriter

regex = pytest.importorskip("regex", reason="the `regex` module (pip install regex; scripts/fetch-model.sh installs it)")

REGEXES = {
    "default": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "llama-bpe": r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
             r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}

TEXTS = [
    "Hello world! It's 2024, isn't it? I'LL BE THERE, you'RE right.",
    "def f(x):\n    return x**2  # square\n\n\n\tprint(f(12345678))",
    "   leading and trailing spaces   ",
    "a  b   c\n \n d\r\n\r\ne",
    "Grüße aus München! Ça coûte 3,50 € — naïve café.",
    "Привет, мир! Ελληνικά γράμματα. 東京は日本の首都です。カタカナ ひらがな",
    "emoji 🙂🙂 and symbols ©®™ ±×÷ → ← ∑∫ and “quotes” ‘single’",
    "numbers 1 12 123 1234 12345 3.14159 -42 1e10 ٣٤٥ १२३",
    "mixed123abc abc123 123abc ___init___ foo.bar(baz)",
    "नमस्ते दुनिया १२३ | สวัสดีครับ ๑๒๓ ฿ | বাংলা ভাষা | தமிழ் மொழி | മലയാളം | မြန်မာ | ខ្មែរ | བོད་ཡིག",
    "مرحبا بالعالم | שָׁלוֹם | 안녕하세요 세계 | Tiếng Việt có dấu | a\u00a0b\u2003c x\u200by",
]

BYTE_PRINTABLE = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]


def byte_symbol(b):
    if b in BYTE_PRINTABLE:
        return chr(b)
    return chr(0x100 + sum(1 for c in range(b) if c not in BYTE_PRINTABLE))


def write_vocab(path, pre, tokens, merges):
    w = GGUFWriter(str(path), "llama")
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", pre)
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.merges", merges)
    w.add_array("tokenizer.ggml.token_type", [1] * len(tokens))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.mark.parametrize("pre", list(REGEXES))
def test_pre_tokenizer_matches_regex(run, tmp_path, pre):
    path = tmp_path / "vocab.gguf"
    write_vocab(path, pre, [byte_symbol(b) for b in range(256)] + [byte_symbol(32) + "t"], [byte_symbol(32) + " t"])
    for text in TEXTS:
        got = [json.loads(line) for line in run("tokenize", "-m", path, "-p", text, "--pretokens").stdout.splitlines()]
        want = regex.findall(REGEXES[pre], text)
        assert got == want, f"{pre}: {text!r}"


def reference_bpe(words, ranks, vocab):
    out = []
    for w in words:
        sym = [byte_symbol(b) for b in w.encode()]
        while len(sym) > 1:
            pairs = [(ranks.get(sym[i] + " " + sym[i + 1]), i) for i in range(len(sym) - 1)]
            pairs = [(r, i) for r, i in pairs if r is not None]
            if not pairs:
                break
            _, i = min(pairs)
            sym[i:i + 2] = [sym[i] + sym[i + 1]]
        out += [vocab[s] for s in sym]
    return out


def test_bpe_matches_reference(run, tmp_path):
    """Merges learnt greedily from the texts (the most frequent pair first), then tokenized."""
    text = " ".join(TEXTS)
    words = [[byte_symbol(b) for b in w.encode()] for w in regex.findall(REGEXES["default"], text)]
    tokens = [byte_symbol(b) for b in range(256)]
    merges = []
    for _ in range(150):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        (a, b), _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    path = tmp_path / "bpe.gguf"
    write_vocab(path, "default", tokens, merges)
    vocab = {t: i for i, t in enumerate(tokens)}
    ranks = {m: i for i, m in enumerate(merges)}
    for t in TEXTS + ["unseen words like zebra and quixotic 9876"]:
        got = [int(x) for x in run("tokenize", "-m", path, "-p", t, "--ids").stdout.strip().strip("[]").split(",")]
        want = reference_bpe(regex.findall(REGEXES["default"], t), ranks, vocab)
        assert got == want, t
