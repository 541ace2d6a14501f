// gtpo export: a checkpoint (or a run directory's latest one) as a clean Hugging Face model directory.
#include <cstdio>
#include <filesystem>

#include "apps/args.h"
#include "apps/checkpoint_input.h"
#include "apps/commands.h"
#include "model/checkpoint.h"
#include "runtime/error.h"
#include "runtime/io/atomic_dir.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "runtime/io/safetensors.h"

namespace gtpo::apps {

namespace {

const std::vector<FlagSpec> kFlags = {
    {"--out", true, "directory to write (required); an existing one is replaced only if it holds checkpoint files"},
    {"--dtype", true, "weights' dtype: f32 (default), bf16 or f16 (rounded to nearest even, as torch does)"}};

struct DtypeChoice {
  const char* flag;
  const char* safetensors;
  const char* torch;
};
constexpr DtypeChoice kDtypes[] = {{"f32", "F32", "float32"}, {"bf16", "BF16", "bfloat16"}, {"f16", "F16", "float16"}};

}  // namespace

int run_export(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo export CHECKPOINT|RUN_DIR --out DIR [--dtype f32|bf16|f16]",
          "Writes the model as a Hugging Face directory that transformers'\n"
          "AutoModelForCausalLM.from_pretrained(DIR) loads as it is: config.json, model.safetensors,\n"
          "generation_config.json and the tokenizer files, without gtpo's own state (optimizer,\n"
          "cursor, run config). A run directory exports its latest checkpoint. The directory is\n"
          "written atomically (a kill leaves the old one or the new one)."))
    return 0;
  args.reject_unused("export", true, false);
  GTPO_CHECK(args.positionals().size() == 1, "export: expected exactly one CHECKPOINT or RUN_DIR, got ",
             args.positionals().size());
  const std::string out = args.require("--out");
  const std::string dtype_flag = args.get("--dtype", "f32");
  const DtypeChoice* dtype = nullptr;
  for (const DtypeChoice& d : kDtypes)
    if (dtype_flag == d.flag) dtype = &d;
  GTPO_CHECK(dtype != nullptr, "export: --dtype must be f32, bf16 or f16, got '", dtype_flag, "'");
  const std::string source = io::readable_directory(resolve_checkpoint_dir(args.positionals()[0]));
  const model::LoadedModel loaded = model::load_model(source);
  std::error_code ec;
  GTPO_CHECK(!std::filesystem::equivalent(source, out, ec), "export: --out ", out,
             " is the checkpoint being exported (", source, "): write the copy to a new directory");
  model::check_replaceable_checkpoint(out, "export --out");
  io::write_directory_atomic(out, [&](const std::string& tmp) {
    io::make_directories(tmp);
    io::SafetensorsWriter writer;
    model::add_weights(writer, *loaded.model, dtype->safetensors);
    writer.set_metadata("format", "pt");
    writer.write(tmp + "/model.safetensors");
    model::write_hf_config_files(tmp, *loaded.model, loaded.tokenizer.get(), dtype->torch);
    if (loaded.tokenizer) model::write_tokenizer_files(tmp, *loaded.tokenizer, loaded.model->config().max_position_embeddings);
    io::write_directory_digests(tmp);
  });
  std::printf("wrote %s: %s from %s, %lld parameters as %s%s\n", out.c_str(),
              model::architecture_name(loaded.model->config().architecture), source.c_str(),
              static_cast<long long>(loaded.model->parameters().numel()), dtype->torch,
              loaded.tokenizer ? ", with its tokenizer" : ", no tokenizer");
  return 0;
}

}  // namespace gtpo::apps
