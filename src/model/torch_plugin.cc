// The LibTorch half of TorchModel, built as libtailguard_torch.so and loaded with dlopen() by
// torch_model.cc the first time a model is loaded: a gateway that serves no model, and every
// command that runs none, never load LibTorch (its ~300 libraries and their static
// initialisers cost a second a process).
#include "model/torch_plugin.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <dlfcn.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <chrono>
#include <cstring>
#include <map>

#include "common/strings.h"

namespace tailguard::model {
namespace {

using SteadyClock = std::chrono::steady_clock;

// The error text of a LibTorch exception without its C++ backtrace.
std::string Brief(const c10::Error& e) {
  std::string m = e.what_without_backtrace();
  if (m.size() > 600) m = m.substr(0, 600) + " ...";
  return m;
}

uint64_t Fnv1a(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The graph text without the "# file.py:12:3" source comments, so that moving the Python source
// around does not change the fingerprint.
std::string WithoutSourceComments(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (const size_t hash = line.find(" # "); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    out.append(line);
    out += '\n';
    start = end + 1;
  }
  return out;
}

torch::Tensor ToTorch(const HostTensor& t) {
  std::vector<int64_t> shape(t.shape.begin(), t.shape.end());
  switch (t.type) {
    case DataType::kFp32: {
      torch::Tensor out = torch::empty(shape, torch::kFloat);
      float* p = out.data_ptr<float>();
      for (size_t i = 0; i < t.floats.size(); ++i) p[i] = static_cast<float>(t.floats[i]);
      return out;
    }
    case DataType::kFp64: {
      torch::Tensor out = torch::empty(shape, torch::kDouble);
      std::memcpy(out.data_ptr<double>(), t.floats.data(), t.floats.size() * sizeof(double));
      return out;
    }
    case DataType::kInt64: {
      torch::Tensor out = torch::empty(shape, torch::kLong);
      std::memcpy(out.data_ptr<int64_t>(), t.ints.data(), t.ints.size() * sizeof(int64_t));
      return out;
    }
    case DataType::kInt32: {
      torch::Tensor out = torch::empty(shape, torch::kInt);
      int32_t* p = out.data_ptr<int32_t>();
      for (size_t i = 0; i < t.ints.size(); ++i) p[i] = static_cast<int32_t>(t.ints[i]);
      return out;
    }
    case DataType::kBool: {
      torch::Tensor out = torch::empty(shape, torch::kBool);
      bool* p = out.data_ptr<bool>();
      for (size_t i = 0; i < t.ints.size(); ++i) p[i] = t.ints[i] != 0;
      return out;
    }
    case DataType::kBytes:
      break;
  }
  return {};
}

HostTensor FromTorch(torch::Tensor t, std::string name) {
  HostTensor out;
  out.name = std::move(name);
  t = t.detach().cpu();
  switch (t.scalar_type()) {
    case torch::kDouble:
      out.type = DataType::kFp64;
      break;
    case torch::kLong:
      out.type = DataType::kInt64;
      break;
    case torch::kInt:
    case torch::kShort:
    case torch::kChar:
    case torch::kByte:
      out.type = DataType::kInt32;
      t = t.to(torch::kInt);
      break;
    case torch::kBool:
      out.type = DataType::kBool;
      break;
    default:
      out.type = DataType::kFp32;
      t = t.to(torch::kFloat);
      break;
  }
  t = t.contiguous();
  out.shape.assign(t.sizes().begin(), t.sizes().end());
  const int64_t n = t.numel();
  switch (out.type) {
    case DataType::kFp32: {
      const float* p = t.data_ptr<float>();
      out.floats.assign(p, p + n);
      break;
    }
    case DataType::kFp64: {
      const double* p = t.data_ptr<double>();
      out.floats.assign(p, p + n);
      break;
    }
    case DataType::kInt64: {
      const int64_t* p = t.data_ptr<int64_t>();
      out.ints.assign(p, p + n);
      break;
    }
    case DataType::kInt32: {
      const int32_t* p = t.data_ptr<int32_t>();
      out.ints.assign(p, p + n);
      break;
    }
    case DataType::kBool: {
      const bool* p = t.data_ptr<bool>();
      out.ints.reserve(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) out.ints.push_back(p[i] ? 1 : 0);
      break;
    }
    case DataType::kBytes:
      break;
  }
  return out;
}

// The submodule path of the running operator ("encoder.layers.0"), at most `depth` levels, from
// TorchScript's module hierarchy ({"TOP(Net)::forward", "encoder(Encoder)::forward", ...}).
std::string LayerOf(const std::vector<std::string>& hierarchy, int depth) {
  std::string out;
  int levels = 0;
  for (size_t i = 1; i < hierarchy.size() && levels < depth; ++i) {  // [0] is TOP(...)
    const std::string_view token = hierarchy[i];
    const size_t paren = token.find('(');
    if (paren == 0 || paren == std::string_view::npos) continue;  // "::function" calls
    if (!out.empty()) out += '.';
    out.append(token.substr(0, paren));
    ++levels;
  }
  return out.empty() ? std::string("(root)") : out;
}

// The profile of the forward pass running on this thread.
struct Collector {
  int depth = 0;          // nesting of operator records
  int profile_depth = 2;  // submodule levels kept
  std::map<std::string, uint64_t> layers, ops;
};
thread_local Collector* t_collector = nullptr;

struct OpContext : at::ObserverContext {
  SteadyClock::time_point start;
  std::string layer;
};

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  Collector* c = t_collector;
  if (c == nullptr || fn.scope() != at::RecordScope::FUNCTION) return nullptr;
  if (c->depth++ != 0) return nullptr;
  auto ctx = std::make_unique<OpContext>();
  ctx->layer = LayerOf(torch::jit::currentModuleHierarchy(), c->profile_depth);
  ctx->start = SteadyClock::now();
  return ctx;
}

void OnOpEnd(const at::RecordFunction& fn, at::ObserverContext* context) {
  Collector* c = t_collector;
  if (c == nullptr || fn.scope() != at::RecordScope::FUNCTION) return;
  --c->depth;
  if (context == nullptr) return;
  auto* ctx = static_cast<OpContext*>(context);
  const uint64_t ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - ctx->start)
          .count());
  c->layers[ctx->layer] += ns;
  c->ops[fn.name()] += ns;
}

