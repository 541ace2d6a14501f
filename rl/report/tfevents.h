// TensorBoard's event file format, written from scratch: TFRecord framing (length, masked CRC-32C of the
// length, the record, masked CRC-32C of the record) around tensorflow.Event protocol buffers holding scalar
// summaries. What TensorBoard's own reader (and W&B's and MLflow's tfevents importers) read.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gtpo::rl {

// CRC-32C (Castagnoli), as TFRecord uses it, and TFRecord's masking of it.
uint32_t crc32c(const std::string& bytes);
uint32_t masked_crc32c(const std::string& bytes);

class TfEventsWriter {
 public:
  // Starts the file with the version event ("brain.Event:2") at WALL_TIME (seconds since the epoch).
  explicit TfEventsWriter(double wall_time);
  // One event at STEP holding a scalar summary value per (tag, value).
  void scalars(int64_t step, double wall_time, const std::vector<std::pair<std::string, double>>& values);
  // The file's bytes so far.
  const std::string& bytes() const { return bytes_; }

 private:
  void record(const std::string& event);
  std::string bytes_;
};

}  // namespace gtpo::rl
