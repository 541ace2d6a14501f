// The adaptive entropy coefficient of rl.entropy_target (docs/algorithms.md, "Entropy target"), after
// Skywork-OR1's adaptive entropy control (He et al. 2025, "Skywork Open Reasoner 1 Technical Report",
// arXiv 2505.22312, the MAGIC loss's "Adaptive Entropy Control"): after every RL step k, with e_k the step's
// entropy_mean (the mean token entropy of its kept sampled responses),
//   c_{k+1} = c_k + Δ   when e_k < target,   c_k − Δ   when e_k > target,   c_k   when equal,
// Δ = rl.entropy_target_step, c_1 = rl.entropy_coef; step k's update adds −c_k · (mean entropy) to the loss.
// Unlike Skywork-OR1, c is not clamped at 0 and the bonus is not switched off above the target, so c may
// become an entropy penalty and a target below the policy's entropy lowers it too.
#pragma once

namespace gtpo::rl {

// c_{k+1} from c_k = COEF, the target, Δ = STEP_SIZE and e_k = ENTROPY_MEAN (a NaN e_k leaves c as it is).
double next_entropy_coef(double coef, double target, double step_size, double entropy_mean);

}  // namespace gtpo::rl
