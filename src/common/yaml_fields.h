// Walking a YAML configuration with field paths and line numbers: strict field names, typed
// scalars, and errors as "file:line: field.path: problem". Shared by the alert rule parser and
// the gateway configuration parser.
#ifndef TAILGUARD_COMMON_YAML_FIELDS_H_
#define TAILGUARD_COMMON_YAML_FIELDS_H_

#include <yaml-cpp/yaml.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tailguard/clock.h"

namespace tailguard {

// A configuration error at a place in the file. YamlWalker throws it; the parser's entry point
// catches it and returns YamlErrorStatus(). It never leaves a parser.
// A value from a file inside a message: in double quotes, cut short when long.
std::string Quoted(std::string_view s);

struct YamlFailure {
  YAML::Mark mark;   // line 1 when the place is unknown
  std::string path;  // "rules[2].tiers[0].above"; empty for the document itself
  std::string message;
};

// "file:line: path: message", or "file:line: message" when the path is empty.
std::string YamlErrorText(std::string_view file_name, const YamlFailure& failure);

// InvalidArgument with YamlErrorText().
absl::Status YamlErrorStatus(std::string_view file_name, const YamlFailure& failure);

// A node with where it is: its field path and the line of its key (or of itself in a list).
struct YamlItem {
  std::string path;
  YAML::Mark mark;
  YAML::Node node;
  std::string key;  // for map fields
};

// The fields of one map, checked against the known names.
struct YamlMap {
  std::string path;
  YAML::Mark mark;
  std::vector<YamlItem> fields;

  // The field named `key`; nullptr when absent.
  const YamlItem* Get(std::string_view key) const;
  // The path of field `key` of this map: "routes[0].prefix".
  std::string PathOf(std::string_view key) const;
};

// The known name that `name` most likely misspells ("prefx" -> "prefix"); empty when none is
// close enough to be a typo.
std::string_view ClosestName(std::string_view name, std::initializer_list<std::string_view> known);

// Typed access to the nodes of one document. Every method either returns the value or throws
// YamlFailure naming the field; the caller catches it at its entry point. Remembers the line of
// every field it has seen, so a later check (a validator that knows only paths) can be located.
// Not thread-safe; one walker per parse.
class YamlWalker {
 public:
  // With `suggest_names`, an unknown field close to a known one adds `did you mean "x"?`.
  explicit YamlWalker(bool suggest_names = false) : suggest_names_(suggest_names) {}

  // The document itself: empty path, line 1.
  static YamlItem Root(const YAML::Node& root) { return {"", YAML::Mark(), root, ""}; }

  [[noreturn]] static void Fail(const YamlItem& at, std::string message);
  [[noreturn]] static void Fail(const YAML::Mark& mark, std::string path, std::string message);

  // The node's own mark, or `fallback` when the node has none.
  static YAML::Mark MarkOr(const YAML::Node& node, const YAML::Mark& fallback);

  // The fields of a map (a null node is an empty map). Fails on a field not in `known`, on a
  // field given twice and on anything but a map.
  YamlMap Map(const YamlItem& at, std::initializer_list<std::string_view> known);

  // The elements of a list (a null node is an empty list), at most `max_size` of them.
  std::vector<YamlItem> List(const YamlItem& at, size_t max_size = SIZE_MAX);

  // A map of strings to strings, in file order, at most `max_size` entries; names are unique.
  std::vector<std::pair<std::string, std::string>> StringMap(const YamlItem& at,
                                                             size_t max_size = SIZE_MAX);

  // A string, or a list of them; each non-empty.
  std::vector<std::string> Names(const YamlItem& at);

  // A scalar as written.
  static std::string Str(const YamlItem& at);
  // A non-empty scalar.
  static std::string Name(const YamlItem& at);
  // A whole number in [min, max].
  static int Int(const YamlItem& at, int min, int max = INT_MAX);
  // true or false.
  static bool Bool(const YamlItem& at);
  // A duration as ParseDurationText() reads it ("300ms", "1h30m").
  static Duration Dur(const YamlItem& at);
  // A duration above zero; `example` is shown in the error ("must be positive, like \"1s\"").
  // "-5s" says what is wanted rather than what a duration looks like.
  static Duration PositiveDur(const YamlItem& at, std::string_view example = "1s");

  // Records where `path` is.
  void Note(const std::string& path, const YAML::Mark& mark) { marks_[path] = mark; }
  // Where `path` is, or the nearest enclosing field the walker has seen ("a.b[2].c" falls back
  // to "a.b[2]", then "a.b", then "a"); a default mark (line 1) when none.
  YAML::Mark MarkOf(std::string_view path) const;

 private:
  bool suggest_names_;
  std::map<std::string, YAML::Mark, std::less<>> marks_;
};

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_YAML_FIELDS_H_
