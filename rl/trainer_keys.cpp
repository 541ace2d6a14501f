// The optim, train and log sections' rows: what the trainer (rl/run/trainer.cpp) reads. They sit here, in
// the schema's floor, so that parsing a config does not link the trainer.
#include <limits>

#include "rl/run_config_schema.h"

namespace gtpo::rl::schema {

std::vector<RunKey> optim_keys() {
  using config::field;
  using config::number;
  const double inf = std::numeric_limits<double>::infinity();
  return {
      field("optim", "lr", &RunConfig::optim, &OptimSection::lr, number(0, inf, true),
            "peak learning rate of the RL updates (AdamW)"),
      field("optim", "beta1", &RunConfig::optim, &OptimSection::beta1, number(0, 1, false, true), "AdamW β1"),
      field("optim", "beta2", &RunConfig::optim, &OptimSection::beta2, number(0, 1, false, true), "AdamW β2"),
      field("optim", "eps", &RunConfig::optim, &OptimSection::eps, number(0, inf, true), "AdamW ε"),
      field("optim", "weight_decay", &RunConfig::optim, &OptimSection::weight_decay, number(0, inf),
            "decoupled weight decay"),
      field("optim", "grad_clip", &RunConfig::optim, &OptimSection::grad_clip, number(0, inf),
            "clip the global gradient norm to this; 0 = off"),
      field("optim", "schedule", &RunConfig::optim, &OptimSection::schedule, schema::schedule_codec(),
            "learning-rate schedule over train.steps"),
      field("optim", "warmup_steps", &RunConfig::optim, &OptimSection::warmup_steps,
            config::integer<int64_t>(0), "linear warm-up steps (not with schedule constant)"),
      field("optim", "min_lr_ratio", &RunConfig::optim, &OptimSection::min_lr_ratio, number(0, 1),
            "cosine: final learning rate as a fraction of lr"),
  };
}

std::vector<RunKey> train_keys() {
  using config::field;
  const auto i64 = [](int64_t lo) { return config::integer<int64_t>(lo); };
  return {
      field("train", "steps", &RunConfig::train, &TrainSection::steps, i64(0), "RL steps"),
      field("train", "prompts_per_step", &RunConfig::train, &TrainSection::prompts_per_step,
            config::integer<int64_t>(1, 1 << 20),
            "prompts per RL step (each gets sampler.group_size responses)"),
      field("train", "seed", &RunConfig::train, &TrainSection::seed, config::integer<uint64_t>(0),
            "seed of initialisation, data order and sampling"),
      field("train", "out_dir", &RunConfig::train, &TrainSection::out_dir, config::text(),
            "run directory: config, metrics.jsonl, samples, checkpoints; must be new or empty (gtpo train "
            "--resume continues a run, --overwrite starts over)"),
      field(
          "train", "init_from", &RunConfig::train, &TrainSection::init_from, config::text(),
          "checkpoint directory to start from (its own model config is used: a model section that differs is "
          "ignored, with a warning); empty = a new model from the model section and train.seed"),
      field("train", "checkpoint_every", &RunConfig::train, &TrainSection::checkpoint_every, i64(0),
            "checkpoint every this many steps; 0 = only at the end"),
      field("train", "keep_checkpoints", &RunConfig::train, &TrainSection::keep_checkpoints, i64(0),
            "keep only the newest this many checkpoints (older ones are deleted after each save); 0 = keep "
            "all"),
      field("train", "sample_every", &RunConfig::train, &TrainSection::sample_every, i64(0),
            "log sampled completions every this many steps; 0 = never"),
      field("train", "threads", &RunConfig::train, &TrainSection::threads, i64(0),
            "CPU threads; 0 = one per core, fewer when other processes keep cores busy (measured at the "
            "start)"),
      field(
          "train", "device", &RunConfig::train, &TrainSection::device,
          config::choice<Device>({{"cpu", Device::cpu}, {"cuda", Device::cuda}}),
          "where the model lives and every op runs (cuda needs a GPU build and a visible GPU; docs/cuda.md)"),
      field("train", "matmul_precision", &RunConfig::train, &TrainSection::matmul_precision,
            config::choice<MatmulPrecision>({{"fp32", MatmulPrecision::fp32},
                                             {"tf32", MatmulPrecision::tf32},
                                             {"bf16", MatmulPrecision::bf16}}),
            "GEMM (and GPU attention) inputs: fp32 exact; tf32 and bf16 round inputs for speed (device cuda "
            "only)"),
      field(
          "train", "deterministic", &RunConfig::train, &TrainSection::deterministic, config::boolean(),
          "cuda: bitwise-repeatable kernels and cuBLAS at some speed cost; the CPU is always deterministic"),
      field("train", "exact_decode", &RunConfig::train, &TrainSection::exact_decode, config::boolean(),
            "cpu: the sampler's decode attention sums in the training forward's order, so its log-probs are "
            "the trainer's bit for bit (sampler_gap_max 0) at a cost in rollout speed (docs/performance.md); "
            "no effect on cuda"),
      // Read by apps/cmd_train.cpp, which builds the communicator the trainer gets.
      field("train", "collective_timeout_s", &RunConfig::train, &TrainSection::collective_timeout_s,
            config::number(0, std::numeric_limits<double>::infinity()),
            "mpirun runs: a rank waiting this long for the others (one died or hangs) aborts the job; must "
            "exceed rank 0's eval and checkpoint time; 0 = wait forever (docs/distributed.md)"),
  };
}

std::vector<RunKey> log_keys() {
  using config::field;
  return {
      field("log", "every", &RunConfig::log, &LogSection::every, config::integer<int64_t>(1),
            "print a full step line every this many RL steps (metrics.jsonl always has every step); on a "
            "terminal a line updated in place shows every step"),
      field("log", "progress", &RunConfig::log, &LogSection::progress, config::boolean(),
            "print progress (step lines, the in-place line, eval results); warnings are printed regardless"),
      field("log", "samples", &RunConfig::log, &LogSection::samples, config::integer<int64_t>(0),
            "completions logged at each train.sample_every step"),
      field("log", "tensorboard", &RunConfig::log, &LogSection::tensorboard, config::boolean(),
            "also write the run's scalars as a TensorBoard event file, "
            "RUN/tensorboard/events.out.tfevents.gtpo, rewritten with report.html at each eval and "
            "checkpoint (tensorboard --logdir RUN/tensorboard; docs/metrics.md); gtpo report --tensorboard "
            "DIR writes it for any run"),
  };
}

}  // namespace gtpo::rl::schema
