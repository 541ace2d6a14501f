#include "rl/distillation.h"

#include <algorithm>
#include <chrono>

#include "model/checkpoint.h"
#include "model/scoring.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"

namespace gtpo::rl {

// The teacher section: read by the trainer and the rlstep bench through load_teacher, and by rl_step.
std::vector<RunKey> schema::teacher_keys() {
  using config::field;
  const double big = 1e12;
  return {
      field("teacher", "path", &RunConfig::teacher, &TeacherSection::path, config::text(),
            "on-policy distillation: a model directory (Hugging Face's or a gtpo checkpoint) of the run's "
            "vocabulary, loaded frozen; each sampled token's reward gains weight·(log π_teacher − log "
            "π_student) (docs/rewards.md); empty = no teacher"),
      field("teacher", "weight", &RunConfig::teacher, &TeacherSection::weight, config::number(-big, big),
            "weight of the teacher's token rewards, beside reward.functions' weights (no effect without "
            "teacher.path)"),
  };
}

void check_same_vocabulary(const data::Tokenizer& student, const std::string& student_label,
                           const data::Tokenizer& teacher, const std::string& teacher_label) {
  GTPO_CHECK(student.vocab_size() == teacher.vocab_size(), "teacher.path: the teacher's tokenizer (",
             teacher_label, ") has ", teacher.vocab_size(), " ids and the run's (", student_label, ") has ",
             student.vocab_size(),
             ": distillation compares the two models' probabilities of the same ids, so "
             "they need the same tokenizer");
  for (int32_t id = 0; id < student.vocab_size(); ++id)
    GTPO_CHECK(student.token_string(id) == teacher.token_string(id), "teacher.path: id ", id, " is ",
               schema::yaml_quote(teacher.token_string(id)), " in the teacher's tokenizer (", teacher_label,
               ") but ", schema::yaml_quote(student.token_string(id)), " in the run's (", student_label,
               "): distillation needs the same tokenizer");
}

std::unique_ptr<model::Transformer> load_teacher(const TeacherSection& section,
                                                 const data::Tokenizer& student,
                                                 const std::string& student_label, Device device) {
  if (section.path.empty()) return nullptr;
  model::LoadedModel loaded = model::load_model(section.path, device);
  GTPO_CHECK(
      loaded.tokenizer != nullptr, "teacher.path ", section.path,
      " has no tokenizer (tokenizer.json): the teacher's vocabulary cannot be checked against the run's");
  check_same_vocabulary(student, student_label, *loaded.tokenizer, section.path);
  GTPO_CHECK(loaded.model->config().vocab_size >= student.vocab_size(), "teacher.path ", section.path,
             ": the model's vocab_size ", loaded.model->config().vocab_size, " is below its tokenizer's ",
             student.vocab_size(), " ids");
  return std::move(loaded.model);
}

DistillationStats add_teacher_rewards(const model::Transformer& teacher, const model::Transformer& student,
                                      double weight, RolloutBatch& batch) {
  const auto started = std::chrono::steady_clock::now();
  DistillationStats stats;
  double kl_sum = 0.0, teacher_sum = 0.0, disagree = 0.0;
  for (RolloutItem& it : batch.items) {
    const model::Sample& s = it.sample;
    const auto prompt_len = static_cast<int64_t>(s.prompt_tokens.size());
    std::vector<int32_t> sequence = s.prompt_tokens;
    sequence.insert(sequence.end(), s.tokens.begin(), s.tokens.end());
    model::TokenScores t = model::score_tokens(teacher, sequence, prompt_len, 1.0f, /*with_argmax=*/true);
    const model::TokenScores own = model::score_tokens(student, sequence, prompt_len, 1.0f);
    std::vector<double>& rewards = it.reward.token_rewards;
    if (rewards.empty()) rewards.assign(s.tokens.size(), 0.0);
    for (std::size_t k = 0; k < s.tokens.size(); ++k) {
      const double kl = static_cast<double>(own.logprobs[k]) - static_cast<double>(t.logprobs[k]);
      rewards[k] += weight * -kl;
      kl_sum += kl;
      teacher_sum += t.logprobs[k];
      disagree += t.argmax[k] != s.tokens[k];
    }
    stats.tokens += static_cast<int64_t>(s.tokens.size());
    it.teacher_logprobs = std::move(t.logprobs);
    it.teacher_argmax = std::move(t.argmax);
  }
  const double n = static_cast<double>(std::max<int64_t>(stats.tokens, 1));
  stats.reverse_kl_mean = kl_sum / n;
  stats.teacher_logprob_mean = teacher_sum / n;
  stats.disagree_frac = disagree / n;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return stats;
}

nlohmann::json distillation_metrics(const DistillationStats& stats) {
  if (stats.tokens == 0)  // no kept response: nothing was scored, and a 0 would read as a value
    return {{"distill/reverse_kl_mean", nullptr},
            {"distill/teacher_logprob_mean", nullptr},
            {"distill/disagree_frac", nullptr},
            {"seconds_teacher", stats.seconds}};
  return {{"distill/reverse_kl_mean", stats.reverse_kl_mean},
          {"distill/teacher_logprob_mean", stats.teacher_logprob_mean},
          {"distill/disagree_frac", stats.disagree_frac},
          {"seconds_teacher", stats.seconds}};
}

}  // namespace gtpo::rl
