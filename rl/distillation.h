// On-policy distillation as a source of token rewards (docs/rewards.md, "Distillation from a teacher"): the
// student samples, a frozen teacher of the same vocabulary scores every sampled token, and each token's
// reward is the negative reverse KL estimate (k1) weight · (log π_t(o_t) − log π_s(o_t)). The rewards join
// the reward functions' token rewards (rl/math/token_credit.h), so they reach every algorithm the same way
// and compose with the outcome reward (reward.functions' weights) and with GTPO's shaping.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/rollout_phase.h"
#include "rl/run_config.h"

namespace gtpo::rl {

// The teacher of SECTION (teacher.path), loaded frozen on DEVICE; null when teacher.path is empty. Its
// tokenizer must be STUDENT's (STUDENT_LABEL names where the run's came from): the same size, the same
// string for every id, and a model vocabulary that covers it; otherwise a gtpo::Error naming both.
std::unique_ptr<model::Transformer> load_teacher(const TeacherSection& section,
                                                 const data::Tokenizer& student,
                                                 const std::string& student_label, Device device);

// An error naming both when TEACHER's ids are not STUDENT's: another size, or an id spelt otherwise.
void check_same_vocabulary(const data::Tokenizer& student, const std::string& student_label,
                           const data::Tokenizer& teacher, const std::string& teacher_label);

struct DistillationStats {
  double reverse_kl_mean = 0.0;       // mean over the sampled tokens of log π_s − log π_t (k1 estimate)
  double teacher_logprob_mean = 0.0;  // mean of log π_t(o_t)
  double disagree_frac = 0.0;         // share of tokens where the teacher's most likely token is another
  int64_t tokens = 0;
  double seconds = 0.0;  // the two scoring passes
};

// Scores every item's completion under TEACHER and STUDENT at temperature 1 (model/scoring.h: one forward
// per sequence, without a graph, so teacher = student gives exactly 0), adds WEIGHT · (log π_t − log π_s)
// to each token's reward (it.reward.token_rewards, created as zeros when no function gave any) and keeps
// the teacher's log-probs and most likely tokens on the item for the logs.
DistillationStats add_teacher_rewards(const model::Transformer& teacher, const model::Transformer& student,
                                      double weight, RolloutBatch& batch);

// distill/reverse_kl_mean, distill/teacher_logprob_mean, distill/disagree_frac and seconds_teacher.
nlohmann::json distillation_metrics(const DistillationStats& stats);

}  // namespace gtpo::rl
