// The rule file's delivery parts: receiver targets (with ${ENV} secrets), the route tree,
// inhibition and maintenance; their error messages name the file, the line and the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "alert_test_util.h"
#include "common/strings.h"

namespace tailguard {
namespace {

using alert_test::minutes;
using alert_test::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Kind = ReceiverTarget::Kind;

std::string ErrorOf(std::string_view yaml) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(yaml, "rules.yaml");
  if (c.ok()) return "OK";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

class RouteConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TG_TEST_WECOM_KEY", "k-123", 1);
    setenv("TG_TEST_TOKEN", "s3cret-token", 1);
    setenv("TG_TEST_BAD_URL", "ftp://s3cret@host/", 1);
    unsetenv("TG_TEST_UNSET");
  }
};

TEST_F(RouteConfigTest, ParsesEveryReceiverTarget) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
route: {group_wait: 20s}
receivers:
  - name: wecom
    wecom: {url: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=${TG_TEST_WECOM_KEY}", mentioned_mobile_list: ["13800000000"]}
    rate_limit: 20/min
    send_resolved: true
    timeout: 10s
    group_wait: 10s
  - name: hook
    webhook: {url: "http://127.0.0.1:8080/hook", headers: {Authorization: "Bearer ${TG_TEST_TOKEN}"}}
    rate_limit: 2/s
    send_resolved: false
  - name: sms
    template: {url: "http://sms.example/send", method: post, content_type: application/json, headers: {}, body: '{"to":"138","text":"{{summary}}"}'}
    rate_limit: 30/h
    timeout: 3s
  - name: am
    alertmanager: {url: "http://127.0.0.1:9093"}
  - name: plain
)");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->receivers.size(), 5u);
  const ReceiverOptions& wecom = c->receivers[0];
  EXPECT_EQ(wecom.target.kind, Kind::kWeCom);
  EXPECT_EQ(wecom.target.url, "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k-123");
  EXPECT_THAT(wecom.target.mentioned_mobile_list, ElementsAre("13800000000"));
  EXPECT_EQ(wecom.target.rate_per_minute, 20);
  EXPECT_TRUE(wecom.target.send_resolved);
  EXPECT_EQ(wecom.target.timeout, seconds(10));
  EXPECT_EQ(wecom.route.group_wait, seconds(10));  // route fields still work
  const ReceiverTarget& hook = c->receivers[1].target;
  EXPECT_EQ(hook.kind, Kind::kWebhook);
  EXPECT_EQ(hook.url, "http://127.0.0.1:8080/hook");
  EXPECT_THAT(hook.headers, ElementsAre(std::pair<std::string, std::string>(
                                "Authorization", "Bearer s3cret-token")));
  EXPECT_EQ(hook.rate_per_minute, 120);
  EXPECT_FALSE(hook.send_resolved);
  EXPECT_EQ(c->receivers[1].route.group_wait, seconds(20));  // from route
  const ReceiverTarget& sms = c->receivers[2].target;
  EXPECT_EQ(sms.kind, Kind::kTemplate);
  EXPECT_EQ(sms.method, "POST");
  EXPECT_EQ(sms.content_type, "application/json");
  EXPECT_TRUE(sms.headers.empty());
  EXPECT_EQ(sms.body_template, R"({"to":"138","text":"{{summary}}"})");
  EXPECT_DOUBLE_EQ(sms.rate_per_minute, 0.5);
  EXPECT_EQ(sms.timeout, seconds(3));
  EXPECT_EQ(c->receivers[3].target.kind, Kind::kAlertmanager);
  EXPECT_EQ(c->receivers[3].target.url, "http://127.0.0.1:9093");
  const ReceiverTarget& plain = c->receivers[4].target;
  EXPECT_EQ(plain.kind, Kind::kNone);
  EXPECT_TRUE(plain.send_resolved);
  EXPECT_EQ(plain.timeout, seconds(10));
  EXPECT_EQ(plain.rate_per_minute, 0);
}

TEST_F(RouteConfigTest, ParsesTheRouteTreeInhibitionAndMaintenance) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
schedules:
  - {name: night, hours: "00:00-06:00"}
  - {name: upgrade, from: "2025-11-11", to: "2025-11-12"}
maintenance: [upgrade]
route:
  receiver: wecom
  routes:
    - matchers: ['severity="emergency"', 'model=~"rank.*"']
      receiver: lead
      continue: true
      repeat_interval: 30m
      routes:
        - matchers: ['team="search"']
          mute_during: [night]
          routes: []
    - matchers: ['model="batch"']
      group_by: [alertname]
      group_wait: 1m
      group_interval: 10m
      mute_during: []
