#include <unistd.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/half.h"
#include "runtime/io/safetensors.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using namespace gtpo::io;

namespace {

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

template <typename T>
std::string raw_bytes(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return out;
}

// A file made of an arbitrary header text (unpadded, as other writers may produce) and data buffer.
std::string make_file(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

SafetensorsFile parse(const std::string& bytes) { return SafetensorsFile::parse(bytes, "bad.safetensors"); }

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / ("gtpo_st_" + std::to_string(::getpid()) + "_" + name)).string();
}

// A small file with several dtypes, used by the fuzz loops.
std::string small_file() {
  SafetensorsWriter w;
  const float f[] = {1.5f, -2.0f, 3.25f};
  w.add_f32("w", {3}, f);
  w.add_f32("h", {1, 3}, f, "BF16");
  w.add_raw("ids", "I64", {2}, raw_bytes<int64_t>({7, -9}));
  w.add_raw("flag", "BOOL", {1}, std::string("\x01", 1));
  w.set_metadata("format", "pt");
  return w.serialize();
}

}  // namespace

TEST_CASE("safetensors round trip with odd shapes, several dtypes and metadata") {
  SafetensorsWriter w;
  std::vector<float> big(3 * 5 * 7);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.25f - 3.0f;
  const float scalar[] = {42.0f};
  w.add_f32("layer.0.weight", {3, 5, 7}, big);
  w.add_f32("scalar", {}, scalar);
  w.add_f32("empty", {2, 0, 3}, std::span<const float>());
  w.add_f32("zero_dim", {0}, std::span<const float>());
  w.add_f32("as_bf16", {2}, std::vector<float>{1.0f, -0.5f}, "BF16");
  w.add_f32("as_f16", {1, 1, 2}, std::vector<float>{0.099975586f, 65504.0f}, "F16");
  w.add_f32("as_f64", {1}, std::vector<float>{0.1f}, "F64");
  w.add_raw("tokens", "I32", {2, 2}, raw_bytes<int32_t>({1, -2, 3, 2147483647}));
  w.add_raw("bytes", "U8", {5}, "abcde");
  w.add_raw("i8", "I8", {1}, std::string("\x80", 1));
  w.add_raw("mask", "BOOL", {3}, std::string("\x01\x00\x01", 3));
  w.add_raw("big_ints", "I64", {1}, raw_bytes<int64_t>({-1234567890123LL}));
  w.set_metadata("format", "pt");
  w.set_metadata("note", "quotes \" backslash \\ newline \n unicode é ✓");

  const std::string path = temp_file("roundtrip.safetensors");
  w.write(path);
  const SafetensorsFile f = SafetensorsFile::load(path);
  fs::remove(path);

  CHECK(f.entries().size() == 12);
  CHECK(f.metadata() == std::map<std::string, std::string>{
                            {"format", "pt"}, {"note", "quotes \" backslash \\ newline \n unicode é ✓"}});
  const SafetensorsEntry& lw = f.at("layer.0.weight");
  CHECK(lw.dtype == "F32");
  CHECK(lw.shape == std::vector<int64_t>{3, 5, 7});
  CHECK(lw.numel() == 105);
  CHECK(f.read_f32("layer.0.weight") == big);
  CHECK(f.at("scalar").shape.empty());
  CHECK(f.read_f32("scalar") == std::vector<float>{42.0f});
  CHECK(f.at("empty").shape == std::vector<int64_t>{2, 0, 3});
  CHECK(f.at("empty").bytes.empty());
  CHECK(f.read_f32("zero_dim").empty());
  CHECK(f.at("as_bf16").dtype == "BF16");
  CHECK(f.read_f32("as_bf16") == std::vector<float>{1.0f, -0.5f});
  CHECK(f.at("as_f16").dtype == "F16");
  CHECK(f.read_f32("as_f16") == std::vector<float>{0.099975586f, 65504.0f});
  CHECK(f.read_f32("as_f64") == std::vector<float>{0.1f});
  CHECK(f.at("tokens").bytes == raw_bytes<int32_t>({1, -2, 3, 2147483647}));
  CHECK(f.at("bytes").bytes == "abcde");
  CHECK(f.at("i8").bytes == std::string("\x80", 1));
  CHECK(f.at("mask").bytes == std::string("\x01\x00\x01", 3));
  CHECK(f.at("big_ints").bytes == raw_bytes<int64_t>({-1234567890123LL}));
  CHECK(f.find("nope") == nullptr);
  CHECK_THROWS_WITH(f.at("nope"), Contains(path) && Contains("no tensor named 'nope'"));
  CHECK_THROWS_WITH(f.read_f32("tokens"), Contains("tensor 'tokens' has dtype I32"));
}

