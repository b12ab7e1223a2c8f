// The built-in model backend: serves TorchScript models in-process on gateway routes
// (`backend: local`), with a bounded queue per model, optional dynamic batching, worker threads,
// several versions side by side, sampled operator-level profiling and feature-store lookups.
// The gateway hands it KServe v2 request bodies and gets the response body and the stages it
// measured (as a Server-Timing value) back on a callback. No LibTorch or Beast in this header.
#ifndef TAILGUARD_MODEL_BACKEND_H_
#define TAILGUARD_MODEL_BACKEND_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::model {

// Fetches the feature vector stored under `key` ("user:42"): the model layer's view of a feature
// store (store::FeatureStore, through a lambda the composer writes: the backend knows no store).
// Called from the model worker threads, several at once; NotFound answers 404
// (feature_not_found), any other error 503 (feature_store_error).
using FeatureLookupFn = std::function<absl::StatusOr<std::vector<float>>(std::string_view key)>;

struct BackendOptions {
  // Threads each operator may use (LibTorch's intra-op setting, process-wide). Default 1: with
  // several workers, parallelism comes from the workers.
  int intra_op_threads = 1;
  // Where feature lookups read; what it refers to must outlive the backend. Required when a
  // model configures `features`.
  FeatureLookupFn features;
  const Clock* clock = &Clock::Real();
  std::FILE* log = nullptr;  // model loads and version switches; nullptr for none
  // Where the backend's signals go: tailguard_model_queue_depth{model} (a gauge of requests
  // waiting) and tailguard_model_batch_size{model,version} (rows per forward pass). nullptr for
  // none; must outlive the backend.
  Registry* registry = nullptr;
  // Called when what serves a model changes (a new default version, a version reloaded), with
  // the model and one line of what changed ("default version v1 -> v2: graph 3fa2.. -> 9b1c..,
  // parameters 120 k -> 2.1 M"): the live diagnosis' change events. On the caller's thread,
  // after the change; must not block. nullptr for none.
  std::function<void(std::string_view model, std::string_view what)> on_change;
};

// One measured part of a request.
struct TimedStage {
  // "queue", "feature", "infer", "post"; on a profiled pass also "layer_<submodule>" for each
  // submodule ("encoder.0" as "layer_encoder_0": an HTTP token and a label value).
  std::string name;
  Duration duration{};
};

// The answer to one request.
struct InferResult {
  int status = 200;  // 200, or the HTTP status of the error
  std::string body;  // the KServe response, or {"error": {"code", "message"}}
  // Where the time went, in order; what the gateway records (no parsing back). Empty on early
  // errors.
  std::vector<TimedStage> timings;
  // `timings` as a Server-Timing value for the client, in milliseconds:
  // "queue;dur=0.012, feature;dur=1.2, infer;dur=3.4, post;dur=0.05, layer_fc;dur=0.8".
  std::string server_timing;
  int batch_rows = 0;       // rows of the forward pass that answered; 0 when none ran
  int retry_after_s = 0;    // with 503 for a full queue: when to try again
  std::string version;      // the version that answered (or would have); "" when none did
  uint64_t input_size = 0;  // elements over all inputs
};

// What a model version did so far.
struct VersionStatus {
  std::string version;
  std::string path;
  std::string fingerprint;  // TorchModel::fingerprint()
  int64_t parameters = 0;
  bool is_default = false;
  uint64_t requests = 0;  // answered by a forward pass, ok or not
  uint64_t failures = 0;  // of those, rejected by the model
  uint64_t batches = 0;
  uint64_t profiled = 0;  // profiled forward passes
  // Totals over the profiled passes, nanoseconds; sorted by name.
  std::vector<std::pair<std::string, uint64_t>> layer_ns;
  std::vector<std::pair<std::string, uint64_t>> op_ns;
};

struct ModelStatus {
  std::string name;
  std::string default_version;
  size_t queued = 0;  // waiting now
  size_t queue_capacity = 0;
  uint64_t rejected = 0;  // 503s for a full queue
  uint64_t expired = 0;   // 504s: past their deadline before a worker took them
  int max_batch_size = 1;
  std::vector<VersionStatus> versions;  // sorted by version
};

class ModelBackend {
 public:
  using Done = std::function<void(InferResult)>;

  // Loads every version of every model and starts the workers. InvalidArgument naming the model,
  // version and file for a file that does not load, duplicate names, or a feature lookup
  // without a store.
  static absl::StatusOr<std::unique_ptr<ModelBackend>> Create(std::vector<ModelConfig> models,
                                                              BackendOptions options);
  // Stop(), then frees the models.
  ~ModelBackend();
  ModelBackend(const ModelBackend&) = delete;
  ModelBackend& operator=(const ModelBackend&) = delete;

  // Queues a KServe v2 inference request for `model` at `version` ("" for the default version).
  // Never blocks on a worker: a malformed body (400), an unknown model or version (404) or a
  // full queue (503 with retry_after_s) is answered at once on the calling thread; otherwise
  // `done` is called once on a worker thread. A request still queued at `deadline` is answered
  // 504 without running. After Stop(), every request gets 503.
  void Submit(std::string_view model, std::string_view version, std::string_view body,
              MonoTime deadline, Done done);

  // Makes `version` (already loaded) the default of `model`. Requests already queued keep the
  // version they were given; new ones get the new default. No request fails because of it.
  absl::Status SetDefaultVersion(std::string_view model, std::string_view version);
  // Loads another version of `model` from `path` (replacing a loaded one of the same name, whose
  // queued requests still finish on the old module).
  absl::Status LoadVersion(std::string_view model, std::string_view version,
                           const std::string& path);

  // Answers every queued request 503 and joins the workers; a pass in progress finishes first.
  // Idempotent.
  void Stop();

  std::vector<ModelStatus> Status() const;
  bool Serves(std::string_view model) const;

  // The JSON of GET /api/v1/models: [{"name", "default_version", "queued", ..., "versions":
  // [{"version", "fingerprint", ..., "layers": {"name": seconds}, "operators": {...}}]}].
  std::string StatusJson() const;

  struct Impl;

 private:
  explicit ModelBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailguard::model

#endif  // TAILGUARD_MODEL_BACKEND_H_
