#include "rl/report/tfevents.h"

#include <array>
#include <cstring>

namespace gtpo::rl {

namespace {

// Protocol buffer wire format: varints, keys (field number << 3 | wire type), fixed-width little endian.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire_type) {
  varint(out, static_cast<uint64_t>(field << 3 | wire_type));
}
template <typename T>
void little_endian(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // x86 and ARM are little endian, as the format
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}
void length_delimited(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

// tensorflow.Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5.
std::string event(double wall_time, int64_t step) {
  std::string e;
  key(e, 1, 1);
  little_endian(e, wall_time);
  key(e, 2, 0);
  varint(e, static_cast<uint64_t>(step));
  return e;
}

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;  // Castagnoli, reflected
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32c(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = crc_table()[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const std::string& bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

TfEventsWriter::TfEventsWriter(double wall_time) {
  std::string e = event(wall_time, 0);
  length_delimited(e, 3, "brain.Event:2");
  record(e);
}

void TfEventsWriter::scalars(int64_t step, double wall_time,
                             const std::vector<std::pair<std::string, double>>& values) {
  // tensorflow.Summary: value = 1 (repeated); Summary.Value: tag = 1 (string), simple_value = 2 (float).
  std::string summary;
  for (const auto& [tag, v] : values) {
    std::string value;
    length_delimited(value, 1, tag);
    key(value, 2, 5);
    little_endian(value, static_cast<float>(v));
    length_delimited(summary, 1, value);
  }
  std::string e = event(wall_time, step);
  length_delimited(e, 5, summary);
  record(e);
}

void TfEventsWriter::record(const std::string& event) {
  std::string length;
  little_endian(length, static_cast<uint64_t>(event.size()));
  bytes_ += length;
  little_endian(bytes_, masked_crc32c(length));
  bytes_ += event;
  little_endian(bytes_, masked_crc32c(event));
}

}  // namespace gtpo::rl
