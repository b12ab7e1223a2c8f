// Scenario files for the load generator: YAML, a list of phases, each with a duration, a rate
// pattern and optional request overrides. Every error reads "file:line: field.path: problem".
// The format is documented in docs/loadgen.md.
#ifndef TAILGUARD_LOADGEN_SCENARIO_H_
#define TAILGUARD_LOADGEN_SCENARIO_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/schedule.h"

namespace tailguard::loadgen {

// Limits on what a scenario may ask for.
inline constexpr size_t kMaxPhases = 1000;
inline constexpr size_t kMaxSegments = 1000000;  // over all phases (steps, bursts)
inline constexpr double kMaxRate = 10'000'000;   // requests per second
inline constexpr size_t kMaxBodyBytes = 64 << 20;
inline constexpr size_t kMaxScenarioBytes = 16 << 20;

// A parsed scenario. Each phase's request overrides already include the file's top-level
// `request:` (the phase's own fields win).
struct Scenario {
  std::vector<Phase> phases;
};

// How ParseScenario() treats `body_file:` fields.
struct ScenarioOptions {
  // Directory that relative body_file paths are relative to (the scenario file's own).
  std::string base_dir = ".";
  // Read the body files into the overrides. When false (the fuzz target), body_file is
  // checked only for being a non-empty string and the body is left unset.
  bool load_body_files = true;
};

// Parses a scenario from `yaml`; `file_name` prefixes every error. InvalidArgument naming file,
// line, field and problem for anything malformed, unknown or out of range; NotFound (same form)
// for a body file that cannot be read.
absl::StatusOr<Scenario> ParseScenario(std::string_view yaml, std::string_view file_name,
                                       const ScenarioOptions& options = {});

// Reads and parses the scenario file at `path`; body files are relative to its directory.
// NotFound when the file cannot be read.
absl::StatusOr<Scenario> LoadScenario(const std::string& path);

// Checks shared with the command line; each returns what is wrong, or nullopt when fine.
// An HTTP method: an upper-case token such as GET or POST.
std::optional<std::string> MethodProblem(std::string_view method);
// A request path: starts with '/', no spaces or control characters.
std::optional<std::string> PathProblem(std::string_view path);
// A header: a token name, a value without CR, LF or NUL.
std::optional<std::string> HeaderProblem(std::string_view name, std::string_view value);

// Adds `add` to `base`, replacing headers of the same name (compared case-insensitively).
void MergeHeaders(std::vector<Header>& base, const std::vector<Header>& add);

// Reads the whole file at `path`, at most `max_bytes`: NotFound (with the reason) when it cannot
// be read, InvalidArgument when it is larger.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, size_t max_bytes);

}  // namespace tailguard::loadgen

#endif  // TAILGUARD_LOADGEN_SCENARIO_H_
