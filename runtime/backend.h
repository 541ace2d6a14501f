// The backend seam: the small set of primitives every device implements.
//
// Ops (runtime/ops) own shapes, validation and autograd; a backend only moves numbers. All pointers are
// device pointers of the backend that receives them. Every primitive that reduces must give results
// that do not depend on the number of threads (CPU) or on scheduling (GPU deterministic mode), because
// gtpo promises bitwise-identical runs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/rope_frequencies.h"

namespace gtpo {

enum class UnaryOp : uint8_t {
  neg,         // -x
  exp,         // e^x
  log,         // ln x
  relu,        // max(x, 0)
  gelu_tanh,   // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  silu,        // x * sigmoid(x)
  sigmoid,     // 1 / (1 + e^-x)
  tanh,        // tanh x
  sqrt,        // sqrt x
  square,      // x^2
  reciprocal,  // 1 / x
  scale,       // x * s
  add_scalar,  // x + s
  pow_scalar,  // x^s
};

enum class BinaryOp : uint8_t { add, sub, mul, div };

// How an operand of a binary op is laid out relative to the [rows, cols] output.
enum class BroadcastMode : uint8_t {
  full,         // operand has rows*cols elements, index r*cols + c
  repeat_rows,  // operand has cols elements (a trailing-dims suffix), index c
  repeat_cols,  // operand has rows elements (leading dims, trailing size-1 dims), index r
};

// reduce_sum's chunk of consecutive inputs (Backend::reduce_sum).
constexpr int64_t kReduceChunkRows = 64;

struct BinaryPlan {
  int64_t rows = 1;
  int64_t cols = 1;
  BroadcastMode a = BroadcastMode::full;
  BroadcastMode b = BroadcastMode::full;
};

// C[batch] = alpha * op(A[batch]) * op(B[batch]) + beta * C[batch], row-major.
// op(A) is [m, k], op(B) is [k, n], C is [m, n]. lda/ldb/ldc are row strides of the stored matrices.
struct GemmArgs {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const float* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  float* c = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
};

// Fused causal attention over q [batch, q_len, q_heads, head_dim] and k, v [batch, kv_len, kv_heads,
// head_dim] (k and v rows may be strided by kv_batch_stride to read from a larger KV cache).
// Query i sits at position i + (kv_len - q_len): it sees key j iff j <= i + kv_len - q_len and, when a
// key mask is given, key_mask[b * kv_len + j] != 0. A query that sees no key outputs zeros.
struct AttentionArgs {
  int64_t batch = 0, q_len = 0, kv_len = 0;
  int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t kv_batch_stride = 0;  // elements between batch entries of k and v; 0 means kv_len*kv_heads*head_dim
  float scale = 1.0f;           // usually 1/sqrt(head_dim)
  const int32_t* key_mask = nullptr;
  // Optional shared prefix (a group of samples decoding from one prompt): positions j < prefix_len of batch
  // entry b are read from entry b / prefix_group of prefix_k / prefix_v (rows laid out like k, entries
  // prefix_batch_stride elements apart) instead of from k / v. Forward only; every backend has it.
  const float* prefix_k = nullptr;
  const float* prefix_v = nullptr;
  int64_t prefix_len = 0, prefix_group = 1, prefix_batch_stride = 0;
  // Optional [batch, 2]: only queries [query_range[2b], query_range[2b + 1]) of entry b attend; the others
  // see no key (zero output, lse -inf, zero gradient) and cost nothing. Only on backends whose
  // supports(Capability::attention_query_range) is true; ops::attention leaves it null elsewhere.
  const int32_t* query_range = nullptr;
  // Optional [batch]: batch entry b reads entry kv_rows[b] of k and v (and prefix entry kv_rows[b] /
  // prefix_group) instead of entry b, so that the rows still decoding are a batch of their own over a cache
  // that keeps every row. key_mask stays per batch entry. Forward only, and only on backends whose
  // supports(Capability::attention_kv_rows) is true; ops check both.
  const int32_t* kv_rows = nullptr;
};

// How the sampler draws a token from each row of logits (runtime/token_choice.h defines the draw).
struct TokenChoiceArgs {
  float temperature = 1.0f;  // 0: greedy (the largest logit, lowest id on ties)
  int64_t top_k = 0;         // 0 or >= choice_ids: off
  float top_p = 1.0f;        // 1: off
  int64_t choice_ids = 0;    // only ids [0, choice_ids) are drawn (a prefix of each row of vocab logits)
};

// How GEMMs (and, on a GPU, attention) compute. fp32 is exact IEEE single precision everywhere; tf32 and
// bf16 are GPU-only speed modes (inputs rounded, accumulation and stored results stay fp32).
enum class MatmulPrecision : uint8_t { fp32, tf32, bf16 };

inline const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::fp32: return "fp32";
    case MatmulPrecision::tf32: return "tf32";
    case MatmulPrecision::bf16: return "bf16";
  }
  return "?";
}

