// Writing safetensors files in the exact layout HF's `safetensors` library produces.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/half.h"
#include "runtime/io/safetensors.h"
#include "runtime/io/safetensors_dtype.h"

namespace gtpo::io {
namespace {

// Rejects strings nlohmann cannot write (invalid UTF-8) when they are added, so the error names the culprit.
void check_utf8(const std::string& s, const std::string& what) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    fail("safetensors writer: ", what, " is not valid UTF-8");
  }
}

template <typename T>
void append_le(std::string& out, T value) {  // host is little-endian (asserted in safetensors_read.cpp)
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

}  // namespace

void SafetensorsWriter::add(Pending p) {
  const std::string at = "safetensors writer: tensor '" + p.name + "': ";
  GTPO_CHECK(p.name != "__metadata__", at, "the name is reserved for the metadata block");
  check_utf8(p.name, "tensor name '" + p.name + "'");
  for (const Pending& other : tensors_) GTPO_CHECK(other.name != p.name, at, "added twice");
  const detail::DtypeInfo* dtype = detail::find_dtype(p.dtype);
  GTPO_CHECK(dtype != nullptr, at, "unknown dtype '", p.dtype, "'");
  int64_t numel = 1;
  for (int64_t d : p.shape) {
    GTPO_CHECK(d >= 0, at, "negative dimension ", d);
    GTPO_CHECK(!__builtin_mul_overflow(numel, d, &numel), at, "shape overflows the element count");
  }
  uint64_t nbytes = 0;
  GTPO_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype->size, &nbytes), at,
             "shape overflows the byte count");
  GTPO_CHECK(p.data().size() == nbytes, at, "got ", p.data().size(), " bytes but dtype ", p.dtype, " with ",
             numel, " elements needs ", nbytes);
  tensors_.push_back(std::move(p));
}

void SafetensorsWriter::add_f32(const std::string& name, const std::vector<int64_t>& shape,
                                std::span<const float> values, std::string_view store_as) {
  Pending p{name, std::string(store_as), shape, {}};
  if (store_as == "F32") {
    p.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  } else if (store_as == "F16" || store_as == "BF16") {
    p.bytes.reserve(values.size() * 2);
    for (float v : values) append_le(p.bytes, store_as == "F16" ? f32_to_f16(v) : f32_to_bf16(v));
  } else if (store_as == "F64") {
    p.bytes.reserve(values.size() * 8);
    for (float v : values) append_le(p.bytes, static_cast<double>(v));
  } else {
    fail("safetensors writer: tensor '", name, "': add_f32 stores only F32, F16, BF16 or F64, not '",
         store_as, "'");
  }
  add(std::move(p));
}

void SafetensorsWriter::add_raw(const std::string& name, const std::string& dtype,
                                const std::vector<int64_t>& shape, std::string_view bytes) {
  add(Pending{name, dtype, shape, std::string(bytes)});
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  check_utf8(key, "metadata key '" + key + "'");
  check_utf8(value, "metadata value for key '" + key + "'");
  metadata_[key] = value;
}

template <typename Sink>
void SafetensorsWriter::emit(const Sink& sink) const {
  // HF order: descending dtype alignment, then name. Every tensor then starts at a multiple of its element
  // size (the header is padded to 8), and the same tensors always give the same bytes.
  std::vector<const Pending*> order;
  for (const Pending& p : tensors_) order.push_back(&p);
  std::sort(order.begin(), order.end(), [](const Pending* a, const Pending* b) {
    const int oa = detail::find_dtype(a->dtype)->order, ob = detail::find_dtype(b->dtype)->order;
    if (oa != ob) return oa > ob;
    return a->name < b->name;
  });

  // ordered_json keeps insertion order: "__metadata__" first, tensors in data order, fields as HF writes
  // them.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata_) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const Pending* p : order) {
    nlohmann::ordered_json info = nlohmann::ordered_json::object();
    info["dtype"] = p->dtype;
    info["shape"] = p->shape;
    const uint64_t end = offset + p->data().size();
    info["data_offsets"] = nlohmann::ordered_json::array({offset, end});
    header[p->name] = std::move(info);
    offset = end;
  }
  std::string text = header.dump();  // cannot throw: every string was checked for UTF-8 when added
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string length;
  append_le(length, static_cast<uint64_t>(text.size()));
  sink(std::string_view(length));
  sink(std::string_view(text));
  for (const Pending* p : order) {
    if (!p->data().empty()) sink(p->data());
  }
}

std::string SafetensorsWriter::serialize() const {
  std::string out;
  emit([&](std::string_view chunk) { out.append(chunk); });
  return out;
}

void SafetensorsWriter::write(const std::string& path) const {
  write_file_atomic_streaming(path, [&](const ByteSink& sink) { emit(sink); });
}

}  // namespace gtpo::io
