// Placeholders for primitives whose kernels are being written; each one throws a clear error.
// DELETE a function here when its kernel file defines it.
#include "runtime/cuda/cuda_common.cuh"

namespace gtpo::cuda {

void CudaBackend::softmax_forward(const float* /*x*/, float* /*y*/, int64_t /*rows*/, int64_t /*cols*/, bool /*log_softmax*/) { fail("cuda: softmax_forward is not implemented yet"); }
void CudaBackend::softmax_backward(const float* /*y*/, const float* /*gy*/, float* /*gx*/, int64_t /*rows*/, int64_t /*cols*/, bool /*log_softmax*/) { fail("cuda: softmax_backward is not implemented yet"); }
void CudaBackend::layer_norm_forward(const float* /*x*/, const float* /*weight*/, const float* /*bias*/, float* /*y*/, float* /*mean*/, float* /*rstd*/, int64_t /*rows*/, int64_t /*cols*/, float /*eps*/) { fail("cuda: layer_norm_forward is not implemented yet"); }
void CudaBackend::layer_norm_backward(const float* /*x*/, const float* /*weight*/, const float* /*mean*/, const float* /*rstd*/, const float* /*gy*/, float* /*gx*/, float* /*gweight*/, float* /*gbias*/, int64_t /*rows*/, int64_t /*cols*/) { fail("cuda: layer_norm_backward is not implemented yet"); }
void CudaBackend::rms_norm_forward(const float* /*x*/, const float* /*weight*/, float* /*y*/, float* /*rstd*/, int64_t /*rows*/, int64_t /*cols*/, float /*eps*/) { fail("cuda: rms_norm_forward is not implemented yet"); }
void CudaBackend::rms_norm_backward(const float* /*x*/, const float* /*weight*/, const float* /*rstd*/, const float* /*gy*/, float* /*gx*/, float* /*gweight*/, int64_t /*rows*/, int64_t /*cols*/) { fail("cuda: rms_norm_backward is not implemented yet"); }
void CudaBackend::embedding_forward(const float* /*table*/, const int32_t* /*ids*/, float* /*out*/, int64_t /*n*/, int64_t /*dim*/) { fail("cuda: embedding_forward is not implemented yet"); }
void CudaBackend::embedding_backward(const int32_t* /*ids*/, const float* /*gy*/, float* /*gtable*/, int64_t /*n*/, int64_t /*dim*/, int64_t /*vocab*/) { fail("cuda: embedding_backward is not implemented yet"); }
void CudaBackend::rope(const float* /*x*/, const int32_t* /*positions*/, float* /*out*/, int64_t /*rows*/, int64_t /*heads*/, int64_t /*head_dim*/, float /*theta*/, bool /*inverse*/) { fail("cuda: rope is not implemented yet"); }
void CudaBackend::cross_entropy_forward(const float* /*logits*/, const int32_t* /*targets*/, float* /*loss*/, float* /*lse*/, int64_t /*rows*/, int64_t /*vocab*/, int32_t /*ignore_index*/) { fail("cuda: cross_entropy_forward is not implemented yet"); }
void CudaBackend::cross_entropy_backward(const float* /*logits*/, const int32_t* /*targets*/, const float* /*lse*/, const float* /*grow*/, float* /*glogits*/, int64_t /*rows*/, int64_t /*vocab*/, int32_t /*ignore_index*/) { fail("cuda: cross_entropy_backward is not implemented yet"); }
void CudaBackend::logprob_entropy_forward(const float* /*logits*/, const int32_t* /*targets*/, float* /*logprob*/, float* /*entropy*/, float* /*lse*/, int64_t /*rows*/, int64_t /*vocab*/, float /*inv_temperature*/) { fail("cuda: logprob_entropy_forward is not implemented yet"); }
void CudaBackend::logprob_entropy_backward(const float* /*logits*/, const int32_t* /*targets*/, const float* /*lse*/, const float* /*entropy*/, const float* /*glogprob*/, const float* /*gentropy*/, float* /*glogits*/, int64_t /*rows*/, int64_t /*vocab*/, float /*inv_temperature*/) { fail("cuda: logprob_entropy_backward is not implemented yet"); }

}  // namespace gtpo::cuda
