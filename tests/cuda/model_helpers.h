// Tiny models for the CUDA suite: built and perturbed on the CPU, then copied onto the device under test.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/transformer.h"
#include "runtime/ops.h"
#include "tests/support/random.h"

namespace gtpo::testing {

// gpt2 (tied head, odd vocab), llama with grouped-query attention, qwen2 with q/k/v biases and a GPT-2
// sized vocabulary.
inline model::ModelConfig cuda_tiny_config(model::Architecture arch) {
  model::ModelConfig c;
  c.architecture = arch;
  c.num_hidden_layers = 2;
  c.max_position_embeddings = 64;
  c.norm_eps = 1e-5f;
  switch (arch) {
    case model::Architecture::gpt2:
      c.vocab_size = 97;
      c.hidden_size = 48;
      c.num_attention_heads = 4;
      c.num_key_value_heads = 4;
      c.intermediate_size = 96;
      c.tie_word_embeddings = true;
      break;
    case model::Architecture::llama:
      c.vocab_size = 101;
      c.hidden_size = 64;
      c.num_attention_heads = 8;
      c.num_key_value_heads = 2;
      c.intermediate_size = 80;
      break;
    case model::Architecture::qwen2:
      c.vocab_size = 50257;
      c.hidden_size = 32;
      c.num_attention_heads = 4;
      c.num_key_value_heads = 2;
      c.intermediate_size = 48;
      c.attention_bias = true;
      break;
  }
  return c;
}

// init_weights(seed), then every parameter shifted by uniform noise so that biases and norm gains are not
// trivially 0 and 1; matrices scaled by `sharpen` (greedy choices well separated when > 1).
inline std::unique_ptr<model::Transformer> cuda_tiny_model(model::Architecture arch, uint64_t seed,
                                                           float sharpen = 1.0f) {
  auto m = std::make_unique<model::Transformer>(cuda_tiny_config(arch), Device::cpu);
  m->init_weights(seed);
  uint64_t stream = seed * 1000;
  for (const optim::Parameter& p : m->parameters()) {
    std::vector<float> v = p.tensor.to_vector();
    const std::vector<float> noise = random_values(p.tensor.numel(), ++stream, -0.05f, 0.05f);
    const float scale = p.tensor.rank() == 2 ? sharpen : 1.0f;
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * (v[i] + noise[i]);
    p.tensor.copy_(Tensor::from_vector(v, p.tensor.shape()));
  }
  return m;
}

// The same weights on `device`.
inline std::unique_ptr<model::Transformer> copy_model_to(const model::Transformer& src, Device device) {
  auto m = std::make_unique<model::Transformer>(src.config(), device);
  for (const optim::Parameter& p : src.parameters()) m->parameters().get(p.name).copy_(p.tensor);
  return m;
}

inline const char* arch_label(model::Architecture a) { return model::architecture_name(a); }

}  // namespace gtpo::testing