inhibit_rules:
  - source_matchers: ['alertname="down"']
    target_matchers: ['alertname=~"slow|errors"']
    equal: [model, __series__]
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->maintenance, ElementsAre("upgrade"));
  ASSERT_EQ(c->routes.size(), 2u);
  const RouteNode& lead = c->routes[0];
  ASSERT_EQ(lead.matchers.size(), 2u);
  EXPECT_EQ(lead.matchers[0].name, "severity");
  EXPECT_EQ(lead.matchers[0].value, "emergency");
  EXPECT_EQ(lead.matchers[1].op, LabelMatcher::Op::kRegex);
  EXPECT_EQ(lead.matchers[1].value, "rank.*");
  EXPECT_EQ(lead.receiver, "lead");
  EXPECT_TRUE(lead.continue_matching);
  EXPECT_EQ(lead.repeat_interval, minutes(30));
  EXPECT_FALSE(lead.group_by.has_value());  // inherited
  EXPECT_FALSE(lead.mute_during.has_value());
  ASSERT_EQ(lead.routes.size(), 1u);
  EXPECT_EQ(lead.routes[0].receiver, "");  // inherits "lead"
  EXPECT_THAT(*lead.routes[0].mute_during, ElementsAre("night"));
  const RouteNode& batch = c->routes[1];
  EXPECT_FALSE(batch.continue_matching);
  EXPECT_THAT(*batch.group_by, ElementsAre("alertname"));
  EXPECT_EQ(batch.group_wait, minutes(1));
  EXPECT_EQ(batch.group_interval, minutes(10));
  ASSERT_TRUE(batch.mute_during.has_value());
  EXPECT_TRUE(batch.mute_during->empty());
  ASSERT_EQ(c->inhibit_rules.size(), 1u);
  EXPECT_EQ(c->inhibit_rules[0].source_matchers[0].value, "down");
  EXPECT_EQ(c->inhibit_rules[0].target_matchers[0].op, LabelMatcher::Op::kRegex);
  EXPECT_THAT(c->inhibit_rules[0].equal, ElementsAre("model", "__series__"));
}

TEST_F(RouteConfigTest, InhibitionDefaultsToEmergencyOverWarning) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig("rules: []\n");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->inhibit_rules.size(), 1u);
  const InhibitRule& r = c->inhibit_rules[0];
  ASSERT_EQ(r.source_matchers.size(), 1u);
  EXPECT_EQ(r.source_matchers[0].name, "severity");
  EXPECT_EQ(r.source_matchers[0].value, "emergency");
  EXPECT_EQ(r.target_matchers[0].value, "warning");
  EXPECT_THAT(r.equal, ElementsAre("__series__"));
  EXPECT_EQ(AlertConfig().inhibit_rules.size(), 1u);  // in code too

  c = ParseAlertConfig("inhibit_rules: []\n");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->inhibit_rules.empty());
}

TEST_F(RouteConfigTest, RateLimitForms) {
  const auto rate = [](std::string_view text) {
    absl::StatusOr<AlertConfig> c =
        ParseAlertConfig(Cat("receivers:\n  - name: r\n    rate_limit: ", text, "\n"));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->receivers[0].target.rate_per_minute : -1;
  };
  EXPECT_EQ(rate("20/min"), 20);
  EXPECT_EQ(rate("1/s"), 60);
  EXPECT_EQ(rate("0.5/s"), 30);
  EXPECT_EQ(rate("120/h"), 2);
  EXPECT_EQ(rate("0/min"), 0);
}

TEST_F(RouteConfigTest, SecretsComeFromTheEnvironmentAndStayOutOfMessages) {
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: wecom
    wecom:
      url: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=${TG_TEST_UNSET}"
)"),
            "rules.yaml:4: receivers[0].wecom.url: environment variable TG_TEST_UNSET is not set");
  const std::string bad_url =
      ErrorOf("receivers:\n  - name: hook\n    webhook: {url: \"${TG_TEST_BAD_URL}\"}\n");
  EXPECT_EQ(bad_url, "rules.yaml:3: receivers[0].webhook.url: must start with http:// or https://");
  EXPECT_THAT(bad_url, Not(HasSubstr("s3cret")));
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: hook
    webhook:
      url: "http://127.0.0.1/hook"
      headers:
        Authorization: "Bearer ${TG_TEST_UNSET}"
)"),
            "rules.yaml:6: receivers[0].webhook.headers.Authorization: environment variable "
            "TG_TEST_UNSET is not set");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: h\n    webhook: {url: \"http://x/${TG_TEST_TOKEN\"}\n"),
            "rules.yaml:3: receivers[0].webhook.url: unterminated \"${\" (write ${NAME} for the "
            "environment variable NAME)");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: h\n    webhook: {url: \"http://x/${1-x}\"}\n"),
            "rules.yaml:3: receivers[0].webhook.url: \"${1-x}\" is not an environment variable "
            "name");
  // A header value with a line break (from the environment or not) is refused, unquoted.
  setenv("TG_TEST_NEWLINE", "a\r\nInjected: s3cret", 1);
  const std::string header = ErrorOf(R"(receivers:
  - name: hook
    webhook:
      url: "http://127.0.0.1/hook"
      headers: {X-Token: "${TG_TEST_NEWLINE}"}
)");
  EXPECT_EQ(header,
            "rules.yaml:5: receivers[0].webhook.headers.X-Token: must not contain a line "
            "break");
  EXPECT_THAT(header, Not(HasSubstr("s3cret")));
}

