// Losses over a vocabulary: cross-entropy, and the fused token log-prob + entropy used by RL.
//
// One block per row (up to 1024 threads for a 152k vocabulary). Forward takes two passes over the logits,
// as on the CPU: the max m of z = x * scale, then e^(z - m) with its sums. The sums are accumulated in
// double per thread over a strided slice and combined by the fixed-tree block_sum, so a row's result
// depends only on the vocab size. Backward is elementwise from the saved lse; the thread that owns the
// target's column writes its special value, so no element is written twice.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_losses_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::cross_entropy_forward(const float* logits, const int32_t* targets, float* loss, float* lse,
                                        int64_t rows, int64_t vocab, int32_t ignore_index) {
  GTPO_PRIMITIVE("cross_entropy_forward");
  if (rows <= 0 || vocab <= 0) return;
  GTPO_LAUNCH(cross_entropy_forward_kernel, row_grid(rows), row_threads(vocab), 0, stream_of(*this), logits,
              targets, loss, lse, rows, vocab, ignore_index);
}

void CudaBackend::cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                                         const float* grow, float* glogits, int64_t rows, int64_t vocab,
                                         int32_t ignore_index) {
  GTPO_PRIMITIVE("cross_entropy_backward");
  if (rows <= 0 || vocab <= 0) return;
  GTPO_LAUNCH(cross_entropy_backward_kernel, row_grid(rows), row_threads(vocab), 0, stream_of(*this), logits,
              targets, lse, grow, glogits, rows, vocab, ignore_index);
}

void CudaBackend::logprob_entropy_forward(const float* logits, const int32_t* targets, float* logprob, float* entropy,
                                          float* lse, int64_t rows, int64_t vocab, float inv_temperature) {
  GTPO_PRIMITIVE("logprob_entropy_forward");
  if (rows <= 0 || vocab <= 0) return;
  GTPO_LAUNCH(logprob_entropy_forward_kernel, row_grid(rows), row_threads(vocab), 0, stream_of(*this), logits,
              targets, logprob, entropy, lse, rows, vocab, inv_temperature);
}

void CudaBackend::logprob_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                                           const float* entropy, const float* glogprob, const float* gentropy,
                                           float* glogits, int64_t rows, int64_t vocab, float inv_temperature) {
  GTPO_PRIMITIVE("logprob_entropy_backward");
  if (rows <= 0 || vocab <= 0) return;
  GTPO_LAUNCH(logprob_entropy_backward_kernel, row_grid(rows), row_threads(vocab), 0, stream_of(*this),
              logits, targets, lse, entropy, glogprob, gentropy, glogits, rows, vocab, inv_temperature);
}

}  // namespace gtpo::cuda
