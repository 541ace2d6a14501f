#!/usr/bin/env python3
"""Independent PyTorch reference for gtpo's transformer, and the generator of its test fixtures.

For each fixture it draws random weights (numpy, seeded), writes them as a Hugging Face-layout
model.safetensors plus a gtpo config.yaml, builds the same architecture in plain PyTorch straight from
the HF equations (GPT2LMHeadModel with Conv1D [in, out] weights; LlamaForCausalLM / Qwen2ForCausalLM
with rotate_half RoPE, RMSNorm, SwiGLU and grouped-query attention), and records in expected.safetensors:
  tokens, logits, loss (mean next-token cross-entropy) and grad.<name> for every parameter.
The C++ test (tests/model/test_reference_parity.cpp) loads the same files and compares.

usage: scripts/reference/torch_python.sh | xargs -I{} {} scripts/reference/model_reference.py OUT_DIR
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)  # the reference runs in double; gtpo's fp32 must match to 1e-4


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        dtype = {np.dtype("float32"): "F32", np.dtype("int32"): "I32"}[arr.dtype]
        data = arr.tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def param_shapes(cfg):
    C, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = C // H
    shapes = {}
    if cfg["architecture"] == "gpt2":
        shapes["transformer.wte.weight"] = (V, C)
        shapes["transformer.wpe.weight"] = (cfg["max_position_embeddings"], C)
        for i in range(cfg["num_hidden_layers"]):
            p = f"transformer.h.{i}."
            shapes.update({p + "ln_1.weight": (C,), p + "ln_1.bias": (C,),
                           p + "attn.c_attn.weight": (C, 3 * C), p + "attn.c_attn.bias": (3 * C,),
                           p + "attn.c_proj.weight": (C, C), p + "attn.c_proj.bias": (C,),
                           p + "ln_2.weight": (C,), p + "ln_2.bias": (C,),
                           p + "mlp.c_fc.weight": (C, F), p + "mlp.c_fc.bias": (F,),
                           p + "mlp.c_proj.weight": (F, C), p + "mlp.c_proj.bias": (C,)})
        shapes["transformer.ln_f.weight"] = (C,)
        shapes["transformer.ln_f.bias"] = (C,)
    else:
        shapes["model.embed_tokens.weight"] = (V, C)
        qwen = cfg["architecture"] == "qwen2"
        for i in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            shapes[p + "input_layernorm.weight"] = (C,)
            shapes[p + "self_attn.q_proj.weight"] = (H * D, C)
            shapes[p + "self_attn.k_proj.weight"] = (KV * D, C)
            shapes[p + "self_attn.v_proj.weight"] = (KV * D, C)
            shapes[p + "self_attn.o_proj.weight"] = (C, H * D)
            if qwen or cfg["attention_bias"]:
                shapes[p + "self_attn.q_proj.bias"] = (H * D,)
                shapes[p + "self_attn.k_proj.bias"] = (KV * D,)
                shapes[p + "self_attn.v_proj.bias"] = (KV * D,)
            if cfg["attention_bias"] and not qwen:
                shapes[p + "self_attn.o_proj.bias"] = (C,)
            shapes[p + "post_attention_layernorm.weight"] = (C,)
            shapes[p + "mlp.gate_proj.weight"] = (F, C)
            shapes[p + "mlp.up_proj.weight"] = (F, C)
            shapes[p + "mlp.down_proj.weight"] = (C, F)
        shapes["model.norm.weight"] = (C,)
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    return shapes


def gpt2_forward(w, cfg, tokens):
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    D, eps = C // H, cfg["layer_norm_epsilon"]
    B, T = tokens.shape
    x = w["transformer.wte.weight"][tokens] + w["transformer.wpe.weight"][torch.arange(T)][None]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["num_hidden_layers"]):
        p = f"transformer.h.{i}."
        h = torch.nn.functional.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=-1)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = torch.nn.functional.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        m = 0.5 * m * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (m + 0.044715 * m ** 3)))  # gelu_new
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = torch.nn.functional.layer_norm(x, (C,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps)
    head = w["transformer.wte.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def rms_norm(x, weight, eps):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_forward(w, cfg, tokens):
    C, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D, eps = C // H, cfg["rms_norm_eps"]
    B, T = tokens.shape
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None, None], emb.sin()[None, None]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = w["model.embed_tokens.weight"][tokens]

    def lin(t, name):
        y = t @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(B, T, H, D).transpose(1, 2)
        k = lin(h, p + "self_attn.k_proj").view(B, T, KV, D).transpose(1, 2)
        v = lin(h, p + "self_attn.v_proj").view(B, T, KV, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
        x = x + lin(y, p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = lin(h, p + "mlp.gate_proj")
        x = x + lin(torch.nn.functional.silu(g) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


FIXTURES = {
    # odd sizes everywhere: vocab 37, hidden 20, 4 heads of 5, MLP 44, 2 layers
    "gpt2_tiny": dict(architecture="gpt2", vocab_size=37, hidden_size=20, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, intermediate_size=44,
                      max_position_embeddings=16, layer_norm_epsilon=1e-5, tie_word_embeddings=True),
    # grouped-query attention with 2 groups (4 query heads over 2 kv heads), untied head
    "llama_gqa": dict(architecture="llama", vocab_size=41, hidden_size=24, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, intermediate_size=36,
                      max_position_embeddings=32, rms_norm_eps=1e-6, rope_theta=10000.0,
                      tie_word_embeddings=False, attention_bias=False),
    # qwen2: q/k/v biases, tied embeddings, GQA 3 query heads per kv head
    "qwen2_bias": dict(architecture="qwen2", vocab_size=29, hidden_size=24, num_hidden_layers=3,
                       num_attention_heads=6, num_key_value_heads=2, intermediate_size=30,
                       max_position_embeddings=32, rms_norm_eps=1e-6, rope_theta=1000.0,
                       tie_word_embeddings=True, attention_bias=True),
}


def main(out_dir):
    for index, (name, cfg) in enumerate(FIXTURES.items()):
        rng = np.random.default_rng(1000 + index)
        shapes = param_shapes(cfg)
        weights = {}
        for pname, shape in shapes.items():
            if pname.endswith("norm.weight") or ".ln_" in pname or "layernorm" in pname:
                arr = 1.0 + 0.1 * rng.standard_normal(shape)
            else:
                arr = 0.3 * rng.standard_normal(shape)
            weights[pname] = arr.astype(np.float32)
        B, T = 2, 7
        tokens = rng.integers(0, cfg["vocab_size"], size=(B, T)).astype(np.int32)
        params = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in weights.items()}
        forward = gpt2_forward if cfg["architecture"] == "gpt2" else llama_forward
        logits = forward(params, cfg, torch.tensor(tokens, dtype=torch.long))
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, cfg["vocab_size"]),
                                                 torch.tensor(tokens[:, 1:].reshape(-1), dtype=torch.long))
        loss.backward()
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        write_safetensors(os.path.join(d, "model.safetensors"), weights)
        with open(os.path.join(d, "config.yaml"), "w") as f:
            f.write("# written by scripts/reference/model_reference.py\nmodel:\n")
            for k, v in cfg.items():
                f.write(f"  {k}: {str(v).lower() if isinstance(v, bool) else v}\n")
        expected = {"tokens": tokens, "logits": logits.detach().numpy().astype(np.float32),
                    "loss": np.array([loss.item()], dtype=np.float32)}
        for pname, p in params.items():
            expected["grad." + pname] = p.grad.numpy().astype(np.float32)
        write_safetensors(os.path.join(d, "expected.safetensors"), expected)
        print(f"{name}: {sum(v.size for v in weights.values())} parameters, loss {loss.item():.6f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures")
