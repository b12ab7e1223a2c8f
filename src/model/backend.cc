#include "model/backend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/strings.h"
#include "model/kserve_json.h"
#include "model/torch_model.h"

namespace tailguard::model {
namespace {

using Json = nlohmann::json;

std::string ErrorBody(std::string_view code, std::string_view message) {
  Json doc;
  doc["error"]["code"] = std::string(code);
  doc["error"]["message"] = std::string(message);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

InferResult Error(int status, std::string_view code, std::string_view message) {
  InferResult r;
  r.status = status;
  r.body = ErrorBody(code, message);
  return r;
}

double Ms(Duration d) { return static_cast<double>(d.count()) / 1e6; }

std::string TimingEntry(std::string_view name, Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", Ms(d));
  return Cat(name, ";dur=", buf);
}

// `timings` into `r`, and as its Server-Timing value.
void SetTimings(InferResult& r, std::vector<TimedStage> timings) {
  r.server_timing.clear();
  for (const TimedStage& t : timings) {
    if (!r.server_timing.empty()) r.server_timing += ", ";
    r.server_timing += TimingEntry(t.name, t.duration);
  }
  r.timings = std::move(timings);
}

// A submodule path as a Server-Timing metric name (an HTTP token): "encoder.0" -> "encoder_0",
// "(root)" -> "root".
std::string TimingName(std::string_view layer) {
  std::string out;
  for (char c : layer) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (keep) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? std::string("root") : out;
}

// One loaded version, shared by the requests that use it: a version replaced or switched away
// from stays alive until its last queued request is answered.
struct Version {
  std::string version;
  std::unique_ptr<TorchModel> torch;
  Series* batch_size = nullptr;  // rows per forward pass; nullptr without a registry
  std::atomic<uint64_t> requests{0}, failures{0}, batches{0}, profiled{0};
  mutable std::mutex profile_mu;
  std::map<std::string, uint64_t> layer_ns, op_ns;  // guarded by profile_mu
};

// Values (tensor elements) that may wait in one model's queue; more get 503 like a full queue.
// About 1 GiB of doubles: the queue holds requests by count, this holds them by size.
constexpr uint64_t kMaxQueuedValues = uint64_t{1} << 27;

struct Pending {
  std::shared_ptr<Version> version;
  InferRequest request;
  uint64_t input_size = 0;  // values over all inputs
  MonoTime enqueued{};
  MonoTime deadline{};
  ModelBackend::Done done;
};

// The rows of a request that can be batched: every input has the same dimension 0, at least 1.
// 0 when the request cannot share a pass (a scalar input, zero rows, or inputs that disagree).
int64_t BatchRows(const InferRequest& r) {
  int64_t rows = 0;
  for (const HostTensor& t : r.inputs) {
    if (t.shape.empty() || t.shape[0] < 1) return 0;
    if (rows != 0 && t.shape[0] != rows) return 0;
    rows = t.shape[0];
  }
  return rows;
}

// Whether two requests can share a forward pass: the same version, both batchable, and inputs
// with the same names, types and shapes except for dimension 0.
bool Compatible(const Pending& a, const Pending& b) {
  if (a.version != b.version || a.request.inputs.size() != b.request.inputs.size()) return false;
  if (BatchRows(a.request) == 0 || BatchRows(b.request) == 0) return false;
  for (size_t i = 0; i < a.request.inputs.size(); ++i) {
    const HostTensor& x = a.request.inputs[i];
    const HostTensor& y = b.request.inputs[i];
    if (x.name != y.name || x.type != y.type || x.shape.size() != y.shape.size() ||
        x.shape.empty()) {
      return false;
    }
    if (!std::equal(x.shape.begin() + 1, x.shape.end(), y.shape.begin() + 1)) return false;
  }
  return true;
}

// The rows a request counts for in a batch: its batchable rows, or 1 when it runs alone.
int64_t RowsOf(const Pending& p) { return std::max<int64_t>(BatchRows(p.request), 1); }

void Append(HostTensor& into, const HostTensor& from) {
  into.shape[0] += from.shape[0];
  into.floats.insert(into.floats.end(), from.floats.begin(), from.floats.end());
  into.ints.insert(into.ints.end(), from.ints.begin(), from.ints.end());
  into.strings.insert(into.strings.end(), from.strings.begin(), from.strings.end());
}

// Rows [begin, begin + rows) of `t`.
HostTensor Slice(const HostTensor& t, int64_t begin, int64_t rows) {
  HostTensor out;
  out.name = t.name;
  out.type = t.type;
  out.shape = t.shape;
  out.shape[0] = rows;
  const size_t row = t.RowSize();
  const size_t from = static_cast<size_t>(begin) * row;
  const size_t to = from + static_cast<size_t>(rows) * row;
  if (!t.floats.empty()) out.floats.assign(t.floats.begin() + from, t.floats.begin() + to);
  if (!t.ints.empty()) out.ints.assign(t.ints.begin() + from, t.ints.begin() + to);
  if (!t.strings.empty()) out.strings.assign(t.strings.begin() + from, t.strings.begin() + to);
  return out;
}

}  // namespace

struct ModelBackend::Impl {
  struct Model {
    ModelConfig config;
    mutable std::mutex mu;
    std::condition_variable cv;
    std::deque<Pending> queue;                               // guarded by mu
    uint64_t queued_values = 0;                              // guarded by mu
    std::map<std::string, std::shared_ptr<Version>> loaded;  // guarded by mu
    std::string default_version;                             // guarded by mu
    bool stopping = false;                                   // guarded by mu
    std::atomic<uint64_t> rejected{0}, expired{0}, passes{0};
    // Mean forward-pass time, nanoseconds (an EWMA), for Retry-After.
    std::atomic<int64_t> pass_ns{0};
    std::atomic<bool> warned_unsplittable{false};
    std::vector<std::thread> workers;
    Series* queue_depth = nullptr;  // requests waiting; nullptr without a registry

