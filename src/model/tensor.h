// Tensors as the model backend receives and returns them over KServe v2 JSON: a name, a shape,
// a datatype and the flat row-major data, held in plain vectors so that parsing, batching and
// encoding need no LibTorch. Only torch_model.cc turns them into torch::Tensor.
#ifndef TAILGUARD_MODEL_TENSOR_H_
#define TAILGUARD_MODEL_TENSOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tailguard::model {

// The KServe v2 datatypes the backend serves. BYTES tensors carry strings (e.g. feature-store
// keys); TorchScript models take the numeric ones.
enum class DataType : uint8_t { kBool, kInt32, kInt64, kFp32, kFp64, kBytes };

// "BOOL", "INT32", "INT64", "FP32", "FP64", "BYTES".
std::string_view DataTypeName(DataType type);
// The inverse of DataTypeName(); nullopt for other names (the KServe names are upper case).
std::optional<DataType> ParseDataType(std::string_view name);

struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  DataType type = DataType::kFp32;
  // Exactly one holds the data, by type: floats (FP32, FP64), ints (BOOL as 0/1, INT32, INT64),
  // strings (BYTES). Its size is the product of `shape`.
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;

  // The number of elements the data holds.
  size_t size() const {
    return type == DataType::kBytes                               ? strings.size()
           : (type == DataType::kFp32 || type == DataType::kFp64) ? floats.size()
                                                                  : ints.size();
  }
  // Elements per row: the product of shape[1..]; 1 for a scalar or a 1-D tensor.
  size_t RowSize() const;
  // Rows along dimension 0; 1 for a scalar.
  int64_t Rows() const { return shape.empty() ? 1 : shape[0]; }
};

}  // namespace tailguard::model

#endif  // TAILGUARD_MODEL_TENSOR_H_