TEST_F(RouteConfigTest, ReceiverErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: both
    wecom: {url: "https://a"}
    webhook: {url: "https://b"}
)"),
            "rules.yaml:4: receivers[0].webhook: cannot be combined with wecom (a receiver has "
            "one target)");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n  - name: b\n    alertmanager: {}\n"),
            "rules.yaml:4: receivers[1].alertmanager.url: required");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    wecom: {url: \"https://a\", headers: {}}\n"),
            "rules.yaml:3: receivers[0].wecom.headers: unknown field (expected one of: url, "
            "mentioned_mobile_list)");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    webhook: {url: \"https://a\", body: x}\n"),
            "rules.yaml:3: receivers[0].webhook.body: unknown field (expected one of: url, "
            "headers)");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    webhook: http://a\n"),
            "rules.yaml:3: receivers[0].webhook: expected a map with fields url, headers");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    rate_limit: fast\n"),
            "rules.yaml:3: receivers[0].rate_limit: expected a rate like \"20/min\", \"1/s\" or "
            "\"100/h\", got \"fast\"");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    rate_limit: 10/day\n"),
            "rules.yaml:3: receivers[0].rate_limit: expected a rate like \"20/min\", \"1/s\" or "
            "\"100/h\", got \"10/day\"");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    send_resolved: yes\n"),
            "rules.yaml:3: receivers[0].send_resolved: expected true or false, got \"yes\"");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    timeout: 0s\n"),
            "rules.yaml:3: receivers[0].timeout: must be positive");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    webhook: {url: \"127.0.0.1:80/x\"}\n"),
            "rules.yaml:3: receivers[0].webhook.url: must start with http:// or https://");
  EXPECT_EQ(ErrorOf("receivers:\n  - name: a\n    alertmanager: {url: \"http://\"}\n"),
            "rules.yaml:3: receivers[0].alertmanager.url: has no host");
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: sms
    template:
      url: "http://sms/send"
      method: PATCH
)"),
            "rules.yaml:5: receivers[0].template.method: expected POST, PUT or GET, got "
            "\"PATCH\"");
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: hook
    webhook:
      url: "http://h"
      headers: {"Bad Name": x}
)"),
            "rules.yaml:5: receivers[0].webhook.headers.Bad Name: is not a header name");
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: w
    wecom:
      url: "http://h"
      mentioned_mobile_list: ["138", ""]
)"),
            "rules.yaml:5: receivers[0].wecom.mentioned_mobile_list[1]: must not be empty");
}

