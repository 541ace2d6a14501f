#!/usr/bin/env python3
"""gtpo's RL job run in TRL's GRPOTrainer, timed per step; prints one JSON line.

Set up like `gtpo train` (issue 18): the same SFT checkpoint (a gtpo checkpoint directory loads in
transformers' AutoModelForCausalLM as it is), gtpo's tokenizer from that directory as a PreTrainedTokenizerFast,
the same prompts per step in the same order (--prompts: a JSONL of {"step", "prompt", "answer"} that
scripts/bench/trl_compare.sh writes from a gtpo run's samples.jsonl), the same reward rule (gtpo's verifier:
the number after the last '####' equals the answer; a response cut at max_new_tokens is incorrect, as in gtpo)
and the same hyperparameters (group size, temperature, max_new_tokens, lr, AdamW betas, grad clip, beta 0,
clip epsilons, GRPO loss with seq-mean-token-mean aggregation, one optimiser step per RL step).

Timed per RL step (medians over the steps after --skip-steps warm-up steps):
  step_s       whole optimiser step (TrainerCallback on_step_begin -> on_step_end)
  rollout_s    GRPOTrainer._generate_and_score_completions: generation, rewards, advantages
  generate_s   GRPOTrainer._generate_single_turn: model.generate and cutting at EOS
  update_s     step_s - rollout_s: forward, backward and optimiser step
Also the generated tokens per second of generation, peak RSS (getrusage ru_maxrss, the whole process:
model load, training, evaluation) and, with --test, greedy accuracy on those test prompts after training.

usage: python trl_bench.py --checkpoint DIR --prompts FILE.jsonl [--test FILE.jsonl] [options]
  python=$(scripts/bench/trl_python.sh) && "$python" scripts/bench/trl_bench.py --help
"""
import argparse
import json
import math
import os
import re
import resource
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="gtpo checkpoint directory (the SFT weights and tokenizer)")
    p.add_argument("--prompts", required=True,
                   help='JSONL, one line per prompt in step order: {"step": S, "prompt": TEXT, "answer": A}')
    p.add_argument("--test", help='JSONL of test problems {"prompt", "answer"} (gtpo eval --out); greedy accuracy')
    p.add_argument("--steps", type=int, required=True, help="RL steps (the prompts file must cover them)")
    p.add_argument("--prompts-per-step", type=int, required=True)
    p.add_argument("--group-size", type=int, required=True)
    p.add_argument("--temperature", type=float, required=True)
    p.add_argument("--max-new-tokens", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--adam-eps", type=float, default=1e-8)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--clip-low", type=float, default=0.2)
    p.add_argument("--clip-high", type=float, default=0.2)
    p.add_argument("--kl-coef", type=float, default=0.0, help="TRL's beta")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (default: nproc)")
    p.add_argument("--skip-steps", type=int, default=1, help="warm-up steps left out of the medians (default 1)")
    p.add_argument("--save", help="write the trained model and tokenizer here (save_pretrained)")
    p.add_argument("--out-dir", default=None, help="TrainingArguments.output_dir (default: a temporary directory)")
    p.add_argument("--label", default="", help="copied into the JSON line")
    a = p.parse_args()
    for name in ("steps", "prompts_per_step", "group_size", "max_new_tokens", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(a, name)}")
    if a.group_size < 2:
        p.error("--group-size must be >= 2 (GRPO needs a group)")
    if not 0 <= a.skip_steps < a.steps:
        p.error(f"--skip-steps must be in [0, --steps), got {a.skip_steps}")
    for path, what in ((a.checkpoint, "--checkpoint"),):
        if not os.path.isdir(path):
            p.error(f"{what} {path}: not a directory")
    for path, what in ((a.prompts, "--prompts"), (a.test, "--test")):
        if path is not None and not os.path.isfile(path):
            p.error(f"{what} {path}: no such file")
    return a


# ---- gtpo's verifier (data/verify/answer.cpp), the part the arith task uses ---------------------------------

_NUM = re.compile(r"^(\d+|\d{1,3}(,\d{3})+)$")


