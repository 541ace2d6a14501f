// Reader and writer of the Hugging Face safetensors format:
//   8 bytes   little-endian u64 N = header length
//   N bytes   JSON object {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {str: str}}, padded with spaces to a multiple of 8
//   rest      the data buffer; offsets are relative to its start, tensors are C-order little-endian and must
//             cover it exactly, without gaps or overlap.
// The writer lays tensors out as HF's own `safetensors` does (descending dtype alignment, then name; metadata
// first in the header, keys sorted), so the same tensors give the same bytes as HF's writer (checked against
// safetensors 0.8.0 with scripts/reference/safetensors_check.py).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gtpo::io {

// Bytes per element of a safetensors dtype name ("F32", "BF16", ...); nullopt for names this reader does not
// know. Known: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL F8_E5M2 F8_E4M3.
std::optional<size_t> safetensors_dtype_size(std::string_view dtype);

struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string_view
      bytes;  // into the owning SafetensorsFile's buffer; valid while any copy of that file lives

  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps the file read-only (mmap) and validates it: tensor data is read from the page cache, never copied
  // whole into memory. Every problem is a gtpo::Error naming the file (and the tensor).
  static SafetensorsFile load(const std::string& path);
  // Same, from bytes already in memory; `label` names the source in error messages.
  static SafetensorsFile parse(std::string bytes, const std::string& label);

  // nullptr when absent.
  const SafetensorsEntry* find(std::string_view name) const;
  // Throws gtpo::Error naming the file and the tensor when absent.
  const SafetensorsEntry& at(std::string_view name) const;
  // In file (data offset) order.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& label() const { return label_; }

  // The tensor's values as float: F32 copied, F16 / BF16 / F64 converted. Other dtypes are an error.
  std::vector<float> read_f32(std::string_view name) const;
  // Same, converted straight into OUT (numel floats), so a caller can fill its own storage without an
  // intermediate copy.
  void read_f32_into(std::string_view name, std::span<float> out) const;

 private:
  std::string label_;
  static SafetensorsFile from_buffer(std::shared_ptr<const void> owner, std::string_view bytes,
                                     const std::string& label);

  // Keeps the bytes alive (a std::string or a mapping), shared so entries' string_views stay valid when the
  // file object is copied or moved.
  std::shared_ptr<const void> owner_;
  std::vector<SafetensorsEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsWriter {
 public:
  // Stores float values as `store_as`: "F32" (default), "F16", "BF16" (round to nearest even) or "F64".
  void add_f32(const std::string& name, const std::vector<int64_t>& shape, std::span<const float> values,
               std::string_view store_as = "F32");
  // Any known dtype; `bytes` (little-endian, C order) is copied and must be numel * dtype size long.
  void add_raw(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
               std::string_view bytes);
  void set_metadata(const std::string& key, const std::string& value);

  // The whole file in memory.
  std::string serialize() const;
  // Streams the file to `path` atomically (write_file_atomic_streaming).
  void write(const std::string& path) const;

 private:
  struct Pending {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::string bytes;
    std::string_view data() const { return bytes; }
  };
  void add(Pending pending);
  template <typename Sink>
  void emit(const Sink& sink) const;

  std::vector<Pending> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace gtpo::io
