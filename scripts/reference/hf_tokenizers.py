#!/usr/bin/env python3
"""Reference fixtures for gtpo's Hugging Face tokenizer.json support (tests/data/test_hf_tokenizers.cpp).

Trains, with the `tokenizers` library itself (0.20.x), small BPE tokenizers in the layouts of real model
families, each with the family's own normalizer / pre-tokenizer / post-processor / decoder configuration, then
records the ids `tokenizers` gives for a fixed corpus of varied strings (multilingual text, code, numbers,
emoji, whitespace runs, combining characters, special tokens embedded in text):

  gpt2     ByteLevel(use_regex) pre-tokenizer and decoder
  qwen2    NFC + Split(Qwen2 regex, \\p{N}) + ByteLevel(use_regex=false)
  llama3   Split(Llama-3 regex, \\p{N}{1,3}) + ByteLevel(use_regex=false), ignore_merges, TemplateProcessing BOS
  smollm2  Digits(individual) + ByteLevel(use_regex)
  llama2   Metaspace(prepend_scheme=first) + BPE byte_fallback/fuse_unk/<unk>, Metaspace decoder
  wordlevel  WordLevel with [UNK], NFC, Whitespace + Digits(individual), TemplateProcessing EOS, no decoder
  mixed    no real family: the remaining options (Strip/Replace/Lowercase/NFKD/Prepend normalizers, Split
           behaviours removed/merged_with_previous/merged_with_next/contiguous with invert, Digits contiguous,
           Metaspace split, Replace/Strip decoders, RobertaProcessing, unk without byte fallback); 600 strings

Every layout has the special tokens <|endoftext|>, <|im_start|>, <|im_end|> and one non-special added token
" <think>" style (layout-specific flags), so added-token matching is exercised.

Writes tests/fixtures/tokenizers/strings.json (the corpus) and, per layout, tests/fixtures/tokenizers/<layout>/
tokenizer.json, tokenizer_config.json and expected.json: {"ids": [[...]...], "ids_special": {index: [...]},
"decoded": {index: text}} where ids are encode(s, add_special_tokens=False), ids_special lists only the
strings whose ids differ with add_special_tokens=True, and decoded lists decode(ids) where it is not s.

Load-time benchmark input (not committed): `hf_tokenizers.py --big DIR` writes DIR/tokenizer.json, a Qwen2-layout
file with a synthetic 151,643-token vocabulary and 150,000 merges, and prints how long `tokenizers` takes to load
it; compare with the time `gtpo tokenize --tokenizer DIR --text x` reports on stderr (docs/tokenizers.md).

Regenerate (deterministic: fixed seeds, the tokenizers trainer is deterministic):
  export GTPO_HF_PYTHON=$(scripts/reference/hf_python.sh)
  "$GTPO_HF_PYTHON" scripts/reference/hf_tokenizers.py tests/fixtures/tokenizers
"""
import json
import os
import random
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from tokenizers import AddedToken

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

