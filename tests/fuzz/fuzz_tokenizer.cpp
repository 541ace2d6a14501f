// tokenizer.json loading (data/tokenizer/): the file's text parsed as load_tokenizer parses it, then a
// round trip through the loaded tokenizer (encode a fixed text and the input itself, text-only and the
// Hugging Face way, decode the ids). Seeds hf_*.json cover the Hugging Face components (data/tokenizer/hf/).
#include "data/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return gtpo::fuzz::run_one([&] {
    const auto tok = gtpo::data::parse_tokenizer(text, "fuzz/tokenizer.json");
    for (const std::string& sample : {std::string("Q: 12+7=? A: 19 #### 19\n"), text.substr(0, 256)}) {
      try {
        const std::vector<int32_t> ids = tok->encode(sample);
        (void)tok->decode(ids);
        for (int32_t id : ids) (void)tok->token_text(id);
        // Hugging Face behaviour: added tokens matched in the text, post-processor, decoder without specials.
        const std::vector<int32_t> hf_ids = tok->encode_hf(sample, true);
        (void)tok->decode_skipping_special(hf_ids);
      } catch (const gtpo::Error&) {
        // A char tokenizer refuses characters outside its alphabet by name.
      }
    }
  });
}
