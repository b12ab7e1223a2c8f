// Fuzzes Histogram::Deserialize: arbitrary bytes never crash it, and whatever it accepts
// serializes back to the same bytes and the same histogram. Each input is tried twice: as is,
// and with its last four bytes replaced by the right CRC-32, so that the fuzzer also explores
// the structural checks behind the checksum.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/encoding.h"
#include "tailguard/histogram.h"

namespace {

void Check(std::string_view bytes) {
  absl::StatusOr<tailguard::Histogram> h = tailguard::Histogram::Deserialize(bytes);
  if (!h.ok()) return;
  if (h->Serialize() != bytes) std::abort();
  absl::StatusOr<tailguard::Histogram> again = tailguard::Histogram::Deserialize(h->Serialize());
  if (!again.ok() || !(*again == *h)) std::abort();
  // Queries on an accepted histogram stay within its range.
  const uint64_t p99 = h->Quantile(0.99);
  if (h->count() > 0 && (p99 < h->min() || p99 > h->max())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  if (size >= 4) {
    std::string fixed(bytes.substr(0, size - 4));
    tailguard::encoding::PutFixed32(fixed, tailguard::encoding::Crc32(fixed));
    Check(fixed);
  }
  return 0;
}