TEST_F(RouteConfigTest, RouteErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf("route:\n  routes:\n    - matchers: [severity]\n"),
            "rules.yaml:3: route.routes[0].matchers[0]: expected a label matcher like "
            "severity=\"critical\" or model=~\"rank.*\", got \"severity\"");
  EXPECT_EQ(ErrorOf("route:\n  routes:\n    - matchers: ['severity=critical']\n"),
            "rules.yaml:3: route.routes[0].matchers[0]: expected a label matcher like "
            "severity=\"critical\" or model=~\"rank.*\", got \"severity=critical\"");
  EXPECT_THAT(ErrorOf("route:\n  routes:\n    - matchers:\n        - 'model=~\"((\"'\n"),
              StartsWith("rules.yaml:4: route.routes[0].matchers[0]: matcher 0 (model): regex "
                         "\"((\" does not compile"));
  EXPECT_EQ(ErrorOf("route:\n  routes:\n    - {receiver: x, continue: maybe}\n"),
            "rules.yaml:3: route.routes[0].continue: expected true or false, got \"maybe\"");
  EXPECT_EQ(ErrorOf("route:\n  routes:\n    - {receivr: x}\n"),
            "rules.yaml:3: route.routes[0].receivr: unknown field (expected one of: matchers, "
            "receiver, group_by, group_wait, group_interval, repeat_interval, continue, "
            "mute_during, routes)");
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: wecom
route:
  routes:
    - matchers: ['team="a"']
      routes:
        - matchers: ['severity="critical"']
          receiver: pager
)"),
            "rules.yaml:8: route.routes[0].routes[0].receiver: receiver \"pager\" is not declared "
            "under receivers");
  EXPECT_EQ(ErrorOf(R"(schedules:
  - {name: nights, hours: "00:00-06:00"}
route:
  routes:
    - matchers: ['team="a"']
      mute_during: [nights, night]
)"),
            "rules.yaml:6: route.routes[0].mute_during[1]: unknown schedule \"night\"");
  // An inherited group_interval makes a child's own repeat_interval too short.
  EXPECT_EQ(ErrorOf(R"(route:
  group_interval: 10m
  routes:
    - matchers: ['team="a"']
      receiver: x
      repeat_interval: 5m
)"),
            "rules.yaml:6: route.routes[0].repeat_interval: must be at least group_interval");
  std::string deep = "route:\n";
  std::string indent = "  ";
  for (int d = 0; d <= kMaxRouteDepth; ++d) {
    deep += indent + "routes:\n" + indent + "  - matchers: ['a=\"b\"']\n";
    indent += "    ";
  }
  std::string path = "route";
  for (int d = 0; d < kMaxRouteDepth; ++d) path += ".routes[0]";
  EXPECT_EQ(ErrorOf(deep),
            Cat("rules.yaml:34: ", path, ".routes: routes nest deeper than 16 levels"));
}

TEST_F(RouteConfigTest, InhibitionAndMaintenanceErrorsNameFileLineAndField) {
  EXPECT_EQ(ErrorOf("schedules:\n  - {name: w, days: weekend}\nmaintenance: [w, upgrade]\n"),
            "rules.yaml:3: maintenance[1]: unknown schedule \"upgrade\"");
  EXPECT_EQ(ErrorOf("inhibit_rules:\n  - target_matchers: ['severity=\"warning\"']\n"),
            "rules.yaml:2: inhibit_rules[0].source_matchers: required");
  EXPECT_EQ(ErrorOf(R"(inhibit_rules:
  - source_matchers: ['severity="critical"']
    target_matchers: []
)"),
            "rules.yaml:3: inhibit_rules[0].target_matchers: must not be empty");
  EXPECT_EQ(ErrorOf(R"(inhibit_rules:
  - source_matchers: ['severity="critical"']
    target_matchers: ['severity="warning"']
    equal: [model, "bad-name"]
)"),
            "rules.yaml:4: inhibit_rules[0].equal[1]: \"bad-name\" is not a label name");
  EXPECT_EQ(ErrorOf("inhibit_rules:\n  - {source_matchers: ['x'], target_matchers: ['y=\"z\"']}\n"),
            "rules.yaml:2: inhibit_rules[0].source_matchers[0]: expected a label matcher like "
            "severity=\"critical\" or model=~\"rank.*\", got \"x\"");
}