def normalize_number(text):
    s = re.sub(r"\s", "", text)
    neg = False
    if s[:1] in ("+", "-"):
        neg, s = s[0] == "-", s[1:]
    if s[:1] == "$":
        s = s[1:]
    if s.endswith("."):
        s = s[:-1]
    if not s:
        return None
    int_part, dot, frac = s.partition(".")
    if dot and not frac:
        return None
    if dot and not frac.isdigit():
        return None
    if not int_part and not frac:
        return None
    if int_part:
        if not _NUM.match(int_part):
            return None
        whole = int_part.replace(",", "").lstrip("0") or "0"
    else:
        whole = "0"
    frac = frac.rstrip("0")
    out = whole + ("." + frac if frac else "")
    return "-" + out if neg and out != "0" else out


def answers_match(expected, got):
    a, b = normalize_number(expected), normalize_number(got)
    if a is not None and b is not None:
        return a == b
    if a is not None or b is not None:
        return False
    return re.sub(r"\s", "", expected) == re.sub(r"\s", "", got)


def is_correct(expected, completion):
    marker = completion.rfind("####")
    if marker < 0:
        return False
    got = completion[marker + 4:].split("\n", 1)[0].strip()
    return bool(got) and answers_match(expected, got)


# ---- the run --------------------------------------------------------------------------------------------------

def read_jsonl(path, keys):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"trl_bench: {path}:{n}: not JSON ({e})")
            missing = [k for k in keys if k not in row]
            if missing:
                sys.exit(f"trl_bench: {path}:{n}: missing key(s) {missing}; expected {keys}")
            rows.append(row)
    return rows


