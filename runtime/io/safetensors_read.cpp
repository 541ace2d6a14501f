// Loading and validating safetensors files. Nothing here trusts the file: every length, offset and count is
// checked before it is used, so corrupt or hostile input ends in a gtpo::Error, never an out-of-bounds read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/half.h"
#include "runtime/io/safetensors.h"
#include "runtime/io/safetensors_dtype.h"
#include "runtime/shape.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; add byte swapping");

namespace gtpo::io {
namespace {

using nlohmann::json;

// HF's limit: a larger header is taken as a corrupt length field rather than an attempt to allocate it.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Real headers nest 3 levels ({name: {shape: [..]}}); a cap keeps pathological input from building deep
// trees.
constexpr int kMaxJsonDepth = 64;

// Parses the header, rejecting duplicate keys (nlohmann would silently keep the last) and absurd nesting.
json parse_header(std::string_view text, const std::string& where) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) fail(where, "header JSON nests deeper than ", kMaxJsonDepth, " levels");
        if (event == json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end: keys_of_open_objects.pop_back(); break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!keys_of_open_objects.back().insert(key).second) {
          fail(where, depth == 1 ? "duplicate tensor name '" : "duplicate key '", key, "' in the header");
        }
        break;
      }
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    fail(where, "header is not valid JSON: ", e.what());
  }
}

struct Placed {
  SafetensorsEntry entry;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Validates one header entry against itself and the buffer size; the coverage check across entries comes
// later.
Placed parse_entry(const std::string& name, const json& value, uint64_t buffer_size,
                   const std::string& where) {
  const std::string at = where + "tensor '" + name + "': ";
  GTPO_CHECK(value.is_object(), at, "header entry is not a JSON object");

  Placed placed;
  placed.entry.name = name;

  auto dtype_it = value.find("dtype");
  GTPO_CHECK(dtype_it != value.end(), at, "missing \"dtype\"");
  GTPO_CHECK(dtype_it->is_string(), at, "\"dtype\" is not a string");
  placed.entry.dtype = dtype_it->get<std::string>();
  const detail::DtypeInfo* dtype = detail::find_dtype(placed.entry.dtype);
  GTPO_CHECK(dtype != nullptr, at, "unknown dtype '", placed.entry.dtype, "'");

  auto shape_it = value.find("shape");
  GTPO_CHECK(shape_it != value.end(), at, "missing \"shape\"");
  GTPO_CHECK(shape_it->is_array(), at, "\"shape\" is not an array");
  int64_t numel = 1;
  for (const json& dim : *shape_it) {
    GTPO_CHECK(dim.is_number_integer(), at, "\"shape\" has a non-integer dimension ", dim.dump());
    GTPO_CHECK(dim.is_number_unsigned(), at, "\"shape\" has a negative dimension ", dim.dump());
    const uint64_t d = dim.get<uint64_t>();
    GTPO_CHECK(d <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), at, "dimension ", d,
               " is too large");
    placed.entry.shape.push_back(static_cast<int64_t>(d));
    // Every prefix product must fit, as in HF, so numel() can never overflow later.
    GTPO_CHECK(!__builtin_mul_overflow(numel, static_cast<int64_t>(d), &numel), at, "shape ",
               Shape(placed.entry.shape).str(), "... overflows the element count");
  }
  uint64_t nbytes = 0;
  GTPO_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype->size, &nbytes), at, "shape ",
             Shape(placed.entry.shape).str(), " overflows the byte count");

  auto offsets_it = value.find("data_offsets");
  GTPO_CHECK(offsets_it != value.end(), at, "missing \"data_offsets\"");
  const json& offsets = *offsets_it;
  GTPO_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                 offsets[1].is_number_unsigned(),
             at, "\"data_offsets\" must be [begin, end] with non-negative integers, got ", offsets.dump());
  placed.begin = offsets[0].get<uint64_t>();
  placed.end = offsets[1].get<uint64_t>();
  GTPO_CHECK(placed.begin <= placed.end, at, "data_offsets [", placed.begin, ", ", placed.end,
             "] end before they begin");
  GTPO_CHECK(placed.end - placed.begin == nbytes, at, "data_offsets [", placed.begin, ", ", placed.end,
             "] span ", placed.end - placed.begin, " bytes but dtype ", placed.entry.dtype, " with shape ",
             Shape(placed.entry.shape).str(), " needs ", nbytes);
  GTPO_CHECK(placed.end <= buffer_size, at, "data_offsets [", placed.begin, ", ", placed.end,
             "] extend past the end of the data buffer (", buffer_size, " bytes): file truncated?");
  return placed;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& where) {
  GTPO_CHECK(value.is_object(), where, "\"__metadata__\" is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : value.items()) {
    GTPO_CHECK(v.is_string(), where, "\"__metadata__\" value for key '", key, "' is not a string");
    out.emplace(key, v.get<std::string>());
  }
  return out;
}