struct TorchImpl final : TorchModel::Impl {
  absl::StatusOr<std::vector<HostTensor>> Forward(const std::vector<HostTensor>& inputs,
                                                  ForwardProfile* profile,
                                                  int profile_depth) const override;
  mutable torch::jit::Module module;
};

void SetIntraOpThreads(int n) {
  n = std::max(n, 1);
  at::set_num_threads(n);
  // LibTorch calls BLAS through libblas.so.3; with OpenBLAS (pthreads) behind it, every matrix
  // product would also use OpenBLAS's own pool of one thread per core, on top of our workers.
  // Limit it the same way when it is OpenBLAS (found by name, so no link dependency).
  using SetThreads = void (*)(int);
  if (auto* set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(n);
  }
}

absl::StatusOr<LoadedTorchModel> Load(const std::string& path) {
  auto impl = std::make_unique<TorchImpl>();
  try {
    impl->module = torch::jit::load(path, torch::kCPU);
    impl->module.eval();
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        Cat(path,
            ": cannot load a TorchScript model (save one with torch.jit.script(m).save(path)"
            "): ",
            Brief(e)));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(path, ": cannot load a TorchScript model: ", e.what()));
  }
  if (!impl->module.find_method("forward")) {
    return absl::InvalidArgumentError(Cat(path, ": the TorchScript module has no forward method"));
  }
  uint64_t h = 14695981039346656037ull;
  int64_t parameters = 0;
  try {
    std::shared_ptr<torch::jit::Graph> graph = impl->module.get_method("forward").graph()->copy();
    torch::jit::Inline(*graph);
    h = Fnv1a(h, WithoutSourceComments(graph->toString(false)));
    for (const auto& p : impl->module.named_parameters(/*recurse=*/true)) {
      h = Fnv1a(h, Cat(p.name, ' ', c10::str(p.value.sizes()), ' ',
                       std::string(c10::toString(p.value.scalar_type())), '\n'));
      parameters += p.value.numel();
    }
    for (const auto& b : impl->module.named_buffers(/*recurse=*/true)) {
      h = Fnv1a(h, Cat(b.name, ' ', c10::str(b.value.sizes()), ' ',
                       std::string(c10::toString(b.value.scalar_type())), '\n'));
    }
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(Cat(path, ": cannot read the model's graph: ", Brief(e)));
  }
  LoadedTorchModel model;
  model.impl = std::move(impl);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  model.fingerprint = hex;
  model.parameters = parameters;
  return model;
}

