// gtpo tokenize: a tokenizer.json (or a directory holding one) applied to text or ids, as JSONL, so that
// gtpo's ids can be compared with the `tokenizers` / transformers ones and checked by hand.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/checkpoint_input.h"
#include "apps/commands.h"
#include "data/chat/chat_template.h"
#include "data/jsonl.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::apps {
namespace {

using json = nlohmann::ordered_json;

struct UsageError : Error {
  using Error::Error;
};

const std::vector<FlagSpec> kFlags = {
    {"--tokenizer", true,
     "tokenizer.json, or a directory with tokenizer.json [+ tokenizer_config.json], or a run "
     "directory (its latest checkpoint's)"},
    {"--text", true,
     "one text to encode (or, with --decode, a JSON array of ids); the result goes to stdout"},
    {"--in", true, "JSONL input: {\"text\": ...} lines, or {\"ids\": [...]} lines with --decode"},
    {"--out", true, "JSONL output, one line per input line (written atomically)"},
    {"--decode", false, "ids -> text instead of text -> ids"},
    {"--no-special", false,
     "encode: no post-processor tokens (add_special_tokens=False); decode: skip special tokens"},
    {"--plain", false,
     "encode the text only: added/special tokens in the text stay plain text (what gtpo's RL "
     "code does with task text)"},
    {"--chat", false,
     "input lines are {\"messages\": [...]} (--text: a JSON array of messages), rendered with the "
     "tokenizer's chat template; output adds the rendered \"text\""},
    {"--add-generation-prompt", false,
     "with --chat: end with the assistant turn's opening, as RL prompts do"},
};

const char* kDescription =
    "Encodes text with a tokenizer as Hugging Face's `tokenizers` does (tokenizer.encode(text,\n"
    "add_special_tokens=True)): added tokens such as <|im_start|> in the text become their ids, and the\n"
    "post-processor adds its tokens (Llama 3's <|begin_of_text|>). Output lines: {\"ids\": [...], \"tokens\": [...]}\n"
    "with tokens spelled as in tokenizer.json. --decode turns {\"ids\": [...]} lines into {\"text\": ...}.\n"
    "--chat renders conversations with the tokenizer's chat template (tokenizer_config.json or\n"
    "chat_template.jinja) as transformers' apply_chat_template does, then encodes the text as apply_chat_template(\n"
    "tokenize=True) does: added tokens matched, no post-processor tokens (the template writes its own BOS).\n"
    "The load time goes to stderr.";

struct Settings {
  std::string tokenizer;
  std::optional<std::string> text;
  std::string in, out;
  bool decode = false, no_special = false, plain = false, chat = false, add_generation_prompt = false;
};

Settings read_settings(const Args& args) {
  Settings s;
  if (!args.has("--tokenizer")) throw UsageError("missing --tokenizer FILE_OR_DIR");
  s.tokenizer = args.require("--tokenizer");
  if (args.has("--text")) s.text = args.require("--text");
  if (args.has("--in")) s.in = args.require("--in");
  if (args.has("--out")) s.out = args.require("--out");
  s.decode = args.has("--decode");
  s.no_special = args.has("--no-special");
  s.plain = args.has("--plain");
  s.chat = args.has("--chat");
  s.add_generation_prompt = args.has("--add-generation-prompt");
  if (s.add_generation_prompt && !s.chat) throw UsageError("--add-generation-prompt goes with --chat");
  if (s.chat && (s.decode || s.plain || s.no_special))
    throw UsageError("--chat renders and encodes a conversation; it takes none of --decode, --plain, --no-special");
  if (s.text.has_value() == !s.in.empty()) throw UsageError("give either --text S or --in IN.jsonl --out OUT.jsonl");
  if (!s.in.empty() && s.out.empty()) throw UsageError("--in needs --out OUT.jsonl");
  if (s.text && !s.out.empty()) throw UsageError("--out goes with --in (--text prints to stdout)");
  if (s.decode && s.plain) throw UsageError("--plain is for encoding");
  if (!args.positionals().empty() || !args.overrides().empty()) throw UsageError("unexpected argument");
  return s;
}

json encode_text(const data::Tokenizer& tok, const std::string& text, const Settings& s) {
  const std::vector<int32_t> ids = s.plain ? tok.encode(text) : tok.encode_hf(text, !s.no_special);
  json tokens = json::array();
  for (int32_t id : ids) tokens.push_back(tok.token_string(id));
  return json{{"ids", ids}, {"tokens", std::move(tokens)}};
}

std::vector<int32_t> ids_of(const nlohmann::json& value, const std::string& where, const data::Tokenizer& tok) {
  if (!value.is_array()) fail(where, "'ids' must be an array of integers");
  std::vector<int32_t> ids;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto& v = value[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= tok.vocab_size()) {
      fail(where, "ids[", i, "] = ", v.dump(), " is not a token id (vocabulary size ", tok.vocab_size(), ")");
    }
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

json decode_ids(const data::Tokenizer& tok, const std::vector<int32_t>& ids, const Settings& s) {
  const std::string text = s.no_special ? tok.decode_skipping_special(ids) : tok.decode(ids);
  // Invalid UTF-8 (a cut multi-byte character) cannot go into JSON as it is: replaced there, as transformers does.
  return json{{"text", text}};
}

// A conversation rendered with the tokenizer's chat template, then encoded as apply_chat_template(tokenize=True)
// encodes it (add_special_tokens=False).
json encode_chat(const data::Tokenizer& tok, const nlohmann::ordered_json& messages, const std::string& where,
                 const Settings& s) {
  const data::TokenizerConfig& config = tok.config();
  if (tok.chat_template().empty())
    fail("tokenizer '", s.tokenizer, "' has no chat template (expected \"chat_template\" in tokenizer_config.json ",
         "or a chat_template.jinja beside tokenizer.json)");
  data::chat::ChatInput in;
  in.messages = data::chat::messages_from_json(messages, where);
  in.add_generation_prompt = s.add_generation_prompt;
  if (config.bos_token && !config.bos_token->empty()) in.bos_token = config.bos_token;
  if (config.eos_token && !config.eos_token->empty()) in.eos_token = config.eos_token;
  const std::string label = config.chat_template_label.empty() ? s.tokenizer : config.chat_template_label;
  const std::string text = data::chat::render_chat(tok.chat_template(), label, in);
  const std::vector<int32_t> ids = tok.encode_hf(text, /*add_special_tokens=*/false);
  json tokens = json::array();
  for (int32_t id : ids) tokens.push_back(tok.token_string(id));
  return json{{"text", text}, {"ids", ids}, {"tokens", std::move(tokens)}};
}

// One input line to one output line.
json process_line(const data::JsonLine& line, const data::Tokenizer& tok, const Settings& s) {
  const std::string where = line.source + ":" + std::to_string(line.line);
  if (s.chat) {
    data::require_array(line, "messages");  // its type checked, named
    return encode_chat(tok, data::ordered_field(line, "messages"), where + ": field 'messages'", s);
  }
  if (s.decode) {
    return decode_ids(tok, ids_of(data::require_array(line, "ids"), where + ": ", tok), s);
  }
  return encode_text(tok, data::require_string(line, "text"), s);
}

std::string dump_line(const json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

int run(const Settings& s) {
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  const auto tok = data::load_tokenizer(resolve_checkpoint_dir(s.tokenizer));  // a run directory: its latest
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  // CPU time too: on a busy machine the wall time says more about the neighbours than about the loader.
  std::fprintf(stderr, "gtpo tokenize: loaded %s (%s, vocabulary %d) in %.3f s (%.3f s CPU)\n", s.tokenizer.c_str(),
               tok->kind().c_str(), tok->vocab_size(), seconds, cpu);
  if (s.text) {
    json out;
    if (s.decode) {
      nlohmann::json parsed;
      try {
        parsed = io::parse_json(*s.text);
      } catch (const nlohmann::json::exception&) {
        throw UsageError("--decode --text needs a JSON array of ids, e.g. '[1, 2, 3]'");
      }
      out = decode_ids(*tok, ids_of(parsed, "--text: ", *tok), s);
    } else if (s.chat) {
      nlohmann::ordered_json messages;
      try {
        messages = io::parse_json<nlohmann::ordered_json>(*s.text);
      } catch (const nlohmann::json::exception&) {
        throw UsageError("--chat --text needs a JSON array of messages, e.g. '[{\"role\": \"user\", \"content\": \"hi\"}]'");
      }
      out = encode_chat(*tok, messages, "--text", s);
    } else {
      out = encode_text(*tok, *s.text, s);
    }
    std::cout << dump_line(out) << "\n";
    return 0;
  }
  const std::vector<data::JsonLine> lines = data::read_jsonl(s.in);
  std::string text;
  for (const data::JsonLine& line : lines) text += dump_line(process_line(line, *tok, s)) + "\n";
  io::write_file_atomic(s.out, text);
  std::fprintf(stderr, "gtpo tokenize: %zu lines -> %s\n", lines.size(), s.out.c_str());
  return 0;
}

}  // namespace

int run_tokenize(int argc, char** argv) {
  Settings settings;
  try {
    Args args(argc, argv, kFlags);
    if (args.printed_help("gtpo tokenize --tokenizer FILE_OR_DIR (--text S | --in IN.jsonl --out OUT.jsonl) "
                          "[--decode] [--no-special] [--plain] [--chat [--add-generation-prompt]]",
                          kDescription))
      return 0;
    settings = read_settings(args);
  } catch (const Error& e) {
    std::cerr << "gtpo tokenize: error: " << e.what() << "\n(run 'gtpo tokenize --help' for usage)\n";
    return 2;
  }
  try {
    return run(settings);
  } catch (const UsageError& e) {
    std::cerr << "gtpo tokenize: error: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "gtpo tokenize: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gtpo::apps
