#!/usr/bin/env python3
"""PyTorch (fp32, CPU) side of gtpo's benchmarks (issue 7): the same models and workloads as `gtpo bench`.

usage: torch_bench.py --workload {train,rollout,rollout-naive,sgemm,all} [--shape {small,gpt2-124m}]
                      [--threads N] [--runs R] [--warmup W] [--quick]

Each workload prints one JSON object on stdout and human-readable lines on stderr. Peak memory is the
process's ru_maxrss, which is process-wide and never decreases, so every workload must run in a fresh
process: `--workload all` (and scripts/bench/run.sh) re-invoke this script once per workload.

The models follow scripts/reference/model_reference.py (Hugging Face GPT2LMHeadModel / LlamaForCausalLM
equations) but are written as an efficient PyTorch user would: q/k/v and gate/up projections fused into one
Linear each, RoPE tables precomputed, a preallocated KV cache. Weights are random (speed does not depend
on their values). torch 1.13 has no scaled_dot_product_attention, so attention is matmul + additive causal
mask + softmax + matmul.

FLOPs (the nanoGPT / PaLM appendix-B convention): a training step costs, per token,
    6 * N + 12 * L * C * T
where N counts the weights that enter a matmul (every Linear, plus the LM head even when tied; not the
embedding lookups nor norm/bias vectors), L = layers, C = hidden size (= heads * head_dim), T = sequence
length. 6N = 2 (forward) + 4 (backward) multiply-adds per weight; 12LCT = the QK^T and AV matmuls at full
T x T (the causal half is not subtracted, as is customary). Forward-only (rollout) is a third of that, with
T replaced by the context length each token actually attends to: 2 * N + 4 * L * C * ctx.
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

SHAPES = {
    # llama-style small model of issue 7. intermediate = gtpo's default (8*C/3 + 31) // 32 * 32 = 704
    # (model/model_config.cpp); head untied, as llama's default.
    "small": dict(architecture="llama", vocab_size=512, hidden_size=256, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=4, intermediate_size=704,
                  max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0,
                  tie_word_embeddings=False, batch=16, seq=128),
    "gpt2-124m": dict(architecture="gpt2", vocab_size=50257, hidden_size=768, num_hidden_layers=12,
                      num_attention_heads=12, num_key_value_heads=12, intermediate_size=3072,
                      max_position_embeddings=1024, layer_norm_epsilon=1e-5, tie_word_embeddings=True,
                      batch=4, seq=64),
}
ROLLOUT = dict(prompts=16, group=8, prompt_len=32, new_tokens=96)
# (M, K, N) of C[M,N] = A[M,K] @ B[K,N]: the matmuls of the two training shapes, plus one square.
SGEMM_SHAPES = [(2048, 256, 768), (2048, 256, 1408), (2048, 704, 256), (2048, 256, 512),
                (256, 768, 2304), (256, 768, 3072), (256, 3072, 768), (256, 768, 50257), (1024, 1024, 1024)]
DEFAULT_RUNS = {"train": (5, 2), "rollout": (5, 2), "rollout-naive": (5, 2), "sgemm": (7, 2)}
QUICK_RUNS = (3, 1)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", required=True, choices=["train", "rollout", "rollout-naive", "sgemm", "all"])
    p.add_argument("--shape", default="small", choices=sorted(SHAPES))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--runs", type=int, help="timed runs (median reported); default 5 (sgemm 7)")
    p.add_argument("--warmup", type=int, help="untimed runs first; default 2")
    p.add_argument("--quick", action="store_true", help="3 timed runs after 1 warm-up")
    p.add_argument("--naive", action="store_true", help="with --workload all: also run rollout-naive")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    runs, warmup = QUICK_RUNS if a.quick else DEFAULT_RUNS.get(a.workload, (5, 2))
    a.runs = a.runs if a.runs is not None else runs
    a.warmup = a.warmup if a.warmup is not None else warmup
    return a


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # OpenMP reads its pool size when libtorch loads, so the environment must be set before `import torch`.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)
try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit(f"torch_bench: cannot import torch with {sys.executable}. Run scripts/setup.sh (installs Debian's "
             "python3-torch) and use /usr/bin/python3 (or scripts/reference/torch_python.sh, or set GTPO_PYTHON).")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rss_mb():
    """Current resident set size (not the peak), from /proc."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def blas_library():
    """The BLAS shared object torch's GEMMs go to. Debian's torch calls whatever libblas.so.3 resolves to: by
    default the netlib reference BLAS (single-threaded, a few GFLOP/s), OpenBLAS once libopenblas0-* is
    installed or its directory is put on LD_LIBRARY_PATH. Recorded because it decides most of the figures."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.split()[-1].rsplit("/", 1)[-1]}
    return sorted(libs)[0] if libs else "unknown"


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


# ---------------------------------------------------------------------------------------------- models

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    """Causal self-attention over a [B, T, C] input, optionally reading/writing a preallocated KV cache."""

    def __init__(self, cfg):
        super().__init__()
        C, self.H, self.KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.D = C // self.H
        self.gpt2 = cfg["architecture"] == "gpt2"
        # One fused projection for q, k and v: one GEMM instead of three.
        self.qkv = nn.Linear(C, (self.H + 2 * self.KV) * self.D, bias=self.gpt2)
        self.out = nn.Linear(self.H * self.D, C, bias=self.gpt2)

    def forward(self, x, rope, mask, cache=None, pos=0):
        B, T, _ = x.shape
        H, KV, D = self.H, self.KV, self.D
        q, k, v = self.qkv(x).split([H * D, KV * D, KV * D], dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, KV, D).transpose(1, 2)
        v = v.view(B, T, KV, D).transpose(1, 2)
        if rope is not None:
            cos, sin = rope[0][pos:pos + T], rope[1][pos:pos + T]
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if cache is not None:  # cache: ([B, KV, Tmax, D], [B, KV, Tmax, D]) for this layer
            cache[0][:B, :, pos:pos + T] = k
            cache[1][:B, :, pos:pos + T] = v
            k, v = cache[0][:B, :, :pos + T], cache[1][:B, :, :pos + T]
        G = H // KV
        # Grouped-query attention without repeating k/v: fold the G query heads of a group into the rows.
        q = q.reshape(B, KV, G * T, D)
        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(D))
        if mask is not None:  # additive causal mask; decode steps (T == 1) need none
            att = (att.view(B, KV, G, T, -1) + mask).view(B, KV, G * T, -1)
        y = torch.matmul(att.softmax(-1), v)  # [B, KV, G*T, D]
        y = y.view(B, H, T, D).transpose(1, 2).reshape(B, T, H * D)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, Fi = cfg["hidden_size"], cfg["intermediate_size"]
        self.gpt2 = cfg["architecture"] == "gpt2"
        if self.gpt2:
            eps = cfg["layer_norm_epsilon"]
            self.norm1, self.norm2 = nn.LayerNorm(C, eps=eps), nn.LayerNorm(C, eps=eps)
            self.fc, self.proj = nn.Linear(C, Fi), nn.Linear(Fi, C)
        else:
            eps = cfg["rms_norm_eps"]
            self.norm1, self.norm2 = RMSNorm(C, eps), RMSNorm(C, eps)
            self.fc = nn.Linear(C, 2 * Fi, bias=False)  # gate and up fused
            self.proj = nn.Linear(Fi, C, bias=False)
        self.attn = Attention(cfg)

    def forward(self, x, rope, mask, cache=None, pos=0):
        x = x + self.attn(self.norm1(x), rope, mask, cache, pos)
        h = self.fc(self.norm2(x))
        if self.gpt2:
            h = F.gelu(h, approximate="tanh")  # gelu_new
        else:
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        return x + self.proj(h)


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        C, V, P = cfg["hidden_size"], cfg["vocab_size"], cfg["max_position_embeddings"]
        self.gpt2 = cfg["architecture"] == "gpt2"
        self.embed = nn.Embedding(V, C)
        self.pos_embed = nn.Embedding(P, C) if self.gpt2 else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.norm = nn.LayerNorm(C, eps=cfg["layer_norm_epsilon"]) if self.gpt2 else RMSNorm(C, cfg["rms_norm_eps"])
        self.head = nn.Linear(C, V, bias=False)
        if cfg["tie_word_embeddings"]:
            self.head.weight = self.embed.weight
        for name, p in self.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
            elif "bias" in name:
                nn.init.zeros_(p)
        if not self.gpt2:
            D = C // cfg["num_attention_heads"]
            inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
            emb = torch.outer(torch.arange(P, dtype=torch.float64), inv_freq).repeat(1, 2)
            self.register_buffer("cos", emb.cos().float(), persistent=False)
            self.register_buffer("sin", emb.sin().float(), persistent=False)

    def forward(self, tokens, cache=None, pos=0, last_only=False):
        B, T = tokens.shape
        x = self.embed(tokens)
        if self.gpt2:
            x = x + self.pos_embed.weight[pos:pos + T]
        rope = None if self.gpt2 else (self.cos, self.sin)
        mask = None
        if T > 1:  # query i (absolute pos + i) sees keys 0 .. pos + i
            mask = torch.full((T, pos + T), float("-inf")).triu_(pos + 1)
        for i, block in enumerate(self.blocks):
            x = block(x, rope, mask, None if cache is None else cache[i], pos)
        if last_only:
            x = x[:, -1:]
        return self.head(self.norm(x))

    def matmul_params(self):
        """N of the FLOP formula: weights that enter a matmul (all 2-D except embedding tables; the head counts)."""
        n = sum(p.numel() for name, p in self.named_parameters()
                if p.dim() == 2 and not name.startswith(("embed", "pos_embed")))
        return n + (self.head.weight.numel() if self.cfg["tie_word_embeddings"] else 0)


# ---------------------------------------------------------------------------------------------- timing

def timed(fn, runs, warmup, label):
    for _ in range(warmup):
        fn()
    out = []
    for i in range(runs):
        t0 = time.perf_counter()
        extra = fn()
        out.append((time.perf_counter() - t0, extra))
        log(f"  {label} run {i + 1}/{runs}: {out[-1][0] * 1e3:.1f} ms")
    return out


def bench_train(cfg, args):
    torch.manual_seed(args.seed)
    model = Transformer(cfg)
    B, T, V = cfg["batch"], cfg["seq"], cfg["vocab_size"]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    tokens = torch.randint(0, V, (B, T + 1))
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()  # loss at all B*T positions
    baseline = rss_mb()
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())

    runs = [s for s, _ in timed(step, args.runs, args.warmup, "train step")]
    med = statistics.median(runs)
    N, L, C = model.matmul_params(), cfg["num_hidden_layers"], cfg["hidden_size"]
    flops_per_token = 6 * N + 12 * L * C * T
    return dict(tokens_per_s=B * T / med, runs=[B * T / s for s in runs], step_s=med, tokens_per_step=B * T,
                gflops=flops_per_token * B * T / med / 1e9, flops_per_token=flops_per_token,
                params=sum(p.numel() for p in model.parameters()), matmul_params=N, baseline_rss_mb=baseline,
                loss_first=losses[0], loss_last=losses[-1])


def bench_rollout(cfg, args, naive):
    """16 prompts x G 8 samples. Shared: prefill the 16 prompts once, copy each prompt's cache into its G
    rows (as gtpo does). Naive: prefill all 128 rows. Then 95 batched decode steps: the first of the 96 new
    tokens is sampled from the prefill logits."""
    torch.manual_seed(args.seed)
    model = Transformer(cfg).eval()
    P, G, Tp, Tn = ROLLOUT["prompts"], ROLLOUT["group"], ROLLOUT["prompt_len"], ROLLOUT["new_tokens"]
    R, V = P * G, cfg["vocab_size"]
    KV, D = cfg["num_key_value_heads"], cfg["hidden_size"] // cfg["num_attention_heads"]
    cap, L = Tp + Tn, cfg["num_hidden_layers"]
    # Preallocated once, reused by every run: [rows, kv_heads, capacity, head_dim] per layer, for k and v;
    # the shared variant prefills a 16-row prompt cache and broadcasts it into the 128-row one.
    cache = [(torch.empty(R, KV, cap, D), torch.empty(R, KV, cap, D)) for _ in range(L)]
    prompt_cache = [(torch.empty(P, KV, Tp, D), torch.empty(P, KV, Tp, D)) for _ in range(L)]
    prompts = torch.randint(0, V, (P, Tp))
    out = torch.empty(R, Tn, dtype=torch.long)
    baseline = rss_mb()

    @torch.inference_mode()
    def generate():
        t0 = time.perf_counter()
        if naive:
            logits = model(prompts.repeat_interleave(G, dim=0), cache, 0, last_only=True)[:, 0]
        else:
            logits = model(prompts, prompt_cache, 0, last_only=True)[:, 0].repeat_interleave(G, dim=0)
            for (k, v), (pk, pv) in zip(cache, prompt_cache):  # rows r*G .. r*G+G-1 <- prompt r
                k[:, :, :Tp].view(P, G, KV, Tp, D).copy_(pk[:, None])
                v[:, :, :Tp].view(P, G, KV, Tp, D).copy_(pv[:, None])
        tok = torch.multinomial(logits.softmax(-1), 1)  # temperature 1
        out[:, 0:1] = tok
        t1 = time.perf_counter()
        for i in range(1, Tn):
            logits = model(tok, cache, Tp + i - 1)[:, 0]
            tok = torch.multinomial(logits.softmax(-1), 1)
            out[:, i:i + 1] = tok
        return t1 - t0

    runs = timed(generate, args.runs, args.warmup, "rollout-naive" if naive else "rollout")
    total = statistics.median(s for s, _ in runs)
    prefill = statistics.median(p for _, p in runs)
    decode = statistics.median(s - p for s, p in runs)
    N, C = model.matmul_params(), cfg["hidden_size"]
    prefill_rows = R if naive else P
    flops = prefill_rows * sum(2 * N + 4 * L * C * (t + 1) for t in range(Tp))  # ctx = causal, exact
    flops += R * sum(2 * N + 4 * L * C * (Tp + i) for i in range(1, Tn))
    return dict(tokens_per_s=R * Tn / total, runs=[R * Tn / s for s, _ in runs], rollout_s=total,
                generated_tokens=R * Tn, rows=R, prefill_s=prefill, decode_s=decode,
                decode_tokens_per_s=R * (Tn - 1) / decode, gflops=flops / total / 1e9,
                kv_cache_mb=sum(t.numel() for kv in cache + prompt_cache for t in kv) * 4 / 2**20,
                baseline_rss_mb=baseline)


def bench_sgemm(args):
    torch.manual_seed(args.seed)
    baseline = rss_mb()
    results = []
    for M, K, N in SGEMM_SHAPES:
        a, b, c = torch.randn(M, K), torch.randn(K, N), torch.empty(M, N)
        flop = 2.0 * M * K * N
        # Repeat inside one timed run so a run lasts >= ~20 ms at an assumed 100 GFLOP/s.
        reps = max(1, int(2e9 / flop))

        def run():
            for _ in range(reps):
                torch.mm(a, b, out=c)

        runs = [s for s, _ in timed(run, args.runs, args.warmup, f"sgemm {M}x{K}x{N} x{reps}")]
        g = flop * reps / statistics.median(runs) / 1e9
        results.append(dict(m=M, k=K, n=N, gflops=g, runs=[flop * reps / s / 1e9 for s in runs]))
        log(f"sgemm {M}x{K}x{N}: {g:.1f} GFLOP/s")
    best = max(results, key=lambda r: r["gflops"])
    return dict(tokens_per_s=None, gflops=best["gflops"], runs=best["runs"],
                peak_shape=[best["m"], best["k"], best["n"]], shapes=results, baseline_rss_mb=baseline)


def run_all(args):
    """Each workload in a fresh process (ru_maxrss is per process and monotone)."""
    jobs = [("train", "small"), ("train", "gpt2-124m"), ("rollout", "small"), ("sgemm", "small")]
    jobs += [("rollout-naive", "small")] if args.naive else []
    extra = ["--threads", str(args.threads), "--runs", str(args.runs), "--warmup", str(args.warmup)]
    for w, s in jobs:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--workload", w, "--shape", s] + extra)
        if r.returncode != 0:
            sys.exit(f"torch_bench: workload {w} {s} failed ({r.returncode})")


def main(args):
    if args.workload == "all":
        return run_all(args)
    torch.set_num_threads(args.threads)
    load = os.getloadavg()[0]  # other processes on the machine skew every figure; recorded to judge the noise
    cfg = SHAPES[args.shape]
    log(f"pytorch {torch.__version__}: {args.workload} {args.shape if args.workload != 'sgemm' else ''}, "
        f"{torch.get_num_threads()} threads, {args.runs} runs after {args.warmup} warm-up")
    if args.workload == "train":
        res = bench_train(cfg, args)
    elif args.workload in ("rollout", "rollout-naive"):
        res = bench_rollout(cfg, args, naive=args.workload == "rollout-naive")
    else:
        res = bench_sgemm(args)
    peak = peak_rss_mb()
    rec = {"impl": "pytorch", "workload": args.workload, "shape": None if args.workload == "sgemm" else args.shape,
           "threads": torch.get_num_threads()}
    rec.update(res)
    rec["peak_rss_mb"] = peak
    rec["peak_rss_delta_mb"] = peak - res["baseline_rss_mb"]
    rec["torch_version"] = torch.__version__
    rec["blas"] = blas_library()
    rec["load_avg_1m"] = load
    if "/blas/libblas.so" in rec["blas"]:
        log(f"warning: torch is using the reference BLAS {rec['blas']} (slow, single-threaded); see "
            "scripts/bench/run.sh --torch-blas-dir for an OpenBLAS baseline")
    tps = f"{rec['tokens_per_s']:.1f} tok/s, " if rec["tokens_per_s"] is not None else ""
    log(f"=> {args.workload}: {tps}{rec['gflops']:.1f} GFLOP/s, peak RSS {peak:.0f} MB "
        f"(baseline {res['baseline_rss_mb']:.0f} MB)")
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main(ARGS)
