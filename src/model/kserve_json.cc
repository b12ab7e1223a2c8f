#include "model/kserve_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "common/strings.h"

namespace tailguard::model {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kDataTypeNames[] = {"BOOL", "INT32", "INT64", "FP32", "FP64", "BYTES"};

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += Cat(i == 0 ? "" : ", ", shape[i]);
  return out + "]";
}

// Appends the leaves of `data` (flat or nested) to `tensor`. Fails with a message relative to
// the input ("data[3]: ...").
absl::Status Flatten(const Json& data, HostTensor& tensor, size_t limit, int depth,
                     const std::string& path) {
  if (data.is_array()) {
    if (depth > static_cast<int>(kMaxDimensions)) {
      return absl::InvalidArgumentError(
          Cat(path, ": nests deeper than ", kMaxDimensions, " dimensions"));
    }
    for (size_t i = 0; i < data.size(); ++i) {
      if (absl::Status s = Flatten(data[i], tensor, limit, depth + 1, Cat(path, '[', i, ']'));
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }
  if (tensor.size() >= limit) {
    return absl::InvalidArgumentError(Cat(path, ": more values than the shape ",
                                          ShapeText(tensor.shape), " holds (", limit, ")"));
  }
  switch (tensor.type) {
    case DataType::kBytes:
      if (!data.is_string()) {
        return absl::InvalidArgumentError(Cat(path, ": BYTES data must be strings"));
      }
      tensor.strings.push_back(data.get<std::string>());
      return absl::OkStatus();
    case DataType::kFp32:
    case DataType::kFp64:
      if (!data.is_number()) {
        return absl::InvalidArgumentError(
            Cat(path, ": ", DataTypeName(tensor.type), " data must be numbers"));
      }
      tensor.floats.push_back(data.get<double>());
      return absl::OkStatus();
    case DataType::kBool:
      if (!data.is_boolean()) {
        return absl::InvalidArgumentError(Cat(path, ": BOOL data must be true or false"));
      }
      tensor.ints.push_back(data.get<bool>() ? 1 : 0);
      return absl::OkStatus();
    case DataType::kInt32:
    case DataType::kInt64: {
      const int64_t lo = tensor.type == DataType::kInt32 ? std::numeric_limits<int32_t>::min()
                                                         : std::numeric_limits<int64_t>::min();
      const int64_t hi = tensor.type == DataType::kInt32 ? std::numeric_limits<int32_t>::max()
                                                         : std::numeric_limits<int64_t>::max();
      if (data.is_number_integer() && !data.is_number_unsigned()) {
        const int64_t v = data.get<int64_t>();
        if (v >= lo && v <= hi) {
          tensor.ints.push_back(v);
          return absl::OkStatus();
        }
      } else if (data.is_number_unsigned()) {
        const uint64_t v = data.get<uint64_t>();
        if (v <= static_cast<uint64_t>(hi)) {
          tensor.ints.push_back(static_cast<int64_t>(v));
          return absl::OkStatus();
        }
      }
      return absl::InvalidArgumentError(Cat(path, ": ", DataTypeName(tensor.type),
                                            " data must be whole numbers from ", lo, " to ", hi));
    }
  }
  return absl::InternalError("unknown datatype");
}

absl::StatusOr<HostTensor> ParseInput(const Json& in, const std::string& path, size_t& budget) {
  if (!in.is_object()) return absl::InvalidArgumentError(Cat(path, ": must be an object"));
  HostTensor t;
  const auto name = in.find("name");
  if (name == in.end() || !name->is_string() || name->get<std::string>().empty()) {
    return absl::InvalidArgumentError(Cat(path, ".name: required, a non-empty string"));
  }
  t.name = name->get<std::string>();
  const auto type = in.find("datatype");
  if (type == in.end() || !type->is_string()) {
    return absl::InvalidArgumentError(
        Cat(path, ".datatype: required, one of BOOL, INT32, INT64, FP32, FP64, BYTES"));
  }
  const std::optional<DataType> dt = ParseDataType(type->get<std::string>());
  if (!dt) {
    return absl::InvalidArgumentError(Cat(path, ".datatype: \"", type->get<std::string>(),
                                          "\" is not served; use one of BOOL, INT32, INT64, FP32, "
                                          "FP64, BYTES"));
  }
  t.type = *dt;
  const auto shape = in.find("shape");
  if (shape == in.end() || !shape->is_array()) {
    return absl::InvalidArgumentError(Cat(path, ".shape: required, an array of sizes"));
  }
  if (shape->size() > kMaxDimensions) {
    return absl::InvalidArgumentError(
        Cat(path, ".shape: ", shape->size(), " dimensions; at most ", kMaxDimensions));
  }
  uint64_t elements = 1;
  for (size_t i = 0; i < shape->size(); ++i) {
    const Json& d = (*shape)[i];
    if (!d.is_number_unsigned() || d.get<uint64_t>() > kMaxRequestElements) {
      return absl::InvalidArgumentError(
          Cat(path, ".shape[", i, "]: must be a whole number from 0 to ", kMaxRequestElements));
    }
    t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    elements *= d.get<uint64_t>();
    if (elements > budget) {
      return absl::InvalidArgumentError(Cat(path, ".shape: ", ShapeText(t.shape),
                                            " is more than the ", kMaxRequestElements,
                                            " values a request may carry"));
    }
  }
  budget -= elements;
  const auto data = in.find("data");
  if (data == in.end()) return absl::InvalidArgumentError(Cat(path, ".data: required"));
  if (absl::Status s = Flatten(*data, t, elements, 0, Cat(path, ".data")); !s.ok()) return s;
  if (t.size() != elements) {
    return absl::InvalidArgumentError(Cat(path, ".data: expected ", elements, " values for shape ",
                                          ShapeText(t.shape), ", got ", t.size()));
  }
  return t;
}

void WriteFloat(Json& array, double v, DataType type) {
  if (!std::isfinite(v)) {
    array.push_back(nullptr);
  } else if (type == DataType::kFp32) {
    array.push_back(static_cast<float>(v));
  } else {
    array.push_back(v);
  }
}

}  // namespace

std::string_view DataTypeName(DataType type) { return kDataTypeNames[static_cast<int>(type)]; }

std::optional<DataType> ParseDataType(std::string_view name) {
  for (size_t i = 0; i < std::size(kDataTypeNames); ++i) {
    if (kDataTypeNames[i] == name) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

size_t HostTensor::RowSize() const {
  size_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

absl::StatusOr<InferRequest> ParseInferRequest(std::string_view body) {
  const Json doc = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InvalidArgumentError(
        "the request body is not valid JSON; send {\"inputs\": [{\"name\", \"shape\", "
        "\"datatype\", \"data\"}]}");
  }
  if (!doc.is_object()) return absl::InvalidArgumentError("the request body must be an object");
  InferRequest r;
  if (const auto id = doc.find("id"); id != doc.end()) {
    if (!id->is_string()) return absl::InvalidArgumentError("id: must be a string");
    r.id = id->get<std::string>();
  }
  const auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_array() || inputs->empty()) {
    return absl::InvalidArgumentError("inputs: required, a non-empty array of tensors");
  }
  size_t budget = kMaxRequestElements;
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < inputs->size(); ++i) {
    absl::StatusOr<HostTensor> t = ParseInput((*inputs)[i], Cat("inputs[", i, "]"), budget);
    if (!t.ok()) return t.status();
    if (!names.insert(t->name).second) {
      return absl::InvalidArgumentError(
          Cat("inputs[", i, "].name: \"", t->name, "\" is already the name of another input"));
    }
    r.inputs.push_back(*std::move(t));
  }
  return r;
}

std::string EncodeInferResponse(std::string_view model, std::string_view version,
                                std::string_view id, const std::vector<HostTensor>& outputs) {
  Json doc = Json::object();
  doc["model_name"] = std::string(model);
  doc["model_version"] = std::string(version);
  if (!id.empty()) doc["id"] = std::string(id);
  Json outs = Json::array();
  for (const HostTensor& t : outputs) {
    Json o;
    o["name"] = t.name;
    o["shape"] = t.shape;
    o["datatype"] = std::string(DataTypeName(t.type));
    Json data = Json::array();
    switch (t.type) {
      case DataType::kFp32:
      case DataType::kFp64:
        for (double v : t.floats) WriteFloat(data, v, t.type);
        break;
      case DataType::kBool:
        for (int64_t v : t.ints) data.push_back(v != 0);
        break;
      case DataType::kInt32:
      case DataType::kInt64:
        for (int64_t v : t.ints) data.push_back(v);
        break;
      case DataType::kBytes:
        for (const std::string& s : t.strings) data.push_back(s);
        break;
    }
    o["data"] = std::move(data);
    outs.push_back(std::move(o));
  }
  doc["outputs"] = std::move(outs);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tailguard::model
