#!/usr/bin/env python3
"""The instruct-model fixture of configs/gsm8k-chat.yaml and of the chat-prompt tests: a tiny random
Qwen2ForCausalLM whose vocabulary is the Qwen2-layout fixture tokenizer (tests/fixtures/tokenizers/qwen2,
trained by `tokenizers`) with Qwen2.5-Instruct's chat template, saved by transformers' own save_pretrained
(model and tokenizer), as a user's Qwen2.5-0.5B-Instruct directory looks.

expected.json holds, for every question of examples/gsm8k/train.jsonl as one user turn and for a few
conversations (system turn, multi-turn), what transformers gives:
  {"cases": [{"messages": [...], "text": apply_chat_template(tokenize=False, add_generation_prompt=True),
              "ids": apply_chat_template(tokenize=True, add_generation_prompt=True)}]}
and "eos_token_ids" from generation_config.json.

usage (torch 1.13 + transformers 4.45.2, e.g. scripts/reference/hf_python.sh):
  $GTPO_HF_PYTHON scripts/reference/hf_chat_model.py tests/fixtures/hf_chat_qwen2
"""
import json
import os
import shutil
import sys

import torch
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests/fixtures/hf_chat_qwen2")
    with open(os.path.join(ROOT, "tests/fixtures/chat_templates/templates/qwen2.5-instruct.jinja")) as f:
        template = f.read()
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(ROOT, "tests/fixtures/tokenizers/qwen2/tokenizer.json"),
                                  eos_token="<|im_end|>", pad_token="<|endoftext|>", model_max_length=512)
    tok.chat_template = template
    im_end, endoftext = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, rope_theta=1000000.0, rope_scaling=None,
                         use_sliding_window=False, sliding_window=4096, bos_token_id=endoftext,
                         eos_token_id=im_end)
    model = Qwen2ForCausalLM(config).eval()
    # Wider than the 0.02 default, so that the random model's samples differ between prompts.
    with torch.no_grad():
        model.model.embed_tokens.weight.normal_(0.0, 0.5)
    model.generation_config = GenerationConfig(bos_token_id=endoftext, eos_token_id=[im_end, endoftext],
                                               pad_token_id=endoftext)
    if os.path.exists(out):
        shutil.rmtree(out)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)

    conversations = []
    with open(os.path.join(ROOT, "examples/gsm8k/train.jsonl")) as f:
        for line in f:
            conversations.append([{"role": "user", "content": json.loads(line)["question"]}])
    conversations.append([{"role": "system", "content": "Reason step by step; end with '#### N'."},
                          {"role": "user", "content": "What is 12 + 30?"}])
    conversations.append([{"role": "user", "content": "Hi <|im_start|> there"},
                          {"role": "assistant", "content": "Hello."},
                          {"role": "user", "content": "Add 1234 and 5678."}])
    loaded = PreTrainedTokenizerFast.from_pretrained(out)  # what a user's AutoTokenizer gives
    cases = []
    for messages in conversations:
        text = loaded.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = loaded.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        cases.append({"messages": messages, "text": text, "ids": list(ids)})
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"eos_token_ids": [im_end, endoftext], "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {out}: vocabulary {len(tok)}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"{len(cases)} rendered conversations")


if __name__ == "__main__":
    main()
