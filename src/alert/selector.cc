// Prometheus selector parsing and matching. Regexes run on RE2 (linear time, no backtracking
// and no recursion), as in Prometheus: a selector from an API call or a rule must not be able
// to make a match take exponential time or overflow the stack on a long label value.
#include "alert/selector.h"

#include <re2/re2.h>

#include <algorithm>

#include "common/strings.h"

namespace tailguard {
namespace {

bool IsNameStart(char c, bool metric) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
}
bool IsNameChar(char c, bool metric) { return IsNameStart(c, metric) || (c >= '0' && c <= '9'); }

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<LabelMatcher>> Parse() {
    std::vector<LabelMatcher> out;
    SkipSpace();
    if (pos_ < text_.size() && IsNameStart(text_[pos_], /*metric=*/true)) {
      out.push_back({"__name__", LabelMatcher::Op::kEqual, std::string(Name(true))});
      SkipSpace();
    }
    if (pos_ < text_.size() && text_[pos_] == '{') {
      ++pos_;
      SkipSpace();
      while (pos_ < text_.size() && text_[pos_] != '}') {
        if (pos_ >= text_.size() || !IsNameStart(text_[pos_], false)) {
          return Error("expected a label name");
        }
        LabelMatcher m;
        m.name = std::string(Name(false));
        SkipSpace();
        if (Eat("=~")) {
          m.op = LabelMatcher::Op::kRegex;
        } else if (Eat("!~")) {
          m.op = LabelMatcher::Op::kNotRegex;
        } else if (Eat("!=")) {
          m.op = LabelMatcher::Op::kNotEqual;
        } else if (Eat("=")) {
          m.op = LabelMatcher::Op::kEqual;
        } else {
          return Error("expected one of = != =~ !~");
        }
        SkipSpace();
        absl::StatusOr<std::string> value = Quoted();
        if (!value.ok()) return value.status();
        m.value = *std::move(value);
        out.push_back(std::move(m));
        SkipSpace();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          SkipSpace();
        } else if (pos_ < text_.size() && text_[pos_] != '}') {
          return Error("expected ',' or '}'");
        }
      }
      if (pos_ >= text_.size()) return Error("missing '}'");
      ++pos_;
      SkipSpace();
    }
    if (pos_ != text_.size()) return Error("expected a metric name or '{'");
    return out;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(Cat("selector \"", text_, "\" at offset ", pos_, ": ", what));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  std::string_view Name(bool metric) {
    size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_], metric)) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  absl::StatusOr<std::string> Quoted() {
    if (pos_ >= text_.size() || (text_[pos_] != '"' && text_[pos_] != '\'')) {
      return Error("expected a quoted value");
    }
    const char quote = text_[pos_++];
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\') {
        if (pos_ >= text_.size()) break;
        char e = text_[pos_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case '\\':
          case '"':
          case '\'':
            c = e;
            break;
          default:  // keep other escapes for the regex: "a\.b" matches "a.b" only
            value.push_back('\\');
            c = e;
        }
      }
      value.push_back(c);
    }
    if (pos_ >= text_.size()) return Error("unterminated quoted value");
    ++pos_;
    return value;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<LabelMatcher>> ParseSelector(std::string_view text) {
  return SelectorParser(text).Parse();
}

namespace alert_internal {

absl::StatusOr<SeriesSelector> SeriesSelector::Compile(const std::vector<LabelMatcher>& matchers) {
  SeriesSelector s;
  for (size_t i = 0; i < matchers.size(); ++i) {
    Compiled c{matchers[i], nullptr};
    if (c.matcher.op == LabelMatcher::Op::kRegex || c.matcher.op == LabelMatcher::Op::kNotRegex) {
      if (c.matcher.value.size() > kMaxMatcherRegexBytes) {
        return absl::InvalidArgumentError(
            Cat("matcher ", i, " (", c.matcher.name, "): the regex is ", c.matcher.value.size(),
                " bytes, over the limit of ", kMaxMatcherRegexBytes,
                "; match a shorter pattern (several matchers, or a common prefix)"));
      }
      RE2::Options options;
      options.set_log_errors(false);
      // Program memory: far more than any selector needs, and a bound on what one API call
      // can make the control thread build (RE2's default is 8 MiB).
      options.set_max_mem(int64_t{1} << 20);
      // Whole-value match, as Prometheus anchors its regexes.
      auto re = std::make_shared<const RE2>(Cat("^(?:", c.matcher.value, ")$"), options);
      if (!re->ok()) {
        return absl::InvalidArgumentError(Cat("matcher ", i, " (", c.matcher.name, "): regex \"",
                                              c.matcher.value, "\" does not compile: ", re->error(),
                                              " (RE2 syntax, as Prometheus)"));
      }
      c.regex = std::move(re);
    }
    s.matchers_.push_back(std::move(c));
  }
  return s;
}

bool SeriesSelector::Matches(std::string_view metric, LabelSpan labels) const {
  for (const Compiled& c : matchers_) {
    std::string_view value =
        c.matcher.name == "__name__" ? metric : LabelValue(labels, c.matcher.name);
    bool ok = false;
    switch (c.matcher.op) {
      case LabelMatcher::Op::kEqual:
        ok = value == c.matcher.value;
        break;
      case LabelMatcher::Op::kNotEqual:
        ok = value != c.matcher.value;
        break;
      case LabelMatcher::Op::kRegex:
        ok = RE2::FullMatch(re2::StringPiece(value.data(), value.size()), *c.regex);
        break;
      case LabelMatcher::Op::kNotRegex:
        ok = !RE2::FullMatch(re2::StringPiece(value.data(), value.size()), *c.regex);
        break;
    }
    if (!ok) return false;
  }
  return true;
}

std::string_view LabelValue(LabelSpan labels, std::string_view name) {
  for (const auto& [n, v] : labels) {
    if (n == name) return v;
  }
  return {};
}

}  // namespace alert_internal
}  // namespace tailguard
