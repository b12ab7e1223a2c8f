// The KServe v2 (Open Inference Protocol) JSON bodies the model backend reads and writes:
// https://kserve.github.io/website/latest/modelserving/data_plane/v2_protocol/
// Pure functions on strings; no I/O, no exceptions out.
#ifndef TAILGUARD_MODEL_KSERVE_JSON_H_
#define TAILGUARD_MODEL_KSERVE_JSON_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tensor.h"

namespace tailguard::model {

struct InferRequest {
  std::string id;  // echoed in the response; "" when the request has none
  std::vector<HostTensor> inputs;
};

// Most elements one request may carry over all its inputs, and most dimensions of a shape.
inline constexpr size_t kMaxRequestElements = size_t{1} << 24;
inline constexpr size_t kMaxDimensions = 8;

// Parses an inference request body:
//   {"id": "...", "inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32",
//                             "data": [1, 2, 3, 4, 5, 6]}], "outputs": [...], "parameters": {...}}
// `data` may be flat or nested row-major, as the protocol allows. `outputs` and `parameters` are
// accepted and ignored. InvalidArgument naming the field ("inputs[0].data: expected 6 values for
// shape [2, 3], got 5") for anything else: no inputs, duplicate input names, an unknown
// datatype, a negative or too large shape, data of the wrong type or count (an integer type
// takes whole numbers in its range; BOOL takes true/false), more than kMaxRequestElements.
absl::StatusOr<InferRequest> ParseInferRequest(std::string_view body);

// The response body: {"model_name", "model_version", "id" (when not empty), "outputs": [{"name",
// "shape", "datatype", "data"}]}. Non-finite floats are written as null (JSON has no NaN).
std::string EncodeInferResponse(std::string_view model, std::string_view version,
                                std::string_view id, const std::vector<HostTensor>& outputs);

}  // namespace tailguard::model

#endif  // TAILGUARD_MODEL_KSERVE_JSON_H_