WORDS = {
    "en": "the quick brown fox jumps over lazy dog I'm you're we've they'll she'd it's DON'T WON'T isn't "
          "reasoning model answer question solve step total apples each costs".split(),
    "fr": "élève où à déjà garçon français Noël cœur être naïve ça".split(),
    "de": "Straße Übermäßig Größe schön Mädchen Fußgänger".split(),
    "ru": "привет мир быстрый лиса ответ задача".split(),
    "zh": "你好 世界 数学 问题 答案 模型 推理".split(),
    "ja": "こんにちは 世界 カタカナ 東京 日本語".split(),
    "ar": "مرحبا بالعالم سؤال".split(),
    "hi": "नमस्ते दुनिया गणित".split(),
    "ko": "안녕하세요 세계".split(),
    "emoji": ["😀", "👍🏽", "🇫🇷", "👨‍👩‍👧", "🚀", "✨", "❤️"],
    "code": ["def f(x):", "return x**2", "if (a && b) {", "}", "x += 1;", "for i in range(10):", "#include <vector>",
             "std::vector<int> v;", "print(\"hi\")", "a->b", "// comment", "/* c */", "λx.x", "0x1F", "x_1 = y_2"],
    "num": ["1234", "12345678", "3.14159", "-42", "1,000,000", "2024-01-01", "٣٤٥", "１２３", "½", "²", "Ⅻ", "0007"],
    "punct": ["...", "—", "–", "…", "«", "»", "¿", "¡", "!!", "??", "\"", "'", "`", "$", "%", "€", "©", "™", "§"],
    "space": [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u00a0", "\u3000", "\u2009", "\u200b", "\t\t "],
    "combining": ["e\u0301", "a\u0308", "n\u0303", "\u1e9b\u0323", "Å", "ﬁ", "Ω", "Ǆ", "ｶ"],
    "special": SPECIALS + ["<think>", "<|im_start|>user\n", "<|im_end|>\n", "</think>"],
}


def random_string(rng):
    kinds = list(WORDS)
    parts = []
    for _ in range(rng.randint(1, 12)):
        kind = rng.choice(kinds)
        if kind == "special" and rng.random() < 0.5:
            kind = "en"
        parts.append(rng.choice(WORDS[kind]))
        parts.append(rng.choice(["", " ", " ", " ", "  ", "\n", ", ", ". ", "\t"]))
    s = "".join(parts)
    if rng.random() < 0.1:
        s = " " + s
    if rng.random() < 0.1:
        s = s.upper()
    return s


def corpus_strings(n, seed):
    rng = random.Random(seed)
    fixed = ["", " ", "  ", "a", "1234", "12345", "hello world", "Hello", " Hello", "I'm here", "I'M HERE",
             "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
             "text<|endoftext|>more", "<|endoftext|>", "<think>reasoning</think> answer",
             " <think> spaced </think> ", "x<think>y", "<|im_start|><|im_end|>", "<|im_start", "<|im_end|",
             "e\u0301t\u00e9", "ﬁne １２３", "\n\n\n", "a  b", "x\n\ny", "   leading", "trailing   ",
             "tab\there", "😀😀😀", "¿Qué?", "数学题：12+7=19", "#### 42", "\r\n\r\n"]
    return fixed + [random_string(rng) for _ in range(n - len(fixed))]


def byte_level_bpe(layout):
    tok = Tokenizer(models.BPE())
    bl_alphabet = pre_tokenizers.ByteLevel.alphabet()
    if layout == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    elif layout == "qwen2":
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
        tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    elif layout == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    elif layout == "smollm2":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
        tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
        tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    return tok, bl_alphabet


def build(layout, train_lines):
    added = [AddedToken(s, special=True, normalized=False) for s in SPECIALS]
    if layout == "llama2":
        tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False),
                                         decoders.ByteFallback(), decoders.Fuse()])
        alphabet = [f"<0x{b:02X}>" for b in range(256)]
        trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=["<unk>", "<s>", "</s>"] + alphabet,
                                      limit_alphabet=200, show_progress=False)
    else:
        tok, alphabet = byte_level_bpe(layout)
        trainer = trainers.BpeTrainer(vocab_size=1500, initial_alphabet=alphabet, special_tokens=[],
                                      show_progress=False)
    tok.train_from_iterator(train_lines, trainer)
    tok.add_special_tokens(added)
    # One non-special added token, with the flags each family would use.
    if layout == "llama2":
        tok.add_tokens([AddedToken("<think>", single_word=True, lstrip=True, rstrip=False, normalized=False)])
        tok.add_tokens([AddedToken("</think>", rstrip=True, normalized=True)])
    else:
        tok.add_tokens([AddedToken("<think>", normalized=False)])
        tok.add_tokens([AddedToken("</think>", lstrip=True, normalized=True)])
    if layout == "llama3":
        bos = "<|begin_of_text|>"
        tok.add_special_tokens([AddedToken(bos, special=True, normalized=False)])
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B:1",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    if layout == "llama2":
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                           special_tokens=[("<s>", tok.token_to_id("<s>"))])
    data = json.loads(tok.to_str())
    if layout == "llama3":
        data["model"]["ignore_merges"] = True
        tok = Tokenizer.from_str(json.dumps(data))
    return tok, data