    // The queue's length moved by `delta`. REQUIRES: mu held (so the gauge follows the queue).
    void Queued(int64_t delta) {
      if (queue_depth != nullptr) queue_depth->Add(delta);
    }
  };

  BackendOptions options;
  std::vector<std::unique_ptr<Model>> models;
  std::atomic<bool> stopped{false};

  void Log(const std::string& line) const {
    if (options.log == nullptr) return;
    std::fprintf(options.log, "tailguard: %s\n", line.c_str());
    std::fflush(options.log);
  }

  Model* Find(std::string_view name) const {
    for (const auto& m : models) {
      if (m->config.name == name) return m.get();
    }
    return nullptr;
  }

  // The series of the backend's signals (nullptr without a registry, or when it refuses them:
  // signals are never worth refusing a model over).
  Series* QueueDepthSeries(std::string_view model) const;
  Series* BatchSizeSeries(std::string_view model, std::string_view version) const;
  // `s`, or nullptr (logged, naming `model` and `what`) when the registry refused it.
  Series* Signal(absl::StatusOr<Series*> s, std::string_view model, std::string_view what) const;

  void Work(Model& m);
  void RunBatch(Model& m, std::vector<Pending> batch);
  // One forward pass over compatible requests (after their lookups); a failed or unsplittable
  // pass of several requests runs each alone.
  void RunPass(Model& m, std::vector<Pending> batch, const std::vector<Duration>& feature,
               MonoTime start);
  // Replaces the feature-key input of `p` by the stored vectors. Returns an error result, or
  // nullopt when the lookup succeeded (or the model has none).
  std::optional<InferResult> LookUpFeatures(const Model& m, Pending& p);
};

Series* ModelBackend::Impl::Signal(absl::StatusOr<Series*> s, std::string_view model,
                                   std::string_view what) const {
  if (s.ok()) return *s;
  Log(Cat("model ", model, ": no ", what, " series: ", s.status().message()));
  return nullptr;
}

Series* ModelBackend::Impl::QueueDepthSeries(std::string_view model) const {
  if (options.registry == nullptr) return nullptr;
  return Signal(options.registry->Gauge("tailguard_model_queue_depth",
                                        {{"model", std::string(model)}}, Unit::kCount),
                model, "queue-depth");
}

Series* ModelBackend::Impl::BatchSizeSeries(std::string_view model,
                                            std::string_view version) const {
  if (options.registry == nullptr) return nullptr;
  return Signal(
      options.registry->Values("tailguard_model_batch_size",
                               {{"model", std::string(model)}, {"version", std::string(version)}},
                               Unit::kCount),
      model, "batch-size");
}

ModelBackend::ModelBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ModelBackend::~ModelBackend() { Stop(); }

absl::StatusOr<std::unique_ptr<ModelBackend>> ModelBackend::Create(std::vector<ModelConfig> models,
                                                                   BackendOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  TorchModel::SetIntraOpThreads(options.intra_op_threads);
  for (ModelConfig& c : models) {
    if (impl->Find(c.name) != nullptr) {
      return absl::InvalidArgumentError(Cat("model \"", c.name, "\" is configured twice"));
    }
    if (c.versions.empty()) {
      return absl::InvalidArgumentError(Cat("model \"", c.name, "\" has no versions"));
    }
    if (!c.features.input.empty() && !options.features) {
      return absl::InvalidArgumentError(
          Cat("model \"", c.name, "\" looks up features.input \"", c.features.input,
              "\" but no feature store is configured (feature_store:)"));
    }
    auto m = std::make_unique<Impl::Model>();
    for (const ModelVersionConfig& v : c.versions) {
      if (m->loaded.contains(v.version)) {
        return absl::InvalidArgumentError(
            Cat("model \"", c.name, "\" version \"", v.version, "\" is configured twice"));
      }
      absl::StatusOr<std::unique_ptr<TorchModel>> t = TorchModel::Load(v.path);
      if (!t.ok()) {
        return absl::InvalidArgumentError(
            Cat("model \"", c.name, "\" version \"", v.version, "\": ", t.status().message()));
      }
      auto version = std::make_shared<Version>();
      version->version = v.version;
      version->torch = *std::move(t);
      version->batch_size = impl->BatchSizeSeries(c.name, v.version);
      impl->Log(Cat("model ", c.name, " version ", v.version, " loaded from ", v.path,
                    " (graph fingerprint ", version->torch->fingerprint(), ", ",
                    version->torch->parameters(), " parameters)"));
      m->loaded.emplace(v.version, std::move(version));
    }
    m->default_version = c.default_version.empty() ? c.versions.front().version : c.default_version;
    if (!m->loaded.contains(m->default_version)) {
      return absl::InvalidArgumentError(Cat("model \"", c.name, "\": default_version \"",
                                            m->default_version, "\" is not one of its versions"));
    }
    m->queue_depth = impl->QueueDepthSeries(c.name);
    m->config = std::move(c);
    impl->models.push_back(std::move(m));
  }
  std::unique_ptr<ModelBackend> backend(new ModelBackend(std::move(impl)));
  for (auto& m : backend->impl_->models) {
    for (int i = 0; i < std::max(m->config.workers, 1); ++i) {
      Impl::Model* model = m.get();
      Impl* self = backend->impl_.get();
      m->workers.emplace_back([self, model] { self->Work(*model); });
    }
  }
  return backend;
}

void ModelBackend::Stop() {
  if (impl_->stopped.exchange(true)) return;
  for (auto& m : impl_->models) {
    std::deque<Pending> left;
    {
      std::lock_guard<std::mutex> lock(m->mu);
      m->stopping = true;
      left.swap(m->queue);
      m->Queued(-static_cast<int64_t>(left.size()));
      m->queued_values = 0;
    }
    m->cv.notify_all();
    for (Pending& p : left) {
      p.done(Error(503, "shutting_down", "the model backend is shutting down; retry elsewhere"));
    }
    for (std::thread& t : m->workers) t.join();
    m->workers.clear();
  }
}

bool ModelBackend::Serves(std::string_view model) const { return impl_->Find(model) != nullptr; }

void ModelBackend::Submit(std::string_view model, std::string_view version, std::string_view body,
                          MonoTime deadline, Done done) {
  Impl::Model* m = impl_->Find(model);
  if (m == nullptr) {
    std::string names;
    for (const auto& x : impl_->models) names += Cat(names.empty() ? "" : ", ", x->config.name);
    done(Error(404, "model_not_found",
               Cat("no model \"", model, "\" is loaded; the backend serves: ", names)));
    return;
  }
  absl::StatusOr<InferRequest> request = ParseInferRequest(body);
  if (!request.ok()) {
    done(Error(400, "bad_request",
               Cat("KServe v2 inference request: ", request.status().message())));
    return;
  }
  Pending p;
  for (const HostTensor& t : request->inputs) p.input_size += t.size();
  p.request = *std::move(request);
  p.enqueued = impl_->options.clock->MonotonicNow();
  p.deadline = deadline;
  p.done = std::move(done);
  std::unique_lock<std::mutex> lock(m->mu);
  if (m->stopping) {
    lock.unlock();
    p.done(Error(503, "shutting_down", "the model backend is shutting down; retry elsewhere"));
    return;
  }
  const std::string& v = version.empty() ? m->default_version : std::string(version);
  const auto it = m->loaded.find(v);
  if (it == m->loaded.end()) {
    std::string names;
    for (const auto& [name, unused] : m->loaded) names += Cat(names.empty() ? "" : ", ", name);
    lock.unlock();
    p.done(Error(404, "version_not_found",
                 Cat("model \"", model, "\" has no version \"", version, "\"; loaded: ", names)));
    return;
  }
  const bool too_big = m->queued_values + p.input_size > kMaxQueuedValues;
  if (m->queue.size() >= m->config.queue_capacity || (too_big && !m->queue.empty())) {
    const size_t queued = m->queue.size();
    const std::string& label = it->second->version;
    lock.unlock();
    m->rejected.fetch_add(1, std::memory_order_relaxed);
    // The time the queue takes to drain at the mean pass time, rounded up, at least 1 s.
    const double pass_s = static_cast<double>(m->pass_ns.load(std::memory_order_relaxed)) / 1e9;
    const double batches = std::ceil(static_cast<double>(queued) /
                                     static_cast<double>(std::max(m->config.max_batch_size, 1)));
    InferResult r = Error(503, "queue_full",
                          Cat("model \"", model, "\" has ", queued, " requests queued (",
                              too_big ? Cat("over ", kMaxQueuedValues, " tensor values")
                                      : std::string("queue_capacity"),
                              "); retry after Retry-After"));
    r.version = label;
    r.retry_after_s =
        std::max(1, static_cast<int>(std::ceil(batches * pass_s / std::max(m->config.workers, 1))));
    p.done(std::move(r));
    return;
  }
  p.version = it->second;
  m->queued_values += p.input_size;
  m->queue.push_back(std::move(p));
  m->Queued(1);
  lock.unlock();
  // All: a worker gathering a batch may not be able to take this request, an idle one can.
  m->cv.notify_all();
}

void ModelBackend::Impl::Work(Model& m) {
  const Clock& clock = *options.clock;
  const size_t max_rows = static_cast<size_t>(std::max(m.config.max_batch_size, 1));
  for (;;) {
    std::vector<Pending> batch;
    std::vector<Pending> expired;
    {
      std::unique_lock<std::mutex> lock(m.mu);
      m.cv.wait(lock, [&m] { return m.stopping || !m.queue.empty(); });
      if (m.stopping) return;
      m.queued_values -= m.queue.front().input_size;
      batch.push_back(std::move(m.queue.front()));
      m.queue.pop_front();
      m.Queued(-1);
      size_t rows = static_cast<size_t>(RowsOf(batch.front()));
      if (max_rows > 1) {
        const MonoTime until = batch.front().enqueued + m.config.max_queue_delay;
        for (;;) {
          for (auto it = m.queue.begin(); it != m.queue.end() && rows < max_rows;) {
            const size_t r = static_cast<size_t>(RowsOf(*it));
            if (rows + r <= max_rows && Compatible(batch.front(), *it)) {
              rows += r;
              m.queued_values -= it->input_size;
              batch.push_back(std::move(*it));
              it = m.queue.erase(it);
              m.Queued(-1);
            } else {
              ++it;
            }
          }
          if (rows >= max_rows || m.stopping || clock.MonotonicNow() >= until) break;
          // Waits for more requests until the batch's delay is up (real time: the queue delay
          // is a latency the clients see).
          m.cv.wait_for(lock, until - clock.MonotonicNow());
        }
      }
    }
    const MonoTime now = clock.MonotonicNow();
    for (auto it = batch.begin(); it != batch.end();) {
      if (it->deadline != MonoTime{} && now >= it->deadline) {
        expired.push_back(std::move(*it));
        it = batch.erase(it);
      } else {
        ++it;
      }
    }
    for (Pending& p : expired) {
      m.expired.fetch_add(1, std::memory_order_relaxed);
      InferResult r = Error(504, "deadline_exceeded",
                            Cat("the request waited ", Ms(now - p.enqueued), " ms in model \"",
                                m.config.name, "\"'s queue, past its deadline (timeouts.request)"));
      r.input_size = p.input_size;
      r.version = p.version->version;
      SetTimings(r, {{"queue", now - p.enqueued}});
      p.done(std::move(r));
    }
    if (!batch.empty()) RunBatch(m, std::move(batch));
  }
}

std::optional<InferResult> ModelBackend::Impl::LookUpFeatures(const Model& m, Pending& p) {
  const FeatureLookup& f = m.config.features;
  if (f.input.empty()) return std::nullopt;
  for (HostTensor& t : p.request.inputs) {
    if (t.name != f.input) continue;
    if (t.type != DataType::kBytes || t.shape.empty() || t.shape.size() > 2 ||
        (t.shape.size() == 2 && t.shape[1] != 1)) {
      return Error(400, "bad_request",
                   Cat("input \"", t.name,
                       "\" holds feature-store keys: send it as BYTES with shape [rows] or "
                       "[rows, 1]"));
    }
    HostTensor features;
    features.name = t.name;
    features.type = DataType::kFp32;
    size_t dim = 0;
    for (size_t i = 0; i < t.strings.size(); ++i) {
      const std::string key = Cat(f.prefix, t.strings[i]);
      absl::StatusOr<std::vector<float>> v = options.features(key);
      if (!v.ok()) {
        const bool missing = v.status().code() == absl::StatusCode::kNotFound;
        return Error(missing ? 404 : 503, missing ? "feature_not_found" : "feature_store_error",
                     Cat("feature lookup for \"", key, "\" (input \"", t.name,
                         "\"): ", v.status().message()));
      }
      if (i == 0) dim = v->size();
      if (v->size() != dim) {
        return Error(500, "feature_store_error",
                     Cat("feature vectors differ in length: \"", key, "\" has ", v->size(),
                         ", the first key has ", dim));
      }
      features.floats.insert(features.floats.end(), v->begin(), v->end());
    }
    features.shape = {static_cast<int64_t>(t.strings.size()), static_cast<int64_t>(dim)};
    t = std::move(features);
    return std::nullopt;
  }
  return Error(400, "bad_request",
               Cat("model \"", m.config.name, "\" needs input \"", f.input,
                   "\" (BYTES, the feature-store keys)"));
}

void ModelBackend::Impl::RunBatch(Model& m, std::vector<Pending> batch) {
  const Clock& clock = *options.clock;
  const MonoTime start = clock.MonotonicNow();
  // Feature lookups, per request; a failed lookup answers that request only.
  std::vector<Duration> feature(batch.size());
  for (size_t i = 0; i < batch.size();) {
    const MonoTime t0 = clock.MonotonicNow();
    std::optional<InferResult> failed = LookUpFeatures(m, batch[i]);
    feature[i] = clock.MonotonicNow() - t0;
    if (failed) {
      failed->input_size = batch[i].input_size;
      failed->version = batch[i].version->version;
      SetTimings(*failed, {{"queue", start - batch[i].enqueued}, {"feature", feature[i]}});
      batch[i].done(*std::move(failed));
      batch.erase(batch.begin() + static_cast<ptrdiff_t>(i));
      feature.erase(feature.begin() + static_cast<ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  // Lookups turn keys into vectors whose length comes from the store: requests that still agree
  // share a pass, the others get passes of their own.
  while (!batch.empty()) {
    std::vector<Pending> pass;
    std::vector<Duration> pass_feature;
    std::vector<Pending> rest;
    std::vector<Duration> rest_feature;
    for (size_t i = 0; i < batch.size(); ++i) {
      const bool joins = i == 0 || Compatible(pass.front(), batch[i]);
      (joins ? pass : rest).push_back(std::move(batch[i]));
      (joins ? pass_feature : rest_feature).push_back(feature[i]);
    }
    RunPass(m, std::move(pass), pass_feature, start);
    batch = std::move(rest);
    feature = std::move(rest_feature);
  }
}

void ModelBackend::Impl::RunPass(Model& m, std::vector<Pending> batch,
                                 const std::vector<Duration>& feature, MonoTime start) {
  const Clock& clock = *options.clock;
  Version& version = *batch.front().version;

  // One pass over the concatenated rows.
  std::vector<HostTensor> inputs = batch.front().request.inputs;
  std::vector<int64_t> rows{RowsOf(batch.front())};
  for (size_t i = 1; i < batch.size(); ++i) {
    for (size_t k = 0; k < inputs.size(); ++k) Append(inputs[k], batch[i].request.inputs[k]);
    rows.push_back(RowsOf(batch[i]));
  }
  const uint64_t pass = m.passes.fetch_add(1, std::memory_order_relaxed);
  const double rate = m.config.profile_sample_rate;
  const bool profile = rate > 0 && std::floor(static_cast<double>(pass + 1) * rate) >
                                       std::floor(static_cast<double>(pass) * rate);
  ForwardProfile prof;
  const MonoTime infer_start = clock.MonotonicNow();
  absl::StatusOr<std::vector<HostTensor>> outputs =
      version.torch->Forward(inputs, profile ? &prof : nullptr, m.config.profile_depth);
  const Duration infer = clock.MonotonicNow() - infer_start;
  inputs.clear();
  const int64_t old = m.pass_ns.load(std::memory_order_relaxed);
  m.pass_ns.store(old == 0 ? infer.count() : (old * 7 + infer.count()) / 8,
                  std::memory_order_relaxed);
  version.batches.fetch_add(1, std::memory_order_relaxed);

  // A batch's outputs must have one row per input row to be split back.
  int64_t total_rows = 0;
  for (int64_t r : rows) total_rows += r;
  bool splittable = true;
  if (outputs.ok() && batch.size() > 1) {
    for (const HostTensor& t : *outputs) splittable &= !t.shape.empty() && t.shape[0] == total_rows;
  }
  if (batch.size() > 1 && (!outputs.ok() || !splittable)) {
    // One request's bad input must not fail the others, and outputs without a batch dimension
    // cannot be split: each request runs alone.
    if (!splittable && !m.warned_unsplittable.exchange(true)) {
      Log(Cat("model ", m.config.name,
              ": its outputs have no batch dimension, so batched requests "
              "run one by one; set max_batch_size: 1"));
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      std::vector<Pending> alone;
      alone.push_back(std::move(batch[i]));
      RunPass(m, std::move(alone), {feature[i]}, start);
    }
    return;
  }
  version.requests.fetch_add(batch.size(), std::memory_order_relaxed);
  if (version.batch_size != nullptr) version.batch_size->Record(static_cast<uint64_t>(total_rows));
  std::vector<TimedStage> layers;
  if (profile && outputs.ok()) {
    version.profiled.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(version.profile_mu);
    for (const auto& [name, ns] : prof.layer_ns) {
      version.layer_ns[name] += ns;
      layers.push_back({Cat("layer_", TimingName(name)), Duration(ns)});
    }
    for (const auto& [name, ns] : prof.op_ns) version.op_ns[name] += ns;
  }
  int64_t row = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    Pending& p = batch[i];
    const MonoTime post_start = clock.MonotonicNow();
    InferResult r;
    if (!outputs.ok()) {
      version.failures.fetch_add(1, std::memory_order_relaxed);
      const absl::StatusCode code = outputs.status().code();
      r = Error(code == absl::StatusCode::kInvalidArgument     ? 400
                : code == absl::StatusCode::kResourceExhausted ? 503
                                                               : 500,
                code == absl::StatusCode::kInvalidArgument ? "model_error" : "model_failure",
                Cat("model \"", m.config.name, "\" version \"", version.version,
                    "\": ", outputs.status().message()));
    } else if (batch.size() == 1) {
      r.body = EncodeInferResponse(m.config.name, version.version, p.request.id, *outputs);
    } else {
      std::vector<HostTensor> mine;
      for (const HostTensor& t : *outputs) mine.push_back(Slice(t, row, rows[i]));
      r.body = EncodeInferResponse(m.config.name, version.version, p.request.id, mine);
    }
    row += rows[i];
    r.input_size = p.input_size;
    r.version = version.version;
    r.batch_rows = static_cast<int>(total_rows);
    std::vector<TimedStage> timings = {{"queue", start - p.enqueued},
                                       {"feature", feature[i]},
                                       {"infer", infer},
                                       {"post", clock.MonotonicNow() - post_start}};
    timings.insert(timings.end(), layers.begin(), layers.end());
    SetTimings(r, std::move(timings));
    p.done(std::move(r));
  }
}

namespace {

// "graph 3fa2.. -> 9b1c.., parameters 120 k -> 2.1 M", or "same graph and parameters".
std::string VersionDiff(const Version& from, const Version& to) {
  const TorchModel& a = *from.torch;
  const TorchModel& b = *to.torch;
  std::string out;
  if (a.fingerprint() != b.fingerprint()) {
    out = Cat("graph ", a.fingerprint(), " -> ", b.fingerprint());
  }
  if (a.parameters() != b.parameters()) {
    out += Cat(out.empty() ? "" : ", ", "parameters ", a.parameters(), " -> ", b.parameters());
  }
  return out.empty() ? "same graph and parameters" : out;
}

}  // namespace

absl::Status ModelBackend::SetDefaultVersion(std::string_view model, std::string_view version) {
  Impl::Model* m = impl_->Find(model);
  if (m == nullptr) return absl::NotFoundError(Cat("no model \"", model, "\" is loaded"));
  std::string what;  // the change, when there is one
  {
    std::lock_guard<std::mutex> lock(m->mu);
    if (!m->loaded.contains(std::string(version))) {
      return absl::NotFoundError(
          Cat("model \"", model, "\" has no version \"", version, "\"; load it first"));
    }
    if (m->default_version != version) {
      const Version& from = *m->loaded.at(m->default_version);
      const Version& to = *m->loaded.at(std::string(version));
      what =
          Cat("default version ", m->default_version, " -> ", version, ": ", VersionDiff(from, to));
    }
    m->default_version = std::string(version);
  }
  impl_->Log(Cat("model ", model, ": default version is now ", version));
  if (!what.empty() && impl_->options.on_change) impl_->options.on_change(model, what);
  return absl::OkStatus();
}

absl::Status ModelBackend::LoadVersion(std::string_view model, std::string_view version,
                                       const std::string& path) {
  Impl::Model* m = impl_->Find(model);
  if (m == nullptr) return absl::NotFoundError(Cat("no model \"", model, "\" is loaded"));
  absl::StatusOr<std::unique_ptr<TorchModel>> t = TorchModel::Load(path);
  if (!t.ok()) return t.status();
  auto v = std::make_shared<Version>();
  v->version = std::string(version);
  v->torch = *std::move(t);
  v->batch_size = impl_->BatchSizeSeries(model, version);
  impl_->Log(Cat("model ", model, " version ", version, " loaded from ", path,
                 " (graph fingerprint ", v->torch->fingerprint(), ")"));
  std::string what;
  {
    std::lock_guard<std::mutex> lock(m->mu);
    auto it = m->loaded.find(std::string(version));
    // Reloading the version that serves changes what serves; another one changes nothing yet.
    if (it != m->loaded.end() && version == m->default_version) {
      what = Cat("version ", version, " reloaded: ", VersionDiff(*it->second, *v));
    }
    m->loaded[std::string(version)] = std::move(v);
  }
  if (!what.empty() && impl_->options.on_change) impl_->options.on_change(model, what);
  return absl::OkStatus();
}

std::vector<ModelStatus> ModelBackend::Status() const {
  std::vector<ModelStatus> out;
  for (const auto& m : impl_->models) {
    ModelStatus s;
    s.name = m->config.name;
    s.queue_capacity = m->config.queue_capacity;
    s.max_batch_size = m->config.max_batch_size;
    s.rejected = m->rejected.load(std::memory_order_relaxed);
    s.expired = m->expired.load(std::memory_order_relaxed);
    std::vector<std::shared_ptr<Version>> versions;
    {
      std::lock_guard<std::mutex> lock(m->mu);
      s.default_version = m->default_version;
      s.queued = m->queue.size();
      for (const auto& [name, v] : m->loaded) versions.push_back(v);
    }
    for (const auto& v : versions) {
      VersionStatus vs;
      vs.version = v->version;
      vs.path = v->torch->path();
      vs.fingerprint = v->torch->fingerprint();
      vs.parameters = v->torch->parameters();
      vs.is_default = v->version == s.default_version;
      vs.requests = v->requests.load(std::memory_order_relaxed);
      vs.failures = v->failures.load(std::memory_order_relaxed);
      vs.batches = v->batches.load(std::memory_order_relaxed);
      vs.profiled = v->profiled.load(std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(v->profile_mu);
      vs.layer_ns.assign(v->layer_ns.begin(), v->layer_ns.end());
      vs.op_ns.assign(v->op_ns.begin(), v->op_ns.end());
      s.versions.push_back(std::move(vs));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string ModelBackend::StatusJson() const {
  Json models = Json::array();
  for (const ModelStatus& s : Status()) {
    Json m;
    m["name"] = s.name;
    m["default_version"] = s.default_version;
    m["queued"] = s.queued;
    m["queue_capacity"] = s.queue_capacity;
    m["rejected"] = s.rejected;
    m["expired"] = s.expired;
    m["max_batch_size"] = s.max_batch_size;
    Json versions = Json::array();
    for (const VersionStatus& v : s.versions) {
      Json j;
      j["version"] = v.version;
      j["path"] = v.path;
      j["fingerprint"] = v.fingerprint;
      j["parameters"] = v.parameters;
      j["default"] = v.is_default;
      j["requests"] = v.requests;
      j["failures"] = v.failures;
      j["batches"] = v.batches;
      j["profiled_passes"] = v.profiled;
      Json layers = Json::object(), ops = Json::object();
      for (const auto& [name, ns] : v.layer_ns) layers[name] = static_cast<double>(ns) / 1e9;
      for (const auto& [name, ns] : v.op_ns) ops[name] = static_cast<double>(ns) / 1e9;
      j["layer_seconds"] = std::move(layers);
      j["operator_seconds"] = std::move(ops);
      versions.push_back(std::move(j));
    }
    m["versions"] = std::move(versions);
    models.push_back(std::move(m));
  }
  Json doc;
  doc["models"] = std::move(models);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tailguard::model
