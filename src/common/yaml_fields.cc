// YAML field walking for the configuration parsers: see yaml_fields.h.
#include "common/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "common/duration.h"
#include "common/strings.h"

namespace tailguard {
namespace {

std::string JoinNames(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Edit distance with adjacent transpositions (optimal string alignment), ignoring case.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string YamlErrorText(std::string_view file_name, const YamlFailure& f) {
  const int line = f.mark.is_null() || f.mark.line < 0 ? 1 : f.mark.line + 1;
  return f.path.empty() ? Cat(file_name, ':', line, ": ", f.message)
                        : Cat(file_name, ':', line, ": ", f.path, ": ", f.message);
}

absl::Status YamlErrorStatus(std::string_view file_name, const YamlFailure& failure) {
  return absl::InvalidArgumentError(YamlErrorText(file_name, failure));
}

const YamlItem* YamlMap::Get(std::string_view key) const {
  for (const YamlItem& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::string YamlMap::PathOf(std::string_view key) const {
  return path.empty() ? std::string(key) : Cat(path, '.', key);
}

std::string_view ClosestName(std::string_view name, std::initializer_list<std::string_view> known) {
  // Long keys are no typo of ours, and the distance is quadratic in the length.
  if (name.size() > 64) return {};
  std::string_view best;
  size_t best_distance = name.size() <= 4 ? 1 : 2;
  for (std::string_view k : known) {
    const size_t d = EditDistance(name, k);
    if (d <= best_distance && (best.empty() || d < best_distance)) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

void YamlWalker::Fail(const YamlItem& at, std::string message) {
  throw YamlFailure{at.mark, at.path, std::move(message)};
}

void YamlWalker::Fail(const YAML::Mark& mark, std::string path, std::string message) {
  throw YamlFailure{mark, std::move(path), std::move(message)};
}

YAML::Mark YamlWalker::MarkOr(const YAML::Node& node, const YAML::Mark& fallback) {
  const YAML::Mark m = node.Mark();
  return m.is_null() || m.line < 0 ? fallback : m;
}

YamlMap YamlWalker::Map(const YamlItem& at, std::initializer_list<std::string_view> known) {
  YamlMap m{at.path, at.mark, {}};
  if (at.node.IsNull()) return m;
  if (!at.node.IsMap()) Fail(at, Cat("expected a map with fields ", JoinNames(known)));
  for (const auto& kv : at.node) {
    const YAML::Node& k = kv.first;
    const YAML::Mark km = MarkOr(k, at.mark);
    if (!k.IsScalar()) Fail(km, at.path, "field names must be strings");
    YamlItem f{m.PathOf(k.Scalar()), km, kv.second, k.Scalar()};
    if (std::find(known.begin(), known.end(), f.key) == known.end()) {
      const std::string_view guess = suggest_names_ ? ClosestName(f.key, known) : "";
      Fail(f, guess.empty() ? Cat("unknown field (expected one of: ", JoinNames(known), ")")
                            : Cat("unknown field; did you mean \"", guess,
                                  "\"? (expected one of: ", JoinNames(known), ")"));
    }
    if (m.Get(f.key) != nullptr) Fail(f, "appears twice");
    Note(f.path, f.mark);
    m.fields.push_back(std::move(f));
  }
  return m;
}

std::vector<YamlItem> YamlWalker::List(const YamlItem& at, size_t max_size) {
  std::vector<YamlItem> out;
  if (at.node.IsNull()) return out;
  if (!at.node.IsSequence()) Fail(at, "expected a list");
  if (at.node.size() > max_size) {
    Fail(at, Cat("has ", at.node.size(), " entries; at most ", max_size, " are allowed"));
  }
  size_t i = 0;
  for (const YAML::Node& node : at.node) {
    YamlItem e{Cat(at.path, '[', i++, ']'), MarkOr(node, at.mark), node, ""};
    Note(e.path, e.mark);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> YamlWalker::StringMap(const YamlItem& at,
                                                                       size_t max_size) {
  std::vector<std::pair<std::string, std::string>> out;
  if (at.node.IsNull()) return out;
  if (!at.node.IsMap()) Fail(at, "expected a map of strings");
  if (at.node.size() > max_size) {
    Fail(at, Cat("has ", at.node.size(), " entries; at most ", max_size, " are allowed"));
  }
  for (const auto& kv : at.node) {
    const YAML::Mark km = MarkOr(kv.first, at.mark);
    if (!kv.first.IsScalar()) Fail(km, at.path, "field names must be strings");
    YamlItem f{Cat(at.path, '.', kv.first.Scalar()), km, kv.second, kv.first.Scalar()};
    Note(f.path, f.mark);
    for (const auto& [name, value] : out) {
      if (name == f.key) Fail(f, "appears twice");
    }
    out.emplace_back(f.key, Str(f));
  }
  return out;
}

std::vector<std::string> YamlWalker::Names(const YamlItem& at) {
  if (at.node.IsScalar()) return {Name(at)};
  std::vector<std::string> out;
  for (const YamlItem& e : List(at)) out.push_back(Name(e));
  return out;
}

std::string YamlWalker::Str(const YamlItem& at) {
  if (!at.node.IsScalar()) Fail(at, "expected a string");
  return at.node.Scalar();
}

std::string YamlWalker::Name(const YamlItem& at) {
  std::string s = Str(at);
  if (s.empty()) Fail(at, "must not be empty");
  return s;
}

int YamlWalker::Int(const YamlItem& at, int min, int max) {
  const std::string s = Str(at);
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    Fail(at, Cat("expected a whole number, got \"", s, "\""));
  }
  if (v < min) Fail(at, Cat("must be at least ", min));
  if (v > max) Fail(at, Cat("must be at most ", max));
  return v;
}

std::string Quoted(std::string_view s) {
  return s.size() > 80 ? Cat('"', s.substr(0, 77), "...\"") : Cat('"', s, '"');
}

Duration YamlWalker::PositiveDur(const YamlItem& at, std::string_view example) {
  const std::string s = Str(at);
  const Duration d = s.starts_with('-') ? Duration::zero() : Dur(at);
  if (d <= Duration::zero()) {
    Fail(at, Cat("must be positive, like \"", example, "\", got ", Quoted(s)));
  }
  return d;
}

bool YamlWalker::Bool(const YamlItem& at) {
  const std::string s = Str(at);
  if (s == "true") return true;
  if (s == "false") return false;
  Fail(at, Cat("expected true or false, got \"", s, "\""));
}

Duration YamlWalker::Dur(const YamlItem& at) {
  const std::string s = Str(at);
  std::optional<Duration> d = ParseDurationText(s);
  if (!d) Fail(at, Cat("expected a duration like \"30s\", \"5m\" or \"1h30m\", got \"", s, "\""));
  return *d;
}

YAML::Mark YamlWalker::MarkOf(std::string_view path) const {
  for (std::string_view prefix = path;;) {
    auto it = marks_.find(prefix);
    if (it != marks_.end()) return it->second;
    const size_t cut = prefix.find_last_of(".[");
    if (cut == std::string_view::npos || cut == 0) break;
    prefix = prefix.substr(0, cut);
  }
  return YAML::Mark();
}

}  // namespace tailguard