TEST_F(RouteConfigTest, ValidateProgrammaticConfigs) {
  const auto issue = [](const AlertConfig& c) {
    absl::Status s = ValidateAlertConfig(c);
    return s.ok() ? std::string("OK") : std::string(s.message());
  };
  AlertConfig c;
  EXPECT_EQ(issue(c), "OK");
  c.receivers.push_back({});
  c.receivers[0].name = "hook";
  c.receivers[0].target.kind = Kind::kWebhook;
  c.receivers[0].target.url = "ftp://secret";
  EXPECT_EQ(issue(c), "receivers[0].webhook.url: must start with http:// or https://");
  c.receivers[0].target.url = "https://hooks.example/x";
  c.receivers[0].target.rate_per_minute = -1;
  EXPECT_EQ(issue(c), "receivers[0].rate_limit: must be a rate of at least 0/min (0: unlimited)");
  c.receivers[0].target.rate_per_minute = 10;
  c.receivers[0].target.timeout = Duration::zero();
  EXPECT_EQ(issue(c), "receivers[0].timeout: must be positive");
  c.receivers[0].target.timeout = seconds(5);
  c.receivers[0].target.kind = Kind::kTemplate;
  c.receivers[0].target.method = "DELETE";
  EXPECT_EQ(issue(c), "receivers[0].template.method: expected POST, PUT or GET, got \"DELETE\"");
  c.receivers[0].target.method = "PUT";
  EXPECT_EQ(issue(c), "OK");

  RouteNode child;
  child.matchers = {{"", LabelMatcher::Op::kEqual, "x"}};
  RouteNode top;
  top.receiver = "hook";
  top.routes = {child};
  c.routes = {top};
  EXPECT_EQ(issue(c), "route.routes[0].routes[0].matchers: empty label name");
  c.routes[0].routes[0].matchers = {{"model", LabelMatcher::Op::kRegex, "(("}};
  EXPECT_THAT(issue(c), StartsWith("route.routes[0].routes[0].matchers: matcher 0 (model)"));
  c.routes[0].routes[0].matchers.clear();
  c.routes[0].receiver = "nobody";
  EXPECT_EQ(issue(c),
            "route.routes[0].receiver: receiver \"nobody\" is not declared under receivers");
  c.routes[0].receiver = "hook";
  c.routes[0].group_interval = Duration(1);
  EXPECT_EQ(issue(c), "route.routes[0].group_interval: must be at least 1s");
  c.routes[0].group_interval.reset();
  c.routes[0].mute_during = std::vector<std::string>{"nope"};
  EXPECT_EQ(issue(c), "route.routes[0].mute_during[0]: unknown schedule \"nope\"");
  c.routes[0].mute_during.reset();
  EXPECT_EQ(issue(c), "OK");

  c.maintenance = {"nope"};
  EXPECT_EQ(issue(c), "maintenance[0]: unknown schedule \"nope\"");
  c.maintenance.clear();
  c.inhibit_rules.push_back({});
  EXPECT_EQ(issue(c), "inhibit_rules[1].source_matchers: must not be empty");
  c.inhibit_rules.assign(65, DefaultInhibitRules()[0]);
  EXPECT_EQ(issue(c), "inhibit_rules: at most 64 rules");
}

// The sample file's commented-out receiver targets are valid too: uncommented, they parse.
TEST_F(RouteConfigTest, TheSampleFilesCommentedTargetsParse) {
  std::ifstream in(std::string(TAILGUARD_EXAMPLES_DIR) + "/rules.yaml");
  ASSERT_TRUE(in);
  // "    # wecom: {...}" -> "    wecom: {...}" for the target fields only. (No std::regex:
  // GCC 12 warns inside it under the sanitizers.)
  std::string uncommented;
  int targets = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t hash = line.find_first_not_of(' ');
    if (hash != std::string::npos && line.compare(hash, 2, "# ") == 0) {
      const std::string rest = line.substr(hash + 2);
      for (const char* key : {"wecom:", "webhook:", "template:", "alertmanager:", "rate_limit:",
                              "send_resolved:", "timeout:"}) {
        if (rest.starts_with(std::string(key) + " ")) {
          line = line.substr(0, hash) + rest;
          ++targets;
          break;
        }
      }
    }
    uncommented += line + "\n";
  }
  ASSERT_GE(targets, 4);
  setenv("WECOM_KEY", "key", 1);
  setenv("SMS_TOKEN", "token", 1);
  setenv("AUDIT_TOKEN", "token", 1);
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(uncommented, "rules.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  std::set<Kind> kinds;
  for (const ReceiverOptions& r : c->receivers) kinds.insert(r.target.kind);
  EXPECT_THAT(kinds,
              ElementsAre(Kind::kWeCom, Kind::kWebhook, Kind::kTemplate, Kind::kAlertmanager));
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Alertmanager forgets a firing alert after its resolve_timeout (5 min) unless it is re-sent, so
// an alertmanager receiver re-sends every minute unless it says otherwise.
TEST(AlertmanagerReceiverTest, ResendsEveryMinuteByDefault) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
route: {group_interval: 5m, repeat_interval: 4h}
receivers:
  - name: am
    alertmanager: {url: "http://127.0.0.1:9093"}
  - name: am_slow
    alertmanager: {url: "http://127.0.0.1:9093"}
    repeat_interval: 3m
  - name: hook
    webhook: {url: "http://127.0.0.1:8080/hook"}
)",
                                                   "rules.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->receivers.size(), 3u);
  EXPECT_EQ(c->receivers[0].route.group_interval, std::chrono::minutes(1));
  EXPECT_EQ(c->receivers[0].route.repeat_interval, std::chrono::minutes(1));
  EXPECT_EQ(c->receivers[1].route.group_interval, std::chrono::minutes(1));
  EXPECT_EQ(c->receivers[1].route.repeat_interval, std::chrono::minutes(3));
  EXPECT_EQ(c->receivers[2].route.group_interval, std::chrono::minutes(5));
  EXPECT_EQ(c->receivers[2].route.repeat_interval, std::chrono::hours(4));
}

}  // namespace
}  // namespace tailguard
