// The sampler's token choice kernel (runtime/cuda/cuda_token_choice_kernels.cuh) on the host emulation of
// thread blocks, launched as cuda_token_choice.cu launches it, against the CPU backend: the CPU's ids
// exactly, in every thread order. Usage: test_cuda_token_choice_emulated [name filter].
#include "kernel_check.h"  // first: emu.h defines what the kernel headers expect of CUDA
//
#include "runtime/cuda/cuda_row_math.cuh"
#include "runtime/cuda/cuda_token_choice_kernels.cuh"

namespace K = gtpo::cuda;

// cuda_token_choice.cu, on the emulator.
struct TokenChoiceEmu {
  void choose_tokens(const float* logits, const double* uniforms, int32_t* ids, int64_t rows, int64_t vocab,
                     const gtpo::TokenChoiceArgs& args) {
    if (rows <= 0 || args.choice_ids <= 0) return;
    emu_launch(K::choose_tokens_kernel, K::row_grid(rows), 1, K::kChoiceThreads, 0, logits, uniforms, ids,
               rows, vocab, args);
  }
};

// The token choice must give the CPU's ids exactly (tol < 0): every setting, rows wider and narrower than
// the block, ties, infinite and NaN logits, a choice prefix shorter than the row.
void token_choice_cases() {
  family = "token choice";
  struct S {
    int64_t rows, vocab, choice_ids;
  };
  const gtpo::TokenChoiceArgs settings[] = {{1.0f, 0, 1.0f, 0},  {0.0f, 0, 1.0f, 0},  {0.7f, 7, 1.0f, 0},
                                            {1.0f, 0, 0.85f, 0}, {1.3f, 50, 0.6f, 0}, {1.0f, 1, 1.0f, 0}};
  for (S s : {S{3, 5, 5}, S{4, 300, 300}, S{16, 1000, 990}, S{2, 50257, 50257}}) {
    std::vector<float> x = uniform(s.rows * s.vocab, -4, 4);
    std::vector<double> u(
        static_cast<size_t>(s.rows));  // every other row draws from the tail the cuts decide
    for (size_t r = 0; r < u.size(); ++r)
      u[r] = std::uniform_real_distribution<double>(r % 2 ? 0.97 : 0, 1)(rng);
    if (s.vocab == 300) {  // ties, a few coarse values, -inf, NaN and +inf
      for (int64_t k = 0; k < s.vocab; ++k) x[k] = static_cast<float>(k % 4);
      x[s.vocab + 3] = x[s.vocab + 200] = kNaN;
      x[2 * s.vocab + 5] = -kInf;
      x[3 * s.vocab + 17] = x[3 * s.vocab + 99] = kInf;
    }
    for (gtpo::TokenChoiceArgs a : settings) {
      a.choice_ids = s.choice_ids;
      char tag[96];
      snprintf(tag, sizeof tag, "%lldx%lld T %.1f top_k %lld top_p %.2f", static_cast<long long>(s.rows),
               static_cast<long long>(s.vocab), a.temperature, static_cast<long long>(a.top_k), a.top_p);
      check_on<TokenChoiceEmu>(tag, -1, [&](auto& be) {
        std::vector<int32_t> ids(static_cast<size_t>(s.rows), -7);
        be.choose_tokens(x.data(), u.data(), ids.data(), s.rows, s.vocab, a);
        return Outs{std::vector<double>(ids.begin(), ids.end())};
      });
      if (s.vocab > 1000 && a.top_p < 1.0f) break;  // the big vocabulary: the cheap settings and one top-p
    }
  }
}

int main(int argc, char** argv) {
  filter = argc > 1 ? argv[1] : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  token_choice_cases();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("%d cases, %d failures, %.1f s, %lld fiber switches\n", cases, failures, s, emu::switches);
  return failures != 0 || cases == 0;
}
