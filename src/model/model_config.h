// What the gateway's `models:` block configures: the TorchScript models the built-in backend
// serves, their versions, queueing, batching, workers, profiling and feature lookup.
// docs/model-backend.md is the reference. No LibTorch here.
#ifndef TAILGUARD_MODEL_MODEL_CONFIG_H_
#define TAILGUARD_MODEL_MODEL_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "tailguard/clock.h"

namespace tailguard::model {

struct ModelVersionConfig {
  std::string version;  // the `version` label and the /versions/{v}/ path segment
  std::string path;     // the TorchScript file; relative paths resolve against the config file
};

// Replaces a BYTES input of feature-store keys by the vectors stored under them, before the
// model runs: the request sends `user_id: ["42", "7"]` and the model receives a FP32 tensor
// [2, dim] in the same position.
struct FeatureLookup {
  std::string input;   // the BYTES input holding the keys; "" (the default) for no lookup
  std::string prefix;  // prepended to each key; default ""
};

struct ModelConfig {
  // The model's name in /v2/models/{name}/infer and the `model` label. Required, unique.
  std::string name;
  // At least one; versions unique within the model.
  std::vector<ModelVersionConfig> versions;
  // The version /v2/models/{name}/infer (without /versions/) uses. Default: the first.
  std::string default_version;
  // Requests (rows along dimension 0) run together in one forward pass; 1 (the default) turns
  // batching off. 1 to 1024.
  int max_batch_size = 1;
  // How long the first request of a batch waits for more. Default 0: a batch takes what is
  // queued when a worker is free. At most 1 s.
  Duration max_queue_delay{0};
  // Requests waiting for a worker; when full, new requests get 503 with Retry-After.
  // Default 256; 1 to 1048576.
  size_t queue_capacity = 256;
  // Threads running forward passes for this model. Default 1; 1 to 64.
  int workers = 1;
  // Fraction of forward passes timed per operator and per submodule (0 to 1; default 0.01).
  double profile_sample_rate = 0.01;
  // Submodule levels the profile names ("encoder" is 1, "encoder.0" 2). Default 2; 1 to 8.
  int profile_depth = 2;
  FeatureLookup features;
};

}  // namespace tailguard::model

#endif  // TAILGUARD_MODEL_MODEL_CONFIG_H_
