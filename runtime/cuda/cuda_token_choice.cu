// The sampler's token choice (runtime/token_choice.h): one block of kTokenChoiceLanes threads per row.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_row_math.cuh"
#include "runtime/cuda/cuda_token_choice_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::choose_tokens(const float* logits, const double* uniforms, int32_t* ids, int64_t rows,
                                int64_t vocab, const TokenChoiceArgs& args) {
  GTPO_PRIMITIVE("choose_tokens");
  if (rows <= 0 || args.choice_ids <= 0) return;
  GTPO_LAUNCH(choose_tokens_kernel, row_grid(rows), kChoiceThreads, 0, stream_of(*this), logits, uniforms,
              ids, rows, vocab, args);
}

}  // namespace gtpo::cuda
