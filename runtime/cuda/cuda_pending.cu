// Placeholders for primitives whose kernels are being written; each one throws a clear error.
// DELETE a function here when its kernel file defines it.
#include "runtime/cuda/cuda_common.cuh"

namespace gtpo::cuda {

void CudaBackend::gemm(const GemmArgs& /*args*/) { fail("cuda: gemm is not implemented yet"); }
void CudaBackend::unary(UnaryOp /*op*/, const float* /*x*/, float* /*y*/, int64_t /*n*/, float /*scalar*/) { fail("cuda: unary is not implemented yet"); }
void CudaBackend::unary_backward(UnaryOp /*op*/, const float* /*x*/, const float* /*y*/, const float* /*gy*/, float* /*gx*/, int64_t /*n*/, float /*scalar*/) { fail("cuda: unary_backward is not implemented yet"); }
void CudaBackend::binary(BinaryOp /*op*/, const float* /*a*/, const float* /*b*/, float* /*out*/, const BinaryPlan& /*plan*/) { fail("cuda: binary is not implemented yet"); }
void CudaBackend::reduce_sum(const float* /*x*/, float* /*out*/, int64_t /*outer*/, int64_t /*len*/, int64_t /*inner*/, float /*scale*/) { fail("cuda: reduce_sum is not implemented yet"); }
void CudaBackend::expand_axis(const float* /*x*/, float* /*out*/, int64_t /*outer*/, int64_t /*len*/, int64_t /*inner*/, float /*scale*/) { fail("cuda: expand_axis is not implemented yet"); }
void CudaBackend::copy_2d(void* /*dst*/, int64_t /*dst_row_stride*/, const void* /*src*/, int64_t /*src_row_stride*/, int64_t /*rows*/, int64_t /*cols*/, size_t /*elem_size*/) { fail("cuda: copy_2d is not implemented yet"); }
void CudaBackend::permute(const float* /*x*/, float* /*out*/, const std::vector<int64_t>& /*shape*/, const std::vector<int64_t>& /*perm*/) { fail("cuda: permute is not implemented yet"); }
double CudaBackend::sum_squares(const float* /*x*/, int64_t /*n*/) { fail("cuda: sum_squares is not implemented yet"); }
void CudaBackend::attention_forward(const AttentionArgs& /*args*/, const float* /*q*/, const float* /*k*/, const float* /*v*/, float* /*out*/, float* /*lse*/) { fail("cuda: attention_forward is not implemented yet"); }
void CudaBackend::attention_backward(const AttentionArgs& /*args*/, const float* /*q*/, const float* /*k*/, const float* /*v*/, const float* /*out*/, const float* /*lse*/, const float* /*gout*/, float* /*gq*/, float* /*gk*/, float* /*gv*/) { fail("cuda: attention_backward is not implemented yet"); }
void CudaBackend::adamw_step(float* /*param*/, const float* /*grad*/, float* /*m*/, float* /*v*/, int64_t /*n*/, float /*lr*/, float /*beta1*/, float /*beta2*/, float /*eps*/, float /*weight_decay*/, float /*bias_correction1*/, float /*bias_correction2*/) { fail("cuda: adamw_step is not implemented yet"); }

}  // namespace gtpo::cuda