def main():
    a = parse_args()
    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    prompts = read_jsonl(a.prompts, ["step", "prompt", "answer"])
    need = a.steps * a.prompts_per_step
    if len(prompts) < need:
        sys.exit(f"trl_bench: {a.prompts}: {len(prompts)} prompts, need {need} "
                 f"(--steps {a.steps} x --prompts-per-step {a.prompts_per_step})")
    prompts = prompts[:need]
    for i, row in enumerate(prompts):
        if row["step"] != i // a.prompts_per_step + 1:
            sys.exit(f"trl_bench: {a.prompts}: line {i + 1} has step {row['step']}, expected "
                     f"{i // a.prompts_per_step + 1} with {a.prompts_per_step} prompts per step")

    tokenizer = AutoTokenizer.from_pretrained(a.checkpoint)
    if tokenizer.pad_token_id is None or tokenizer.eos_token_id is None:
        sys.exit(f"trl_bench: {a.checkpoint}: tokenizer has no pad or eos token")
    model = AutoModelForCausalLM.from_pretrained(a.checkpoint, dtype=torch.float32)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    n_params = sum(p.numel() for p in model.parameters())

    expected_by_step = [[r["prompt"] for r in prompts[s * a.prompts_per_step:(s + 1) * a.prompts_per_step]]
                        for s in range(a.steps)]
    seen_by_call = []  # prompts the reward function saw, one list per call (= per RL step)
    eos_id = tokenizer.eos_token_id

    def arith_reward(prompts, completions, completion_ids, answer, **_):
        # TRL's RepeatSampler hands each prompt G times in a row: every G-th is the step's prompt list (a prompt
        # text can occur twice in a step: the train stream draws problems at random).
        if any(prompts[i] != prompts[i - i % a.group_size] for i in range(len(prompts))):
            sys.exit("trl_bench: TRL did not hand each prompt group_size times in a row")
        seen_by_call.append(list(prompts[::a.group_size]))
        # A response without EOS was cut at max_new_tokens: incorrect, as in gtpo.
        return [float(bool(ids) and ids[-1] == eos_id and is_correct(ans, text))
                for text, ids, ans in zip(completions, completion_ids, answer)]

    batch = a.prompts_per_step * a.group_size
    out_dir = a.out_dir or os.path.join(os.environ.get("TMPDIR", "/tmp"), f"trl_bench_{os.getpid()}")
    config = GRPOConfig(
        output_dir=out_dir, report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True,
        use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False, seed=a.seed,
        max_steps=a.steps, per_device_train_batch_size=batch, gradient_accumulation_steps=1,
        num_generations=a.group_size, shuffle_dataset=False, remove_unused_columns=False,
        max_completion_length=a.max_new_tokens, temperature=a.temperature, top_p=1.0, top_k=0,
        learning_rate=a.lr, lr_scheduler_type="constant", warmup_steps=0, adam_beta1=a.beta1, adam_beta2=a.beta2,
        adam_epsilon=a.adam_eps, weight_decay=a.weight_decay, max_grad_norm=a.grad_clip,
        beta=a.kl_coef, epsilon=a.clip_low, epsilon_high=a.clip_high, num_iterations=1,
        loss_type="grpo", scale_rewards="group", mask_truncated_completions=False, log_completions=False,
        dataloader_num_workers=0,
    )

    timings = {"rollout": [], "generate": [], "tokens": []}

    class TimedGRPOTrainer(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            t = time.perf_counter()
            out = super()._generate_and_score_completions(inputs)
            timings["rollout"].append(time.perf_counter() - t)
            timings["tokens"].append(int(out["completion_mask"].sum()))
            return out

        def _generate_single_turn(self, *args, **kwargs):
            t = time.perf_counter()
            out = super()._generate_single_turn(*args, **kwargs)
            timings["generate"].append(time.perf_counter() - t)
            return out

    step_times = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            step_times.append(time.perf_counter() - self.t)

    logs_list = []

    class LogKeeper(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                logs_list.append(dict(logs))

    dataset = Dataset.from_list([{"prompt": r["prompt"], "answer": str(r["answer"])} for r in prompts])
    trainer = TimedGRPOTrainer(model=model, reward_funcs=arith_reward, args=config, train_dataset=dataset,
                               processing_class=tokenizer, callbacks=[StepTimer(), LogKeeper()])
    t0 = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t0

    if len(step_times) != a.steps or len(timings["rollout"]) != a.steps:
        sys.exit(f"trl_bench: expected {a.steps} steps and rollouts, timed {len(step_times)} and "
                 f"{len(timings['rollout'])} (TRL changed how it batches?)")
    prompts_match = seen_by_call == expected_by_step

    model = trainer.model
    model.eval()
    accuracy = None
    if a.test:
        test = read_jsonl(a.test, ["prompt", "answer"])
        correct = 0
        tokenizer.padding_side = "left"
        with torch.no_grad():
            for i in range(0, len(test), 64):
                chunk = test[i:i + 64]
                enc = tokenizer([r["prompt"] for r in chunk], return_tensors="pt", padding=True)
                out = model.generate(**enc, do_sample=False, max_new_tokens=a.max_new_tokens,
                                     pad_token_id=tokenizer.pad_token_id, eos_token_id=eos_id)
                for row, ids in zip(chunk, out[:, enc["input_ids"].shape[1]:].tolist()):
                    if eos_id in ids:
                        text = tokenizer.decode(ids[:ids.index(eos_id)], skip_special_tokens=True)
                        correct += is_correct(str(row["answer"]), text)
        accuracy = correct / len(test)
    if a.save:
        model.save_pretrained(a.save)
        tokenizer.save_pretrained(a.save)

    k = a.skip_steps
    med = lambda xs: statistics.median(xs[k:])  # noqa: E731
    steps = step_times
    update = [s - r for s, r in zip(steps, timings["rollout"])]
    result = {
        "impl": "trl", "label": a.label, "steps": a.steps, "timed_steps": a.steps - k, "params": n_params,
        "threads": a.threads, "step_s": med(steps), "rollout_s": med(timings["rollout"]),
        "generate_s": med(timings["generate"]), "update_s": med(update),
        "generate_tokens_per_s": sum(timings["tokens"][k:]) / sum(timings["generate"][k:]),
        "tokens_per_step": statistics.mean(timings["tokens"][k:]),
        "train_s": train_s, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "greedy_accuracy": accuracy, "test_problems": len(test) if a.test else 0,
        "reward_mean_last": logs_list[-1].get("reward") if logs_list else None,
        "prompts_match": prompts_match,
        # Every step's seconds (warm-up steps included), for percentiles on a noisy machine.
        "per_step": {"step_s": steps, "rollout_s": timings["rollout"], "generate_s": timings["generate"],
                     "update_s": update, "tokens": timings["tokens"]},
        "versions": {"trl": trl.__version__, "transformers": transformers.__version__, "torch": torch.__version__},
    }
    if not math.isfinite(result["step_s"]):
        sys.exit("trl_bench: non-finite timing")
    print(json.dumps(result), flush=True)
    if not prompts_match:
        print("trl_bench: the prompts TRL scored differ from --prompts per step (see prompts_match)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
