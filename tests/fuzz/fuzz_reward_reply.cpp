// External reward replies (rl/external_reward.cpp): every line of the input read as the reply to the request
// of id 1, 2, ... in turn, as a batch's replies are read, twice: from a function without token rewards and
// from one with them for a completion of 3 tokens: a wrong or missing id, a non-finite or huge value, a
// token_rewards list of the wrong length or type, deep nesting, any bytes give a reply or a gtpo::Error,
// nothing else.
#include <string>

#include "rl/external_reward.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return gtpo::fuzz::run_one([&] {
    int64_t id = 1;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = text.find('\n', start);
      const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      for (const int64_t tokens : {int64_t{-1}, int64_t{3}}) {
        try {
          const gtpo::rl::RewardScore s = gtpo::rl::parse_reward_reply(line, id, tokens);
          (void)s.value;
        } catch (const gtpo::Error&) {
          // each bad line on its own; the next is still read
        }
      }
      ++id;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  });
}
