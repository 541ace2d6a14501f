// The adaptive entropy coefficient of rl.entropy_target (docs/algorithms.md, "Entropy target"), after
// Skywork-OR1's adaptive entropy control (He et al. 2025, "Skywork Open Reasoner 1 Technical Report",
// Sec. 3.2.5): after every step k, with e_k the step's mean token entropy of the sampled responses,
//   c_{k+1} = c_k + Δ   when e_k < target,   c_k − Δ   when e_k > target,   c_k   when equal,
// Δ = rl.entropy_target_step, c_1 = rl.entropy_coef. The bonus −c · mean entropy then pulls entropy up while
// c > 0; unlike Skywork-OR1, c may go below 0 (an entropy penalty), so a target below the policy's entropy
// lowers it too.
#pragma once

namespace gtpo::rl {

double next_entropy_coef(double coef, double target, double step_size, double entropy_mean);

}  // namespace gtpo::rl