TEST_CASE("safetensors writer lays tensors out as HF does: descending alignment, then name, each aligned") {
  SafetensorsWriter w;
  w.add_raw("a_u8", "U8", {3}, "xyz");
  w.add_f32("b_f32", {1}, std::vector<float>{1.0f});
  w.add_raw("c_i64", "I64", {1}, raw_bytes<int64_t>({5}));
  w.add_f32("d_bf16", {1}, std::vector<float>{2.0f}, "BF16");
  w.add_f32("a_f32", {1}, std::vector<float>{3.0f});
  const std::string bytes = w.serialize();
  const SafetensorsFile f = SafetensorsFile::parse(bytes, "mem");
  std::vector<std::string> names;
  for (const auto& e : f.entries()) {
    names.push_back(e.name);
    // Offset within the data buffer (the first entry starts it); the buffer itself starts at a multiple of 8.
    const size_t offset = static_cast<size_t>(e.bytes.data() - f.entries()[0].bytes.data());
    CHECK(offset % *safetensors_dtype_size(e.dtype) == 0);
  }
  CHECK(bytes.substr(0, 8) == le64(bytes.size() - 8 - 8 - 4 - 4 - 2 - 3));
  CHECK((bytes.size() - 8 - 8 - 4 - 4 - 2 - 3) % 8 == 0);
  CHECK(names == std::vector<std::string>{"c_i64", "a_f32", "b_f32", "d_bf16", "a_u8"});
  // Writing the same tensors in another order gives the same bytes.
  SafetensorsWriter w2;
  w2.add_f32("a_f32", {1}, std::vector<float>{3.0f});
  w2.add_f32("d_bf16", {1}, std::vector<float>{2.0f}, "BF16");
  w2.add_raw("c_i64", "I64", {1}, raw_bytes<int64_t>({5}));
  w2.add_f32("b_f32", {1}, std::vector<float>{1.0f});
  w2.add_raw("a_u8", "U8", {3}, "xyz");
  CHECK(w2.serialize() == bytes);
}

TEST_CASE("safetensors writer output is byte-exact against a hand-built file") {
  SafetensorsWriter w;
  w.add_f32("weight", {2}, std::vector<float>{1.0f, -2.0f});
  w.add_raw("mask", "U8", {3}, std::string("\x01\x00\x01", 3));
  w.add_raw("bias", "F32", {1}, raw_bytes<float>({0.5f}));
  w.set_metadata("format", "pt");

  // F32 tensors first (by name), then U8; metadata first; compact JSON; spaces to a multiple of 8.
  std::string header = R"({"__metadata__":{"format":"pt"},)"
                       R"("bias":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("weight":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
                       R"("mask":{"dtype":"U8","shape":[3],"data_offsets":[12,15]}})";
  while (header.size() % 8 != 0) header += ' ';
  const std::string expected = le64(header.size()) + header + raw_bytes<float>({0.5f}) +
                               raw_bytes<float>({1.0f, -2.0f}) + std::string("\x01\x00\x01", 3);
  CHECK(w.serialize() == expected);
  CHECK(header.size() == 208);  // 203 bytes of JSON + 5 spaces
}

