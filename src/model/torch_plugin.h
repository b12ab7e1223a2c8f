// What libtailguard_torch.so (torch_plugin.cc, the only file that includes LibTorch) gives
// torch_model.cc, which loads it with dlopen() on first use. No LibTorch type crosses: tensors
// go as HostTensor, errors as absl::Status. Both sides are built together, by the same compiler
// from the same headers; kTorchPluginVersion guards against a stale file all the same.
#ifndef TAILGUARD_MODEL_TORCH_PLUGIN_H_
#define TAILGUARD_MODEL_TORCH_PLUGIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/tensor.h"
#include "model/torch_model.h"

namespace tailguard::model {

// One loaded module, on LibTorch's side.
struct TorchModel::Impl {
  virtual ~Impl() = default;
  // As TorchModel::Forward().
  virtual absl::StatusOr<std::vector<HostTensor>> Forward(const std::vector<HostTensor>& inputs,
                                                          ForwardProfile* profile,
                                                          int profile_depth) const = 0;
};

struct LoadedTorchModel {
  std::unique_ptr<TorchModel::Impl> impl;
  std::string fingerprint;
  int64_t parameters = 0;
};

inline constexpr int kTorchPluginVersion = 1;

struct TorchPlugin {
  int version;  // kTorchPluginVersion of the plugin's build
  // As TorchModel::Load(), without the path and the wrapper.
  absl::StatusOr<LoadedTorchModel> (*load)(const std::string& path);
  // As TorchModel::SetIntraOpThreads().
  void (*set_intra_op_threads)(int n);
};

}  // namespace tailguard::model

// The plugin's one exported symbol.
extern "C" const tailguard::model::TorchPlugin* TailguardTorchPlugin();

#endif  // TAILGUARD_MODEL_TORCH_PLUGIN_H_
