// Helpers shared by the tokenizer tests: scratch files and seeded random data.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace gtpo::data::test {

// A fresh directory per test process (ctest runs each test case in its own process), removed at exit.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() : path(std::filesystem::temp_directory_path() / ("gtpo_tokenizer_test_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline std::string scratch_path(const std::string& name) {
  static const ScratchDir dir;
  return (dir.path / name).string();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string random_bytes(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(byte(rng));
  return s;
}

}  // namespace gtpo::data::test
