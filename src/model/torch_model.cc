// TorchModel without LibTorch: the LibTorch half (torch_plugin.cc) is a plugin,
// libtailguard_torch.so, loaded the first time a model is loaded. Found at, in order:
// $TAILGUARD_TORCH_PLUGIN; the path it was built at (TAILGUARD_TORCH_PLUGIN_PATH); next to the
// executable; ../lib/tailguard/ from it.
#include "model/torch_model.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "common/strings.h"
#include "model/torch_plugin.h"

namespace tailguard::model {
namespace {

constexpr const char kPluginName[] = "libtailguard_torch.so";

std::string ExecutableDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

struct PluginState {
  std::once_flag once;
  const TorchPlugin* plugin = nullptr;
  std::string error;                     // why it could not be loaded
  std::atomic<int> intra_op_threads{0};  // 0: not set yet
};

PluginState& State() {
  static PluginState* state = new PluginState;  // never destroyed: LibTorch is never unloaded
  return *state;
}

// The plugin, loaded on the first call; nullptr and State().error when it cannot be.
const TorchPlugin* Plugin() {
  PluginState& s = State();
  std::call_once(s.once, [&s] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("TAILGUARD_TORCH_PLUGIN"); env != nullptr && *env) {
      candidates.emplace_back(env);
    } else {
#ifdef TAILGUARD_TORCH_PLUGIN_PATH
      candidates.emplace_back(TAILGUARD_TORCH_PLUGIN_PATH);
#endif
      const std::string dir = ExecutableDir();
      if (!dir.empty()) {
        candidates.push_back(Cat(dir, "/", kPluginName));
        candidates.push_back(Cat(dir, "/../lib/tailguard/", kPluginName));
      }
    }
    std::string tried;
    for (const std::string& path : candidates) {
      if (::access(path.c_str(), F_OK) != 0) {
        tried += Cat(tried.empty() ? "" : ", ", path, " (absent)");
        continue;
      }
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* why = ::dlerror();
        tried += Cat(tried.empty() ? "" : ", ", path, " (", why != nullptr ? why : "?", ")");
        continue;
      }
      using Entry = const TorchPlugin* (*)();
      auto entry = reinterpret_cast<Entry>(::dlsym(handle, "TailguardTorchPlugin"));
      const TorchPlugin* p = entry != nullptr ? entry() : nullptr;
      if (p == nullptr || p->version != kTorchPluginVersion) {
        tried += Cat(tried.empty() ? "" : ", ", path, " (not this build's plugin)");
        continue;
      }
      s.plugin = p;
      if (const int n = s.intra_op_threads.load(); n > 0) p->set_intra_op_threads(n);
      return;
    }
    s.error = Cat("the LibTorch backend (", kPluginName, ") could not be loaded: tried ", tried,
                  "; build it with the tailguard tree (it is built next to the gateway), or set "
                  "TAILGUARD_TORCH_PLUGIN to its path");
  });
  return s.plugin;
}

}  // namespace

TorchModel::TorchModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchModel::~TorchModel() = default;

void TorchModel::SetIntraOpThreads(int n) {
  n = std::max(n, 1);
  PluginState& s = State();
  s.intra_op_threads = n;
  // Applied now when LibTorch is loaded, else when it is (no load for a setting alone).
  if (const TorchPlugin* p = s.plugin; p != nullptr) p->set_intra_op_threads(n);
}

absl::StatusOr<std::unique_ptr<TorchModel>> TorchModel::Load(const std::string& path) {
  const TorchPlugin* plugin = Plugin();
  if (plugin == nullptr) return absl::FailedPreconditionError(Cat(path, ": ", State().error));
  absl::StatusOr<LoadedTorchModel> loaded = plugin->load(path);
  if (!loaded.ok()) return loaded.status();
  std::unique_ptr<TorchModel> model(new TorchModel(std::move(loaded->impl)));
  model->fingerprint_ = std::move(loaded->fingerprint);
  model->path_ = path;
  model->parameters_ = loaded->parameters;
  return model;
}

absl::StatusOr<std::vector<HostTensor>> TorchModel::Forward(const std::vector<HostTensor>& inputs,
                                                            ForwardProfile* profile,
                                                            int profile_depth) const {
  return impl_->Forward(inputs, profile, profile_depth);
}

}  // namespace tailguard::model
