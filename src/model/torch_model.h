// One loaded TorchScript module: runs a batch of host tensors through `forward`, optionally
// timing each operator and each submodule, and fingerprints the module's graph. The only file
// of the backend that includes LibTorch is torch_plugin.cc, a plugin (libtailguard_torch.so)
// loaded on the first Load(); this header does not, so the gateway and the tests compile
// without LibTorch's headers, and a process that loads no model never loads LibTorch.
#ifndef TAILGUARD_MODEL_TORCH_MODEL_H_
#define TAILGUARD_MODEL_TORCH_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tensor.h"

namespace tailguard::model {

// Where a profiled forward pass spent its time. Only the outermost operators count (an
// operator called inside another is part of its caller's time), so the entries of each list
// add up to the time spent in operators.
struct ForwardProfile {
  // Per submodule, named by its path from the root ("encoder.0") down to the profile
  // depth; operators of the root module itself count under "(root)".
  std::vector<std::pair<std::string, uint64_t>> layer_ns;
  // Per operator ("aten::linear").
  std::vector<std::pair<std::string, uint64_t>> op_ns;
};

class TorchModel {
 public:
  ~TorchModel();
  TorchModel(const TorchModel&) = delete;
  TorchModel& operator=(const TorchModel&) = delete;

  // Loads a TorchScript file (torch.jit.script or torch.jit.trace, then .save()) for inference
  // on the CPU. InvalidArgument naming the file when it cannot be read or is not TorchScript;
  // FailedPrecondition when the LibTorch plugin cannot be loaded (the message says where it
  // looked).
  static absl::StatusOr<std::unique_ptr<TorchModel>> Load(const std::string& path);

  // Runs forward(inputs...) without gradients. Inputs are passed positionally in the order
  // given; BYTES inputs cannot be passed (InvalidArgument). The result must be a tensor or a
  // tuple or list of tensors; outputs are named output0, output1, ... With `profile` not null,
  // fills it with per-submodule (down to `profile_depth` levels) and per-operator times.
  // InvalidArgument with the model's own message when forward rejects the inputs (wrong shape,
  // wrong type); ResourceExhausted when memory runs out; FailedPrecondition when the model
  // returns something other than tensors; Internal for inconsistent inputs. Never throws.
  absl::StatusOr<std::vector<HostTensor>> Forward(const std::vector<HostTensor>& inputs,
                                                  ForwardProfile* profile = nullptr,
                                                  int profile_depth = 2) const;

  // 16 hex digits: a hash of forward's graph (with its calls to submodules inlined and source
  // locations dropped) and of every parameter's and buffer's name, shape and dtype. Retrained
  // weights keep it; a changed layer, operator or shape changes it.
  const std::string& fingerprint() const { return fingerprint_; }
  // Number of parameters (weights) the module holds.
  int64_t parameters() const { return parameters_; }
  const std::string& path() const { return path_; }

  // Sets the number of threads each operator may use, for the whole process (LibTorch keeps one
  // setting), and OpenBLAS's thread count to match when OpenBLAS is the BLAS. n >= 1. Applied
  // when LibTorch is loaded, if it is not yet.
  static void SetIntraOpThreads(int n);

  // The LibTorch half (model/torch_plugin.h).
  struct Impl;

 private:
  explicit TorchModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string fingerprint_;
  std::string path_;
  int64_t parameters_ = 0;
};

}  // namespace tailguard::model

#endif  // TAILGUARD_MODEL_TORCH_MODEL_H_
