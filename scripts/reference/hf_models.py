#!/usr/bin/env python3
"""Tiny random Hugging Face models, saved by transformers' own save_pretrained, with the per-token
log-probs transformers computes for them: the fixtures of tests/model/test_hf_models.cpp.

Each fixture is a directory tests/fixtures/hf_models/<name>/ exactly as save_pretrained writes it
(config.json, model.safetensors or shards + model.safetensors.index.json, generation_config.json) plus
expected.json: {"tokens": [...], "logprobs": [...]} where logprobs[t-1] = log p(tokens[t] | tokens[:t])
for t = 1 .. len-1, computed by transformers in float64 from the saved weights (read back from the
directory, so a bf16 fixture is scored with its bf16-rounded weights).

Fixtures:
  gpt2            GPT2LMHeadModel (tied, gelu_new, n_inner null)
  llama_options   LlamaForCausalLM: GQA, untied, attention_bias, mlp_bias, head_dim 16 != hidden/heads,
                  rope_scaling linear (written with the old "type" spelling only)
  llama3_rope     LlamaForCausalLM with rope_scaling llama3 (kept, blended and divided frequencies),
                  generation_config.json with two eos ids
  qwen2_tied      Qwen2ForCausalLM, tied, rope_scaling null, use_sliding_window false
  llama_bf16      saved in bfloat16 (torch_dtype bfloat16)
  qwen2_sharded   max_shard_size 20KB: several shards and model.safetensors.index.json

usage (torch 1.13 + transformers 4.45.2, e.g. scripts/reference/hf_python.sh):
  $GTPO_HF_PYTHON scripts/reference/hf_models.py tests/fixtures/hf_models
"""
import json
import os
import shutil
import sys

import torch
from transformers import (GenerationConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM, AutoModelForCausalLM)

VOCAB = 96
TOKENS = [(i * 37 + 11) % VOCAB for i in range(40)]


def fixtures():
    common = dict(vocab_size=VOCAB, num_hidden_layers=2, max_position_embeddings=64, bos_token_id=1,
                  eos_token_id=2)
    yield "gpt2", GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                             n_inner=None, bos_token_id=1, eos_token_id=2)), {}
    yield "llama_options", LlamaForCausalLM(LlamaConfig(
        hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        attention_bias=True, mlp_bias=True, tie_word_embeddings=False, rope_theta=500.0,
        rope_scaling={"type": "linear", "factor": 2.0}, **common)), {"old_rope_spelling": True}
    yield "llama3_rope", LlamaForCausalLM(LlamaConfig(
        hidden_size=32, intermediate_size=48, num_attention_heads=2, num_key_value_heads=2,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 16}, **common)), {"eos": [2, 5]}
    yield "qwen2_tied", Qwen2ForCausalLM(Qwen2Config(
        hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
        tie_word_embeddings=True, rope_scaling=None, use_sliding_window=False, sliding_window=4096,
        rope_theta=1000000.0, **common)), {}
    yield "llama_bf16", LlamaForCausalLM(LlamaConfig(
        hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=1, **common)), \
        {"dtype": torch.bfloat16}
    yield "qwen2_sharded", Qwen2ForCausalLM(Qwen2Config(
        hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
        tie_word_embeddings=False, **common)), {"shard": "20KB"}


def logprobs(model_dir):
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                                 attn_implementation="eager").double().eval()
    with torch.no_grad():
        logits = model(torch.tensor([TOKENS])).logits[0]
    lp = torch.log_softmax(logits, dim=-1)
    return [float(lp[t - 1, TOKENS[t]]) for t in range(1, len(TOKENS))]


def main(out_root):
    torch.manual_seed(1234)
    for name, model, opts in fixtures():
        out = os.path.join(out_root, name)
        shutil.rmtree(out, ignore_errors=True)
        # Weights larger than the 0.02 default, so the log-probs depend visibly on every option.
        with torch.no_grad():
            for pname, p in model.named_parameters():
                gain = p.dim() == 1 and ("norm" in pname or ".ln_" in pname)
                p.copy_(torch.randn_like(p) * 0.2 + (1.0 if gain else 0.0))
        model.eval()
        if "dtype" in opts:
            model = model.to(opts["dtype"])
        kwargs = {"max_shard_size": opts["shard"]} if "shard" in opts else {}
        model.save_pretrained(out, safe_serialization=True, **kwargs)
        if "eos" in opts:
            GenerationConfig(bos_token_id=1, eos_token_id=opts["eos"]).save_pretrained(out)
        if opts.get("old_rope_spelling"):
            path = os.path.join(out, "config.json")
            config = json.load(open(path))
            config["rope_scaling"].pop("rope_type", None)
            json.dump(config, open(path, "w"), indent=2, sort_keys=True)
        expected = {"tokens": TOKENS, "logprobs": logprobs(out)}
        with open(os.path.join(out, "expected.json"), "w") as f:
            json.dump(expected, f)
        print(name, sorted(os.listdir(out)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/hf_models")