TEST_CASE("safetensors writer reproduces HF's own serialization test vectors") {
  // From the test suite of HF's Rust crate (tensor.rs: test_serialization, test_empty).
  SafetensorsWriter w;
  w.add_f32("attn.0", {1, 2, 3}, std::vector<float>{0, 1, 2, 3, 4, 5});
  const unsigned char attn[] = {64, 0,  0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110, 46,  48,
                                34, 58, 123, 34,  100, 116, 121, 112, 101, 34,  58,  34,  70,  51,  50,  34,
                                44, 34, 115, 104, 97,  112, 101, 34,  58,  91,  49,  44,  50,  44,  51,  93,
                                44, 34, 100, 97,  116, 97,  95,  111, 102, 102, 115, 101, 116, 115, 34,  58,
                                91, 48, 44,  50,  52,  93,  125, 125, 0,   0,   0,   0,   0,   0,   128, 63,
                                0,  0,  0,   64,  0,   0,   64,  64,  0,   0,   128, 64,  0,   0,   160, 64};
  CHECK(w.serialize() == std::string(reinterpret_cast<const char*>(attn), sizeof attn));

  const unsigned char empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
  CHECK(SafetensorsWriter().serialize() == std::string(reinterpret_cast<const char*>(empty), sizeof empty));
  CHECK(parse(SafetensorsWriter().serialize()).entries().empty());

  SafetensorsWriter m;
  m.set_metadata("framework", "pt");
  const std::string expected = le64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ";
  CHECK(m.serialize() == expected);
}

TEST_CASE("safetensors reader accepts files from other writers: any order, no padding, extra fields") {
  const std::string header = R"({"b":{"data_offsets":[4,8],"shape":[1],"dtype":"F32","extra":"ignored"},)"
                             R"("a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  const std::string data = raw_bytes<uint16_t>({0x3f80, 0xc000}) + raw_bytes<float>({7.0f});
  const SafetensorsFile f = parse(make_file(header, data));
  REQUIRE(f.entries().size() == 2);
  CHECK(f.entries()[0].name == "a");  // entries() is in data order
  CHECK(f.read_f32("a") == std::vector<float>{1.0f, -2.0f});
  CHECK(f.read_f32("b") == std::vector<float>{7.0f});
  CHECK(f.metadata().empty());
}

TEST_CASE("a SafetensorsFile stays valid when copied and the original is gone") {
  std::optional<SafetensorsFile> copy;
  {
    const SafetensorsFile original = parse(small_file());
    copy = original;
  }
  CHECK(copy->read_f32("w") == std::vector<float>{1.5f, -2.0f, 3.25f});
  SafetensorsFile moved = std::move(*copy);
  CHECK(moved.at("ids").bytes == raw_bytes<int64_t>({7, -9}));
}