def build_mixed(train_lines):
    """Every component option the family layouts leave out, in one (not a real family's) tokenizer."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=False))
    tok.normalizer = normalizers.Sequence([
        normalizers.Strip(left=False, right=True), normalizers.Replace(Regex(r"[0-9]{5,}"), "#"),
        normalizers.Replace("``", '"'), normalizers.Lowercase(), normalizers.NFKD(), normalizers.Prepend("^")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), behavior="removed", invert=False),
        pre_tokenizers.Split(Regex(r"[\p{P}\p{S}]"), behavior="merged_with_previous", invert=False),
        pre_tokenizers.Split("-", behavior="merged_with_next", invert=False),
        pre_tokenizers.Split(Regex(r"\p{L}+"), behavior="contiguous", invert=True),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Metaspace(replacement="_", prepend_scheme="always", split=True)])
    tok.decoder = decoders.Sequence([decoders.Replace("_", " "), decoders.Strip(content=" ", left=1, right=0)])
    trainer = trainers.BpeTrainer(vocab_size=800, special_tokens=["<unk>"], show_progress=False)
    tok.train_from_iterator(train_lines, trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.add_tokens([AddedToken("<think>", rstrip=True, normalized=True)])
    tok.post_processor = processors.RobertaProcessing(sep=("<|im_end|>", tok.token_to_id("<|im_end|>")),
                                                      cls=("<|im_start|>", tok.token_to_id("<|im_start|>")))
    return tok, json.loads(tok.to_str())


def build_wordlevel(train_lines):
    """A WordLevel model (whole words, [UNK] for the rest) behind the Whitespace pre-tokenizer, no decoder."""
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                 pre_tokenizers.Digits(individual_digits=True)])
    trainer = trainers.WordLevelTrainer(vocab_size=1500, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(train_lines, trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.add_tokens([AddedToken("<think>", single_word=True, normalized=True)])
    tok.post_processor = processors.TemplateProcessing(
        single="$A <|endoftext|>", special_tokens=[("<|endoftext|>", tok.token_to_id("<|endoftext|>"))])
    return tok, json.loads(tok.to_str())


def tokenizer_config(layout):
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False,
           "model_max_length": 2048}
    if layout == "qwen2":
        cfg.update(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                   chat_template="{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    elif layout == "llama3":
        cfg.update(bos_token="<|begin_of_text|>", eos_token={"content": "<|endoftext|>", "special": True,
                                                              "__type": "AddedToken"},
                   chat_template=[{"name": "default", "template": "{{ bos_token }}{{ messages[0]['content'] }}"},
                                  {"name": "tool_use", "template": "tools"}])
    elif layout == "llama2":
        cfg.update(bos_token="<s>", eos_token="</s>", unk_token="<unk>", add_bos_token=True)
    else:
        cfg.update(bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    return cfg


def write_big(out):
    import time
    rng = random.Random(3)
    tok, alphabet = byte_level_bpe("qwen2")
    vocab = {t: i for i, t in enumerate(sorted(alphabet))}
    tokens = list(vocab)
    merges = []
    while len(vocab) < 151643:
        a = rng.choice(tokens)
        b = rng.choice(tokens[:256]) if rng.random() < 0.7 else rng.choice(tokens)
        if len(a) + len(b) > 16 or (a + b) in vocab:
            continue
        vocab[a + b] = len(vocab)
        tokens.append(a + b)
        merges.append([a, b])
    data = json.loads(tok.to_str())
    data["model"]["vocab"] = vocab
    data["model"]["merges"] = merges[:150000]
    data["added_tokens"] = [{"id": len(vocab) + i, "content": c, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True} for i, c in enumerate(SPECIALS)]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    start = time.perf_counter()
    Tokenizer.from_file(path)
    print(f"{path}: vocab {len(vocab) + len(SPECIALS)}, {len(data['model']['merges'])} merges; "
          f"tokenizers loads it in {time.perf_counter() - start:.3f} s")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--big":
        write_big(sys.argv[2])
        return
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/tokenizers"
    os.makedirs(out, exist_ok=True)
    train_lines = corpus_strings(6000, seed=1)
    strings = corpus_strings(2200, seed=2)
    with open(os.path.join(out, "strings.json"), "w", encoding="utf-8") as f:
        json.dump(strings, f, ensure_ascii=False, indent=0)
    special_builds = {"mixed": build_mixed, "wordlevel": build_wordlevel}
    for layout in ["gpt2", "qwen2", "llama3", "smollm2", "llama2", "mixed", "wordlevel"]:
        tok, data = special_builds[layout](train_lines) if layout in special_builds else build(layout, train_lines)
        d = os.path.join(out, layout)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_config(layout), f, ensure_ascii=False, indent=1)
        ids, special, decoded = [], {}, {}
        # "mixed" only checks components, on the first 600 strings (keeps the fixtures small).
        for i, s in enumerate(strings[:600] if layout == "mixed" else strings):
            a = tok.encode(s, add_special_tokens=False).ids
            b = tok.encode(s, add_special_tokens=True).ids
            ids.append(a)
            if a != b:
                special[str(i)] = b
            text = tok.decode(a, skip_special_tokens=False)
            if text != s:
                decoded[str(i)] = text
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as f:
            f.write('{"ids_special": ' + json.dumps(special, separators=(",", ":")) + ',\n"decoded": ' +
                    json.dumps(decoded, ensure_ascii=False, separators=(",", ":")) + ',\n"ids": [\n')
            f.write(",\n".join(json.dumps(x, separators=(",", ":")) for x in ids))
            f.write("\n]}\n")
        print(f"{layout}: vocab {tok.get_vocab_size()}, {len(ids)} strings, {len(special)} differ with "
              f"add_special_tokens, {len(decoded)} do not round-trip in tokenizers itself")


if __name__ == "__main__":
    main()