struct BackendOptions {
  MatmulPrecision matmul_precision = MatmulPrecision::fp32;
  // GPU: no atomics in reductions and a fixed cuBLAS workspace/algorithm, so runs repeat bit for bit on the
  // same GPU. The CPU backend is always deterministic.
  bool deterministic = true;
  // CPU: decode attention (a few queries per row) takes the training forward's order, so a sampled token's
  // log-prob is the one the training forward gives it, bit for bit, at a cost in decode speed
  // (docs/performance.md). No effect on a GPU.
  bool exact_decode = false;
};

// Features a backend may or may not have (Backend::supports).
enum class Capability {
  fused_swiglu,           // swiglu_forward / swiglu_backward exist (else ops::swiglu composes silu and mul)
  attention_query_range,  // attention_forward / _backward honour AttentionArgs::query_range (else every
                          // query)
  attention_kv_rows,      // attention_forward honours AttentionArgs::kv_rows
};

// One decoupled AdamW step's scalars (Backend::adamw_step); the bias corrections are 1 - beta^t.
struct AdamWStep {
  float lr = 0.0f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  float bias_correction1 = 1.0f, bias_correction2 = 1.0f;
};

// One primitive's share of a profile (Backend::profile): its calls and their total time.
struct PrimitiveTime {
  std::string name;
  int64_t calls = 0;
  double seconds = 0.0;
};

class Backend {
 public:
  Backend();  // both out of line: the profile is a type of primitive_profile.cpp
  virtual ~Backend();
  virtual Device device() const = 0;
  virtual const char* name() const = 0;
  // Backends that have nothing to switch (the CPU) keep the defaults; unsupported modes throw gtpo::Error.
  virtual void configure(const BackendOptions& options) { options_ = options; }
  const BackendOptions& options() const { return options_; }

  // The primitives every backend implements (runtime/backend_primitives.h).
#define GTPO_BACKEND_PRIMITIVE(ret, name, params) virtual ret name params = 0;
#include "runtime/backend_primitives.h"
#undef GTPO_BACKEND_PRIMITIVE

  // ---- with a default ------------------------------------------------------------------------
  virtual void synchronize() {}
  // Host memory that this device copies to and from fastest, for buffers a loop reuses (the sampler's
  // logits): page-locked on a GPU (a pageable copy ran at ~9.5 GB/s on an H200), plain aligned memory on the
  // CPU. Release with free_host; not cached, so allocate once per loop, not per step.
  virtual void* allocate_host(size_t bytes);
  virtual void free_host(void* ptr);
  // The width of the column panels into which gemm packs a transposed B (stored [n, k]) anew on every call
  // at this size, as the CPU's register kernel does; 0 where it reads B as it is (cuBLAS, Eigen's tiles).
  // A weight multiplied by a few rows many times (decoding) is then packed once: ops::prepare_weight.
  virtual int64_t gemm_b_panel_width(int64_t k, int64_t n) const;
  // Optional features are asked for with supports(), one general query (as ggml's supports_op), so a new
  // optional feature is a Capability value, not another virtual. None by default.
  virtual bool supports(Capability capability) const;
  // Only where supports(Capability::fused_swiglu): out = silu(gate) * up over n elements, and its backward
  // (ggate, gup overwritten), each in one pass, with the bits of the unary silu and binary mul they replace.
  virtual void swiglu_forward(const float* gate, const float* up, float* out, int64_t n);
  virtual void swiglu_backward(const float* gate, const float* up, const float* gout, float* ggate,
                               float* gup, int64_t n);
  // One buffer's sum_squares_each.
  double sum_squares(const float* x, int64_t n) {
    double out = 0.0;
    sum_squares_each({x}, {n}, &out);
    return out;
  }

  // ---- per-primitive timing (runtime/primitive_profile.*) --------------------------------------
  // Off by default (gtpo bench --profile). While on, every primitive call adds its time to its name's
  // total: host time on the CPU, whose primitives return when done; device time between two events on the
  // GPU's stream. A primitive that calls others counts once, as itself. Off, a call costs one branch.
  void set_profiling(bool on);  // on: starts from empty totals
  bool profiling() const { return profile_ != nullptr; }
  std::vector<PrimitiveTime> profile();  // the totals so far, largest first (waits for queued work)
  void profile_begin(const char* name);  // GTPO_PRIMITIVE's scope calls these while profiling
  void profile_end();

 protected:
  // The clock: the host's by default; a device overrides all three (stop_timing may leave the time pending
  // until flush_timings, which add_timing's it).
  virtual void start_timing(const char* name);
  virtual void stop_timing();
  virtual void flush_timings() {}
  void add_timing(const char* name, double seconds);

  BackendOptions options_;

 private:
  struct Profile;                     // primitive_profile.cpp
  std::unique_ptr<Profile> profile_;  // null while not profiling
};

// The backend for a device; throws gtpo::Error when that device is not available in this build or machine.
Backend& backend_for(Device device);
bool device_available(Device device);
// How a backend joins: its library registers a probe (from a static initialiser), and the registry calls it
// once, the first time that device is asked for, so CPU-only runs never initialise a GPU driver. The
// registry knows no concrete backend; the CPU backend is always there.
using BackendProbe = Backend* (*)();  // nullptr when the device is not usable on this machine
void register_backend_probe(Device device, BackendProbe probe);
// Whether a probe for DEVICE was linked into this program (a build with that backend).
bool backend_built(Device device);

}  // namespace gtpo