absl::StatusOr<std::vector<HostTensor>> TorchImpl::Forward(const std::vector<HostTensor>& inputs,
                                                           ForwardProfile* profile,
                                                           int profile_depth) const {
  Collector collector;
  collector.profile_depth = profile_depth;
  std::optional<at::CallbackHandle> handle;
  torch::jit::IValue result;
  auto failed = [&](absl::Status status) {
    if (handle) at::removeCallback(*handle);
    t_collector = nullptr;
    return status;
  };
  try {
    std::vector<torch::jit::IValue> args;
    args.reserve(inputs.size());
    for (const HostTensor& t : inputs) {
      if (t.type == DataType::kBytes) {
        return absl::InvalidArgumentError(
            Cat("input \"", t.name,
                "\" is BYTES, which a TorchScript model cannot take; send numbers, or configure "
                "it as the model's feature key (features.input)"));
      }
      size_t numel = 1;
      for (int64_t d : t.shape) numel *= static_cast<size_t>(d);
      if (numel != t.size()) {
        return absl::InternalError(
            Cat("input \"", t.name, "\" holds ", t.size(), " values for ", numel, " elements"));
      }
      args.emplace_back(ToTorch(t));
    }
    torch::NoGradGuard no_grad;
    if (profile != nullptr) {
      t_collector = &collector;
      handle = at::addThreadLocalCallback(
          at::RecordFunctionCallback(&OnOpStart, &OnOpEnd).scopes({at::RecordScope::FUNCTION}));
    }
    result = module.forward(std::move(args));
  } catch (const c10::OutOfMemoryError& e) {
    return failed(absl::ResourceExhaustedError(Cat("out of memory: ", Brief(e))));
  } catch (const c10::Error& e) {
    return failed(absl::InvalidArgumentError(Cat("the model rejected the inputs: ", Brief(e))));
  } catch (const std::bad_alloc&) {
    return failed(absl::ResourceExhaustedError("out of memory building the input tensors"));
  } catch (const std::exception& e) {
    return failed(absl::InvalidArgumentError(Cat("the model rejected the inputs: ", e.what())));
  }
  if (handle) at::removeCallback(*handle);
  t_collector = nullptr;
  if (profile != nullptr) {
    profile->layer_ns.assign(collector.layers.begin(), collector.layers.end());
    profile->op_ns.assign(collector.ops.begin(), collector.ops.end());
  }

  std::vector<HostTensor> outputs;
  try {
    auto add = [&outputs](const torch::jit::IValue& v) -> bool {
      if (!v.isTensor()) return false;
      outputs.push_back(FromTorch(v.toTensor(), Cat("output", outputs.size())));
      return true;
    };
    bool ok = true;
    if (result.isTensor()) {
      ok = add(result);
    } else if (result.isTuple()) {
      for (const auto& e : result.toTupleRef().elements()) ok = ok && add(e);
    } else if (result.isList()) {
      for (const auto& e : result.toListRef()) ok = ok && add(e);
    } else {
      ok = false;
    }
    if (!ok) {
      return absl::FailedPreconditionError(
          Cat("the model returned a ", result.tagKind(),
              "; the backend serves models whose forward returns a tensor or a tuple of tensors"));
    }

  } catch (const std::exception& e) {
    return absl::InternalError(Cat("reading the model's outputs: ", e.what()));
  }
  return outputs;
}

constexpr TorchPlugin kPlugin = {kTorchPluginVersion, &Load, &SetIntraOpThreads};

}  // namespace
}  // namespace tailguard::model

extern "C" __attribute__((visibility("default"))) const tailguard::model::TorchPlugin*
TailguardTorchPlugin() {
  return &tailguard::model::kPlugin;
}
