// Series selectors: parsing, whole-value regex matching, and the hostile patterns and values that
// std::regex could not survive (issue 15: a crash on a long value, a hang on (a|a)*b).
#include "alert/selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tailguard::alert_internal {
namespace {

using ::testing::HasSubstr;

SeriesSelector Compile(std::string_view text) {
  absl::StatusOr<std::vector<LabelMatcher>> m = ParseSelector(text);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<SeriesSelector> s = SeriesSelector::Compile(*m);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

bool Matches(const SeriesSelector& s, std::string_view model) {
  const std::vector<std::pair<std::string, std::string>> labels = {{"model", std::string(model)}};
  return s.Matches("tailguard_request_duration_seconds", labels);
}

TEST(SeriesSelectorTest, RegexesMatchTheWholeValue) {
  const SeriesSelector s = Compile(R"({model=~"risk-.*|rec"})");
  EXPECT_TRUE(Matches(s, "risk-a"));
  EXPECT_TRUE(Matches(s, "rec"));
  EXPECT_FALSE(Matches(s, "recx"));
  EXPECT_FALSE(Matches(s, "xrisk-a"));
  const SeriesSelector n = Compile(R"({model!~"a|b"})");
  EXPECT_FALSE(Matches(n, "a"));
  EXPECT_TRUE(Matches(n, "ab"));
  // An absent label matches as "".
  EXPECT_TRUE(Compile(R"({stage=~"|total"})").Matches("m", {}));
}

TEST(SeriesSelectorTest, AnAlternationInsideTheRegexIsNotUnanchored) {
  // "^a|b$" would match "ax" if the anchors were put around the text without a group.
  const SeriesSelector s = Compile(R"({model=~"a|b"})");
  EXPECT_FALSE(Matches(s, "ax"));
  EXPECT_FALSE(Matches(s, "xb"));
}

TEST(SeriesSelectorTest, LongValuesAndBacktrackingPatternsMatchInLinearTime) {
  // std::regex recursed once per character here (SIGSEGV at about 1 MB) and took exponential
  // time on (a|a)*b: either would crash this test or hang it past its timeout.
  const std::string long_value = "risk-" + std::string(1 << 20, 'a');
  EXPECT_TRUE(Matches(Compile(R"({model=~"risk-.*"})"), long_value));
  EXPECT_TRUE(Matches(Compile(R"({model=~".*"})"), long_value));
  EXPECT_FALSE(Matches(Compile(R"({model=~"((a)|b)*"})"), long_value));
  EXPECT_FALSE(Matches(Compile(R"({model=~"(a|a)*b"})"), std::string(5000, 'a')));
  EXPECT_TRUE(Matches(Compile(R"({model=~"(a|a)*b"})"), std::string(5000, 'a') + "b"));
}

TEST(SeriesSelectorTest, RefusesPatternsOverTheLimitOrThatDoNotCompile) {
  std::vector<LabelMatcher> m = {
      {"model", LabelMatcher::Op::kRegex, std::string(kMaxMatcherRegexBytes + 1, 'a')}};
  absl::StatusOr<SeriesSelector> s = SeriesSelector::Compile(m);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("over the limit of 4096"));

  m[0].value = std::string(kMaxMatcherRegexBytes, 'a');  // at the limit: fine
  EXPECT_TRUE(SeriesSelector::Compile(m).ok());

  // A pattern whose compiled program would be huge is refused, not built.
  m[0].value = "((((a{100}){100}){100}){100})";
  s = SeriesSelector::Compile(m);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("does not compile"));

  // Backreferences and lookahead are not RE2 (nor Prometheus).
  m[0].value = "(a)\\1";
  EXPECT_THAT(SeriesSelector::Compile(m).status().message(), HasSubstr("RE2 syntax"));
  m[0].value = "a(?=b)";
  EXPECT_FALSE(SeriesSelector::Compile(m).ok());
}

}  // namespace
}  // namespace tailguard::alert_internal
