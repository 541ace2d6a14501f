#include "data/tokenizer/hf/post_processor.h"

namespace gtpo::data::hf {
namespace {

constexpr const char* kSupported = "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence";

// The single-sequence template as a list of id runs; an empty run marks where the sequence goes.
class Template final : public PostProcessor {
 public:
  explicit Template(std::vector<std::vector<int32_t>> parts) : parts_(std::move(parts)) {}
  std::vector<int32_t> process(std::vector<int32_t> ids) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const auto& part : parts_) {
      if (part.empty()) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), part.begin(), part.end());
      }
    }
    return out;
  }

 private:
  std::vector<std::vector<int32_t>> parts_;
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  std::vector<int32_t> process(std::vector<int32_t> ids) const override {
    for (const auto& s : steps_) ids = s->process(std::move(ids));
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

std::unique_ptr<PostProcessor> parse_template(const HfJson& json, const JsonPlace& at) {
  reject_unknown_keys(json, {"single", "pair", "special_tokens"}, at);
  const HfJson& single = required_field(json, "single", at);
  if (!single.is_array()) json_fail(at, "'single' must be an array");
  const HfJson* specials = optional_field(json, "special_tokens");
  std::vector<std::vector<int32_t>> parts;
  bool has_sequence = false;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const HfJson& item = single[i];
    const JsonPlace place = at.child("single").index(i);
    if (item.is_object() && item.contains("Sequence")) {
      const HfJson& seq = item["Sequence"];
      if (!seq.is_object() || seq.value("id", std::string()) != "A") json_fail(place, "expected sequence 'A'");
      parts.emplace_back();
      has_sequence = true;
    } else if (item.is_object() && item.contains("SpecialToken")) {
      const HfJson& sp = item["SpecialToken"];
      const std::string name = sp.is_object() && sp.contains("id") && sp["id"].is_string() ? sp["id"].get<std::string>() : "";
      if (!specials || !specials->contains(name)) json_fail(place, "special token '", name, "' is not in 'special_tokens'");
      const HfJson& ids = (*specials)[name].value("ids", HfJson::array());
      std::vector<int32_t> run;
      for (const HfJson& id : ids) {
        if (!id.is_number_unsigned()) json_fail(at.child("special_tokens"), "'", name, "' has a bad id ", id.dump());
        run.push_back(id.get<int32_t>());
      }
      if (run.empty()) json_fail(at.child("special_tokens"), "'", name, "' has no ids");
      parts.push_back(std::move(run));
    } else {
      json_fail(place, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, found ", item.dump());
    }
  }
  if (!has_sequence) json_fail(at, "'single' has no sequence 'A'");
  return std::make_unique<Template>(std::move(parts));
}

// BertProcessing / RobertaProcessing: {"cls": ["<s>", 0], "sep": ["</s>", 2]} -> cls A sep.
std::unique_ptr<PostProcessor> parse_cls_sep(const HfJson& json, const JsonPlace& at) {
  std::vector<std::vector<int32_t>> parts;
  for (const char* key : {"cls", "sep"}) {
    const HfJson& v = required_field(json, key, at);
    if (!v.is_array() || v.size() != 2 || !v[1].is_number_unsigned()) {
      json_fail(at, "'", key, "' must be [token, id], found ", v.dump());
    }
    parts.push_back({v[1].get<int32_t>()});
    if (parts.size() == 1) parts.emplace_back();
  }
  return std::make_unique<Template>(std::move(parts));
}

}  // namespace

std::unique_ptr<PostProcessor> parse_post_processor(const HfJson& json, const JsonPlace& at) {
  if (json.is_null()) return nullptr;
  const std::string type = component_type(json, at);
  if (type == "TemplateProcessing") return parse_template(json, at);
  if (type == "BertProcessing" || type == "RobertaProcessing") return parse_cls_sep(json, at);
  if (type == "ByteLevel") return nullptr;  // only adjusts offsets
  if (type == "Sequence") {
    return std::make_unique<Sequence>(parse_steps<PostProcessor>(json, "processors", at, parse_post_processor));
  }
  json_fail(at, "unsupported post-processor type '", type, "' (supported: ", kSupported, ")");
}

}  // namespace gtpo::data::hf