TEST_CASE("safetensors corrupt files each produce a precise error") {
  const std::string f32x2 = raw_bytes<float>({1.0f, 2.0f});
  auto one = [](const std::string& entry) { return R"({"t":)" + entry + "}"; };

  CHECK_THROWS_WITH(parse("abc"), Contains("bad.safetensors") && Contains("3 bytes, too short"));
  CHECK_THROWS_WITH(parse(le64(200'000'000) + "{}"),
                    Contains("header length 200000000 exceeds the 100 MB limit"));
  CHECK_THROWS_WITH(parse(le64(~0ULL)), Contains("exceeds the 100 MB limit"));
  CHECK_THROWS_WITH(parse(le64(64) + "{}"),
                    Contains("header length 64 runs past the end of the file (10 bytes)"));
  CHECK_THROWS_WITH(parse(make_file("{\"t\": ", "")),
                    Contains("bad.safetensors") && Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse(make_file("{\"t\xff\": 1}", "")), Contains("not valid JSON"));
  CHECK_THROWS_WITH(parse(make_file("[1, 2]", "")), Contains("header is not a JSON object"));
  CHECK_THROWS_WITH(parse(make_file(one("3"), "")), Contains("tensor 't'") && Contains("not a JSON object"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"shape":[2],"data_offsets":[0,8]})"), f32x2)),
                    Contains("bad.safetensors") && Contains("tensor 't': missing \"dtype\""));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","data_offsets":[0,8]})"), f32x2)),
                    Contains("tensor 't': missing \"shape\""));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[2]})"), f32x2)),
                    Contains("tensor 't': missing \"data_offsets\""));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})"), f32x2)),
                    Contains("tensor 't': \"dtype\" is not a string"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"Q4","shape":[2],"data_offsets":[0,8]})"), f32x2)),
                    Contains("tensor 't': unknown dtype 'Q4'"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":{},"data_offsets":[0,8]})"), f32x2)),
                    Contains("tensor 't': \"shape\" is not an array"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), f32x2)),
                    Contains("tensor 't': \"shape\" has a negative dimension -2"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), f32x2)),
                    Contains("non-integer dimension 2.5"));
  CHECK_THROWS_WITH(
      parse(make_file(one(R"({"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]})"),
                      f32x2)),
      Contains("tensor 't'") && Contains("overflows the element count"));
  CHECK_THROWS_WITH(
      parse(make_file(one(R"({"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]})"), f32x2)),
      Contains("overflows the byte count"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), f32x2)),
                    Contains("\"data_offsets\" must be [begin, end]"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[-1,7]})"), f32x2)),
                    Contains("\"data_offsets\" must be [begin, end]"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), f32x2)),
                    Contains("data_offsets [8, 0] end before they begin"));
  CHECK_THROWS_WITH(
      parse(make_file(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), f32x2)),
      Contains("tensor 't': data_offsets [0, 8] span 8 bytes but dtype F32 with shape [3] needs 12"));
  // Truncated data: offsets agree with the shape but the buffer stops early.
  CHECK_THROWS_WITH(
      parse(make_file(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"), "abcd")),
      Contains("tensor 't': data_offsets [0, 8] extend past the end of the data buffer (4 bytes)") &&
          Contains("truncated"));
  CHECK_THROWS_WITH(parse(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    f32x2)),
                    Contains("tensor 'b' (data_offsets [4, 8]) overlaps tensor 'a' (data_offsets [0, 8])"));
  CHECK_THROWS_WITH(parse(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                    f32x2 + "abcd")),
                    Contains("gap of 4 bytes in the data buffer before tensor 'b'"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), f32x2)),
                    Contains("gap of 4 bytes in the data buffer before tensor 't'"));
  CHECK_THROWS_WITH(parse(make_file(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"), f32x2)),
                    Contains("the data buffer has 8 bytes but the tensors cover 4 (4 trailing bytes)"));
  CHECK_THROWS_WITH(parse(make_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    f32x2)),
                    Contains("bad.safetensors") && Contains("duplicate tensor name 't'"));
  CHECK_THROWS_WITH(parse(make_file(R"({"__metadata__":{"k":1}})", "")),
                    Contains("\"__metadata__\" value for key 'k' is not a string"));
  CHECK_THROWS_WITH(parse(make_file(R"({"__metadata__":[]})", "")),
                    Contains("\"__metadata__\" is not a JSON object"));
  CHECK_THROWS_WITH(parse(make_file(R"({"__metadata__":{"k":"a","k":"b"}})", "")),
                    Contains("duplicate key 'k'"));
  CHECK_THROWS_WITH(
      parse(make_file(R"({"x":)" + std::string(100'000, '[') + std::string(100'000, ']') + "}", "")),
      Contains("nests deeper than"));
}

TEST_CASE("safetensors load names the path on disk") {
  const std::string path = temp_file("truncated.safetensors");
  const std::string good = small_file();
  write_file_atomic(path, good.substr(0, good.size() - 3));
  CHECK_THROWS_WITH(SafetensorsFile::load(path), Contains(path) && Contains("truncated"));
  fs::remove(path);
  CHECK_THROWS_WITH(SafetensorsFile::load(path), Contains(path) && Contains("No such file"));
}

TEST_CASE("safetensors truncated at every byte never crashes, always throws gtpo::Error") {
  const std::string good = small_file();
  REQUIRE_NOTHROW(parse(good));
  for (size_t len = 0; len < good.size(); ++len) {
    INFO("truncated to " << len << " of " << good.size() << " bytes");
    CHECK_THROWS_AS(parse(good.substr(0, len)), gtpo::Error);
  }
}

TEST_CASE("safetensors with random byte corruptions either loads or throws gtpo::Error") {
  const std::string good = small_file();
  std::mt19937 rng(1234);
  for (size_t pos = 0; pos < good.size(); ++pos) {
    for (int trial = 0; trial < 4; ++trial) {
      std::string bad = good;
      bad[pos] = static_cast<char>(trial == 0 ? bad[pos] ^ 0x01 : rng());
      try {
        const SafetensorsFile f = parse(bad);
        for (const auto& e : f.entries()) {
          if (e.dtype == "F32" || e.dtype == "BF16" || e.dtype == "F16" || e.dtype == "F64")
            (void)f.read_f32(e.name);
        }
      } catch (const gtpo::Error&) {
        // expected for most corruptions; anything else escapes and fails the test
      }
    }
  }
}

TEST_CASE("safetensors writer rejects inconsistent tensors") {
  SafetensorsWriter w;
  w.add_f32("a", {1}, std::vector<float>{1.0f});
  CHECK_THROWS_WITH(w.add_f32("a", {1}, std::vector<float>{1.0f}), Contains("tensor 'a': added twice"));
  CHECK_THROWS_WITH(w.add_f32("b", {2, 2}, std::vector<float>{1.0f}),
                    Contains("tensor 'b': got 4 bytes but dtype F32 with 4 elements needs 16"));
  CHECK_THROWS_WITH(w.add_raw("c", "F32", {-1}, ""), Contains("tensor 'c': negative dimension -1"));
  CHECK_THROWS_WITH(w.add_raw("d", "Q4", {1}, "x"), Contains("tensor 'd': unknown dtype 'Q4'"));
  CHECK_THROWS_WITH(w.add_f32("e", {1}, std::vector<float>{1.0f}, "I32"), Contains("add_f32 stores only"));
  CHECK_THROWS_WITH(w.add_raw("__metadata__", "U8", {0}, ""), Contains("reserved"));
  CHECK_THROWS_WITH(w.add_raw("bad\xff", "U8", {0}, ""), Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(w.set_metadata("k", "bad\xff"),
                    Contains("metadata value for key 'k' is not valid UTF-8"));
  // The failed adds left the writer usable and unchanged.
  CHECK(parse(w.serialize()).entries().size() == 1);
}

TEST_CASE("f16 and bf16 conversions: known values") {
  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0xc000) == -2.0f);
  CHECK(f16_to_f32(0x7bff) == 65504.0f);
  CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(f16_to_f32(0x3555) == 0.333251953125f);
  CHECK(std::signbit(f16_to_f32(0x8000)));
  CHECK(std::isinf(f16_to_f32(0x7c00)));
  CHECK(f16_to_f32(0xfc00) == -INFINITY);
  CHECK(std::isnan(f16_to_f32(0x7e00)));

  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc000) == -2.0f);
  CHECK(bf16_to_f32(0x4049) == 3.140625f);
  CHECK(bf16_to_f32(0x7f7f) == std::bit_cast<float>(0x7f7f0000u));
  CHECK(std::isnan(bf16_to_f32(0x7fc0)));

  // Round to nearest, ties to even.
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie -> even (down)
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);  // tie -> even (up)
  CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
  CHECK(f32_to_bf16(3.14159265f) == 0x4049);
  CHECK(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds to inf
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));  // payload only in low bits

  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65519.99f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // tie at the top rounds to even = infinity
  CHECK(f32_to_f16(1e10f) == 0x7c00);
  CHECK(f32_to_f16(-INFINITY) == 0xfc00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // tie -> even (zero)
  CHECK(f32_to_f16(std::ldexp(1.0f, -25) * 1.0000001f) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);     // 1.5 units: tie -> even (2)
  CHECK(f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the smallest normal
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::bit_cast<float>(0x7f800001u)))));
}

TEST_CASE("f16 and bf16 conversions: every half value survives half -> float -> half") {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f16 = f16_to_f32(h);
    const float bf = bf16_to_f32(h);
    if (std::isnan(f16)) {
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f16))));
    } else if (f32_to_f16(f16) != h) {
      FAIL("f16 0x" << std::hex << b << " does not round-trip");
    }
    if (std::isnan(bf)) {
      CHECK(std::isnan(bf16_to_f32(f32_to_bf16(bf))));
    } else if (f32_to_bf16(bf) != h) {
      FAIL("bf16 0x" << std::hex << b << " does not round-trip");
    }
  }
}
