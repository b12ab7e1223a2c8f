// Fuzzes the model backend's KServe v2 request parser (src/model/kserve_json.h).
// - ParseInferRequest never crashes or throws, and every error is InvalidArgument.
// - An accepted request is consistent: unique non-empty names, at most kMaxDimensions
//   dimensions, exactly the product of the shape in values of the datatype's kind, at most
//   kMaxRequestElements values in all.
// - Round trip: its inputs encoded as a response's outputs and read back as a request give the
//   same tensors (FP32 compared as float; non-finite values cannot come from JSON).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "model/kserve_json.h"

namespace {

using tailguard::model::DataType;
using tailguard::model::HostTensor;
using tailguard::model::InferRequest;

void CheckConsistent(const InferRequest& r) {
  std::set<std::string> names;
  size_t total = 0;
  for (const HostTensor& t : r.inputs) {
    if (t.name.empty() || !names.insert(t.name).second) std::abort();
    if (t.shape.size() > tailguard::model::kMaxDimensions) std::abort();
    size_t product = 1;
    for (int64_t d : t.shape) {
      if (d < 0) std::abort();
      product *= static_cast<size_t>(d);
    }
    if (t.size() != product) std::abort();
    const size_t filled = t.floats.size() + t.ints.size() + t.strings.size();
    if (filled != product) std::abort();  // only the datatype's own vector holds data
    total += product;
  }
  if (total > tailguard::model::kMaxRequestElements) std::abort();
}

bool SameTensor(const HostTensor& a, const HostTensor& b) {
  if (a.name != b.name || a.type != b.type || a.shape != b.shape) return false;
  if (a.ints != b.ints || a.strings != b.strings || a.floats.size() != b.floats.size()) {
    return false;
  }
  for (size_t i = 0; i < a.floats.size(); ++i) {
    const double x = a.floats[i], y = b.floats[i];
    if (a.type == DataType::kFp32) {
      const float fx = static_cast<float>(x);
      if (!std::isfinite(fx)) continue;  // out of float range: encoded as null, not comparable
      if (fx != static_cast<float>(y)) return false;
    } else if (x != y) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<InferRequest> r = tailguard::model::ParseInferRequest(text);
  if (!r.ok()) {
    if (r.status().code() != absl::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  CheckConsistent(*r);
  // Round trip through the response encoder.
  const std::string encoded = tailguard::model::EncodeInferResponse("m", "1", r->id, r->inputs);
  nlohmann::json doc = nlohmann::json::parse(encoded, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) std::abort();
  // FP32 values beyond float range become null in the response; such requests are not
  // comparable after the round trip.
  for (const HostTensor& t : r->inputs) {
    if (t.type != DataType::kFp32) continue;
    for (double v : t.floats) {
      if (!std::isfinite(static_cast<float>(v))) return 0;
    }
  }
  doc["inputs"] = doc["outputs"];
  doc.erase("outputs");
  const absl::StatusOr<InferRequest> again = tailguard::model::ParseInferRequest(
      doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!again.ok() || again->inputs.size() != r->inputs.size()) std::abort();
  for (size_t i = 0; i < r->inputs.size(); ++i) {
    // BYTES strings that are not valid UTF-8 are replaced in the dump: not comparable.
    if (r->inputs[i].type == DataType::kBytes) continue;
    if (!SameTensor(r->inputs[i], again->inputs[i])) std::abort();
  }
  return 0;
}