// HF requires the tensors to tile the buffer exactly: sorted by offset, each starts where the previous ended
// and the last ends at the end of the file. Holes would be unread bytes, overlaps would alias two tensors.
void check_coverage(const std::vector<Placed>& sorted, uint64_t buffer_size, const std::string& where) {
  uint64_t covered = 0;
  const Placed* previous = nullptr;
  for (const Placed& p : sorted) {
    if (p.begin < covered) {
      fail(where, "tensor '", p.entry.name, "' (data_offsets [", p.begin, ", ", p.end, "]) overlaps tensor '",
           previous->entry.name, "' (data_offsets [", previous->begin, ", ", previous->end, "])");
    }
    if (p.begin > covered) {
      fail(where, "gap of ", p.begin - covered, " bytes in the data buffer before tensor '", p.entry.name,
           "' (data_offsets [", p.begin, ", ", p.end, "]); the previous tensor data ends at ", covered);
    }
    covered = p.end;
    previous = &p;
  }
  GTPO_CHECK(covered == buffer_size, where, "the data buffer has ", buffer_size,
             " bytes but the tensors cover ", covered, " (", buffer_size - covered, " trailing bytes)");
}

}  // namespace

namespace {
// A read-only private mapping of a whole file, unmapped when the last SafetensorsFile copy goes.
struct Mapping {
  void* address = nullptr;
  size_t size = 0;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  Mapping(void* a, size_t s) : address(a), size(s) {}
  ~Mapping() {
    if (address != nullptr) munmap(address, size);
  }
};
}  // namespace

SafetensorsFile SafetensorsFile::load(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  GTPO_CHECK(fd >= 0, "safetensors file '", path, "': cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    ::close(fd);
    return parse(read_file(path), path);  // empty or special files: the ordinary read reports them
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping keeps the file's pages reachable
  GTPO_CHECK(address != MAP_FAILED, "safetensors file '", path, "': cannot map it: ", std::strerror(map_errno));
  auto mapping = std::make_shared<const Mapping>(address, size);
  return from_buffer(mapping, std::string_view(static_cast<const char*>(address), size), path);
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, const std::string& label) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  const std::string_view view(*owned);
  return from_buffer(std::move(owned), view, label);
}

SafetensorsFile SafetensorsFile::from_buffer(std::shared_ptr<const void> owner, std::string_view buf,
                                             const std::string& label) {
  const std::string where = "safetensors file '" + label + "': ";
  SafetensorsFile file;
  file.label_ = label;
  file.owner_ = std::move(owner);

  GTPO_CHECK(buf.size() >= 8, where, "file is ", buf.size(),
             " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i)
    header_len |= static_cast<uint64_t>(static_cast<unsigned char>(buf[i])) << (8 * i);
  GTPO_CHECK(header_len <= kMaxHeaderBytes, where, "header length ", header_len,
             " exceeds the 100 MB limit (corrupt length field?)");
  GTPO_CHECK(header_len <= buf.size() - 8, where, "header length ", header_len,
             " runs past the end of the file (", buf.size(), " bytes): file truncated?");
  const size_t data_start = 8 + static_cast<size_t>(header_len);
  const uint64_t buffer_size = buf.size() - data_start;

  const json root = parse_header(std::string_view(buf).substr(8, header_len), where);
  GTPO_CHECK(root.is_object(), where, "header is not a JSON object");

  std::vector<Placed> placed;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      file.metadata_ = parse_metadata(value, where);
    } else {
      placed.push_back(parse_entry(key, value, buffer_size, where));
    }
  }
  // Name breaks ties between empty tensors at one offset, so entries() has one order for one file.
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.entry.name < b.entry.name;
  });
  check_coverage(placed, buffer_size, where);

  file.entries_.reserve(placed.size());
  for (Placed& p : placed) {
    p.entry.bytes = buf.substr(data_start + p.begin, p.end - p.begin);
    file.index_.emplace(p.entry.name, file.entries_.size());
    file.entries_.push_back(std::move(p.entry));
  }
  return file;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const SafetensorsEntry& SafetensorsFile::at(std::string_view name) const {
  const SafetensorsEntry* entry = find(name);
  GTPO_CHECK(entry != nullptr, "safetensors file '", label_, "': no tensor named '", name, "'");
  return *entry;
}

std::vector<float> SafetensorsFile::read_f32(std::string_view name) const {
  std::vector<float> out(static_cast<size_t>(at(name).numel()));
  read_f32_into(name, out);
  return out;
}

void SafetensorsFile::read_f32_into(std::string_view name, std::span<float> out) const {
  const SafetensorsEntry& e = at(name);
  const size_t n = static_cast<size_t>(e.numel());
  GTPO_CHECK(out.size() == n, "safetensors file '", label_, "': tensor '", e.name, "' has ", n,
             " elements, the destination ", out.size());
  const char* src = e.bytes.data();
  // memcpy per element: the data has no alignment guarantee inside the loaded buffer.
  if (e.dtype == "F32") {
    if (n > 0) std::memcpy(out.data(), src, n * sizeof(float));
  } else if (e.dtype == "F16" || e.dtype == "BF16") {
    const bool is_f16 = e.dtype == "F16";
    for (size_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, src + 2 * i, 2);
      out[i] = is_f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
    }
  } else if (e.dtype == "F64") {
    for (size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, src + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
  } else {
    fail("safetensors file '", label_, "': tensor '", e.name, "' has dtype ", e.dtype,
         "; read_f32 reads only F32, F16, BF16 and F64");
  }
}

}  // namespace gtpo::io
