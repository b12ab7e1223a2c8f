// `tailguard alerts`: the event store from the command line: list, show, ack, archive, silences
// and the delivery outbox. It works on the store file directly (WAL lets a running `tailguard
// serve` and this command use it at the same time), so it needs no server.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "alert/notify/silences.h"
#include "commands.h"
#include "common/duration.h"
#include "common/format.h"
#include "common/strings.h"
#include "metrics/unit_format.h"
#include "nlohmann/json.hpp"
#include "store/event_store.h"
#include "store_file.h"
#include "tailguard/alert.h"
#include "tailguard/clock.h"
#include "tailguard/series_io.h"

namespace tailguard::cli {
namespace {

using json = nlohmann::json;
using store::AlertRow;
using store::EventStore;
using store::OutboxItem;

struct AlertsFlags {
  std::string db;
  std::string config;
  bool json = false;
  // list
  bool all = false;
  bool archived = false;
  std::string rule;
  int limit = 50;
  // show, ack, archive, silence expire
  int64_t id = 0;
  // ack
  std::string by;
  std::string comment;
  // silence add
  std::string match;
  std::string duration = "2h";
  // outbox
  std::string state;
  std::string receiver;
};

absl::StatusOr<std::unique_ptr<EventStore>> OpenStore(const AlertsFlags& f) {
  absl::StatusOr<std::string> path = StoreFilePath(f.db, f.config);
  if (!path.ok()) return path.status();
  return OpenExistingEventStore(*path);
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "tailguard alerts: %s\n", std::string(s.message()).c_str());
  // Bad input from the user is a usage error; a store that cannot be read a runtime failure.
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsFailedPrecondition(s) ? 2 : 1;
}

std::string When(WallTime t) { return FormatTimestampUtc(t); }
std::string When(const std::optional<WallTime>& t) { return t ? When(*t) : std::string("-"); }
json JsonTime(const std::optional<WallTime>& t) {
  return t ? json(FormatRfc3339(*t)) : json(nullptr);
}
json JsonNumber(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// `stat`: a statistic's name, as the store holds it; one this build does not know shows plain.
// `unit`: the series' ("seconds", "bytes", "count"; "" as seconds).
std::string ShowValue(std::string_view stat, double v, std::string_view unit) {
  if (!std::isfinite(v)) return "n/a";
  if (std::optional<Statistic> s = ParseStatistic(stat); s && IsLatencyStatistic(*s)) {
    return metrics::FormatInUnit(v, ParseUnit(unit).value_or(Unit::kNanoseconds));
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string StateOf(const AlertRow& a) {
  std::string s(store::EpisodeStateName(a.state));
  if (a.archived_at) s += " (archived)";
  return s;
}

json AlertJson(const AlertRow& a) {
  json labels = json::object();
  for (const auto& [k, v] : a.labels) labels[k] = v;
  return {{"id", a.id},
          {"rule", a.rule},
          {"series", a.series},
          {"labels", labels},
          {"stat", a.stat},
          {"unit", a.unit},
          {"state", std::string(store::EpisodeStateName(a.state))},
          {"tier", a.tier},
          {"severity", a.severity},
          {"value", JsonNumber(a.value)},
          {"threshold", JsonNumber(a.threshold)},
          {"baseline_p99", JsonNumber(a.baseline_p99)},
          {"started_at", FormatRfc3339(a.started_at)},
          {"fired_at", JsonTime(a.fired_at)},
          {"ended_at", JsonTime(a.ended_at)},
          {"acked_by", a.acked_by.empty() ? json(nullptr) : json(a.acked_by)},
          {"acked_at", JsonTime(a.acked_at)},
          {"ack_comment", a.ack_comment},
          {"archived_at", JsonTime(a.archived_at)}};
}

json OutboxJson(const OutboxItem& o) {
  return {
      {"id", o.id},
      {"idempotency_key", o.idempotency_key},
      {"receiver", o.receiver},
      {"group_key", o.group_key},
      {"status", o.status},
      {"summary", o.summary},
      {"created", FormatRfc3339(o.created)},
      {"state", std::string(store::OutboxStateName(o.state))},
      {"attempts", o.attempts},
      {"next_attempt", o.state == OutboxItem::State::kPending ? json(FormatRfc3339(o.next_attempt))
                                                              : json(nullptr)},
      {"last_error", o.last_error},
      {"last_http_status", o.last_http_status},
      {"delivered_at",
       o.delivered_at == WallTime{} ? json(nullptr) : json(FormatRfc3339(o.delivered_at))}};
}

void Print(const json& j) { std::printf("%s\n", j.dump(2).c_str()); }

int List(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  store::AlertQuery q;
  q.active_only = !f.all;
  q.include_archived = f.archived;
  q.rule = f.rule;
  q.limit = f.limit;
  absl::StatusOr<std::vector<AlertRow>> rows = (*db)->ListAlerts(q);
  if (!rows.ok()) return Fail(rows.status());
  if (f.json) {
    json out = json::array();
    for (const AlertRow& a : *rows) out.push_back(AlertJson(a));
    Print(out);
    return 0;
  }
  if (rows->empty()) {
    std::printf("%s\n", f.all ? "no alerts" : "no active alerts (--all shows ended ones too)");
    return 0;
  }
  std::printf("%-6s %-23s %-10s %-9s %-22s %-10s %-10s %s\n", "ID", "STARTED", "STATE", "SEVERITY",
              "RULE", "VALUE", "THRESHOLD", "SERIES");
  for (const AlertRow& a : *rows) {
    std::printf("%-6lld %-23s %-10s %-9s %-22s %-10s %-10s %s%s\n", static_cast<long long>(a.id),
                When(a.started_at).c_str(), StateOf(a).c_str(), a.severity.c_str(), a.rule.c_str(),
                ShowValue(a.stat, a.value, a.unit).c_str(),
                ShowValue(a.stat, a.threshold, a.unit).c_str(), a.series.c_str(),
                a.acked_by.empty() ? "" : Cat("  [acked by ", a.acked_by, "]").c_str());
  }
  return 0;
}

int Show(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  absl::StatusOr<store::AlertDetail> d = (*db)->GetAlert(f.id);
  if (!d.ok()) return Fail(d.status());
  const AlertRow& a = d->alert;
  if (f.json) {
    json out = AlertJson(a);
    json timeline = json::array();
    for (const store::TimelineEntry& e : d->timeline) {
      timeline.push_back({{"time", FormatRfc3339(e.time)},
                          {"type", std::string(store::TimelineTypeName(e.type))},
                          {"kind", e.kind},
                          {"severity", e.severity},
                          {"value", JsonNumber(e.value)},
                          {"threshold", JsonNumber(e.threshold)},
                          {"detail", e.detail}});
    }
    json notifications = json::array();
    for (const store::AlertNotification& n : d->notifications) {
      notifications.push_back(OutboxJson(n.outbox));
    }
    json annotations = json::array();
    for (const store::Annotation& n : d->annotations) {
      annotations.push_back({{"time", FormatRfc3339(n.time)}, {"kind", n.kind}, {"text", n.text}});
    }
    out["timeline"] = timeline;
    out["notifications"] = notifications;
    out["annotations"] = annotations;
    Print(out);
    return 0;
  }
  std::printf("alert %lld: %s on %s\n", static_cast<long long>(a.id), a.rule.c_str(),
              a.series.c_str());
  std::printf("  state      %s, %s (tier %d)\n", StateOf(a).c_str(), a.severity.c_str(), a.tier);
  std::printf("  %-10s %s (threshold %s, baseline P99 %s)\n", a.stat.c_str(),
              ShowValue(a.stat, a.value, a.unit).c_str(),
              ShowValue(a.stat, a.threshold, a.unit).c_str(),
              ShowValue(StatisticName(Statistic::kP99), a.baseline_p99, a.unit).c_str());
  std::printf("  started    %s\n  fired      %s\n  ended      %s\n", When(a.started_at).c_str(),
              When(a.fired_at).c_str(), When(a.ended_at).c_str());
  if (!a.acked_by.empty()) {
    std::printf("  acked      %s by %s%s\n", When(a.acked_at).c_str(), a.acked_by.c_str(),
                a.ack_comment.empty() ? "" : Cat(": ", a.ack_comment).c_str());
  }
  if (!d->annotations.empty()) {
    std::printf("annotations:\n");
    for (const store::Annotation& n : d->annotations) {
      std::printf("  %s  %s: %s\n", When(n.time).c_str(), n.kind.c_str(), n.text.c_str());
    }
  }
  std::printf("timeline:\n");
  for (const store::TimelineEntry& e : d->timeline) {
    std::printf("  %s  %-11s %-10s %s%s\n", When(e.time).c_str(),
                std::string(store::TimelineTypeName(e.type)).c_str(), e.kind.c_str(),
                e.severity.c_str(), e.detail.empty() ? "" : Cat("  ", e.detail).c_str());
  }
  std::printf("notifications:\n");
  if (d->notifications.empty()) std::printf("  none\n");
  for (const store::AlertNotification& n : d->notifications) {
    const OutboxItem& o = n.outbox;
    std::printf("  %s  %-8s to %-12s %-9s attempts %d%s\n", When(o.created).c_str(),
                o.status.c_str(), o.receiver.c_str(),
                std::string(store::OutboxStateName(o.state)).c_str(), o.attempts,
                o.last_error.empty() ? "" : Cat("  (", o.last_error, ")").c_str());
  }
  return 0;
}

std::string DefaultUser() {
  if (const char* u = std::getenv("USER"); u != nullptr && *u != '\0') return u;
  return "unknown";
}

int Ack(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  const std::string by = f.by.empty() ? DefaultUser() : f.by;
  absl::Status s = (*db)->Ack(f.id, by, f.comment, Clock::Real().WallNow());
  if (!s.ok()) return Fail(s);
  std::printf("alert %lld acknowledged by %s\n", static_cast<long long>(f.id), by.c_str());
  return 0;
}

int Archive(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  absl::Status s = (*db)->Archive(f.id, Clock::Real().WallNow());
  if (!s.ok()) return Fail(s);
  std::printf("alert %lld archived\n", static_cast<long long>(f.id));
  return 0;
}

int SilenceAdd(const AlertsFlags& f) {
  std::optional<Duration> d = ParseDurationText(f.duration);
  if (!d || *d <= Duration::zero()) {
    return Fail(absl::InvalidArgumentError(
        Cat("--duration: expected a positive duration like 2h or 30m, got \"", f.duration, '"')));
  }
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  const WallTime now = Clock::Real().WallNow();
  store::Silence s;
  s.matchers = f.match;
  s.starts_at = now;
  s.ends_at = now + *d;
  s.created_by = f.by.empty() ? DefaultUser() : f.by;
  s.comment = f.comment;
  s.created_at = now;
  absl::StatusOr<int64_t> id = notify::AddSilence(**db, s);
  if (!id.ok()) return Fail(id.status());
  std::printf("silence %lld: %s until %s\n", static_cast<long long>(*id), f.match.c_str(),
              FormatTimestampUtc(s.ends_at).c_str());
  return 0;
}

int SilenceList(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  const WallTime now = Clock::Real().WallNow();
  absl::StatusOr<std::vector<store::Silence>> all = (*db)->ListSilences(now, f.all);
  if (!all.ok()) return Fail(all.status());
  if (f.json) {
    json out = json::array();
    for (const store::Silence& s : *all) {
      out.push_back({{"id", s.id},
                     {"matchers", s.matchers},
                     {"starts_at", FormatRfc3339(s.starts_at)},
                     {"ends_at", FormatRfc3339(s.ends_at)},
                     {"created_by", s.created_by},
                     {"comment", s.comment},
                     {"active", s.starts_at <= now && now < s.ends_at}});
    }
    Print(out);
    return 0;
  }
  if (all->empty()) {
    std::printf("no silences\n");
    return 0;
  }
  std::printf("%-5s %-23s %-23s %-12s %-40s %s\n", "ID", "STARTS", "ENDS", "BY", "MATCHERS",
              "COMMENT");
  for (const store::Silence& s : *all) {
    std::printf("%-5lld %-23s %-23s %-12s %-40s %s\n", static_cast<long long>(s.id),
                FormatTimestampUtc(s.starts_at).c_str(), FormatTimestampUtc(s.ends_at).c_str(),
                s.created_by.c_str(), s.matchers.c_str(), s.comment.c_str());
  }
  return 0;
}

int SilenceExpire(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  absl::Status s = (*db)->ExpireSilence(f.id, Clock::Real().WallNow());
  if (!s.ok()) return Fail(s);
  std::printf("silence %lld expired\n", static_cast<long long>(f.id));
  return 0;
}

int Outbox(const AlertsFlags& f) {
  absl::StatusOr<std::unique_ptr<EventStore>> db = OpenStore(f);
  if (!db.ok()) return Fail(db.status());
  store::OutboxQuery q;
  if (!f.state.empty()) {
    std::optional<OutboxItem::State> s = store::ParseOutboxState(f.state);
    if (!s) {
      return Fail(absl::InvalidArgumentError(
          Cat("--state: expected pending, delivered, failed or skipped, got \"", f.state, '"')));
    }
    q.state = s;
  }
  q.receiver = f.receiver;
  q.limit = f.limit;
  absl::StatusOr<std::vector<OutboxItem>> items = (*db)->ListOutbox(q);
  if (!items.ok()) return Fail(items.status());
  if (f.json) {
    json out = json::array();
    for (const OutboxItem& o : *items) out.push_back(OutboxJson(o));
    Print(out);
    return 0;
  }
  absl::StatusOr<store::OutboxStats> stats = (*db)->CountOutbox();
  if (stats.ok()) {
    std::printf(
        "outbox: %lld pending, %lld delivered, %lld failed, %lld recorded only%s\n",
        static_cast<long long>(stats->all.pending), static_cast<long long>(stats->all.delivered),
        static_cast<long long>(stats->all.failed), static_cast<long long>(stats->all.skipped),
        stats->oldest_pending
            ? Cat("; oldest pending since ", FormatTimestampUtc(*stats->oldest_pending)).c_str()
            : "");
  }
  for (const OutboxItem& o : *items) {
    std::printf("%-6lld %-23s %-12s %-9s %-8s tries %-3d %s%s\n", static_cast<long long>(o.id),
                FormatTimestampUtc(o.created).c_str(), o.receiver.c_str(),
                std::string(store::OutboxStateName(o.state)).c_str(), o.status.c_str(), o.attempts,
                o.summary.c_str(),
                o.last_error.empty() ? "" : Cat("\n       last error: ", o.last_error).c_str());
  }
  return 0;
}

}  // namespace

void AddAlerts(CLI::App& app, Action& action) {
  auto f = std::make_shared<AlertsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "alerts",
      "Alerts in the event store: list, show, acknowledge, archive; silences; the delivery\n"
      "outbox. Works on the store file directly, next to a running `tailguard serve`.");
  cmd->require_subcommand(1);
  cmd->add_option("--db", f->db, "Event store file (default: ./tailguard.db)");
  cmd->add_option("-c,--config", f->config,
                  "Gateway configuration whose store.path to use (instead of --db)")
      ->check(CLI::ExistingFile);
  cmd->fallthrough();
  cmd->footer(
      "Examples:\n"
      "  tailguard alerts list                      active alerts\n"
      "  tailguard alerts list --all --json         every alert, as JSON\n"
      "  tailguard alerts show 12\n"
      "  tailguard alerts ack 12 --comment \"looking into it\"\n"
      "  tailguard alerts silence add --match '{model=\"rank\"}' --duration 2h "
      "--comment \"deploy\"\n"
      "  tailguard alerts outbox --state pending    deliveries still to make");

  CLI::App* list = cmd->add_subcommand("list", "Active alerts, newest first");
  list->add_flag("--all", f->all, "Ended alerts too");
  list->add_flag("--archived", f->archived, "Archived alerts too");
  list->add_option("--rule", f->rule, "Only this rule");
  list->add_option("--limit", f->limit, "At most this many (default 50)")
      ->check(CLI::Range(1, 1000000));
  list->add_flag("--json", f->json, "JSON instead of a table");
  list->callback([f, &action] { action = [f] { return List(*f); }; });

  CLI::App* show = cmd->add_subcommand("show", "One alert: its timeline and notifications");
  show->add_option("id", f->id, "Alert id (from list)")->required()->check(IdValidator());
  show->add_flag("--json", f->json, "JSON instead of text");
  show->callback([f, &action] { action = [f] { return Show(*f); }; });

  CLI::App* ack = cmd->add_subcommand("ack", "Acknowledge an alert");
  ack->add_option("id", f->id, "Alert id")->required()->check(IdValidator());
  ack->add_option("--by", f->by, "Who acknowledges (default: $USER)");
  ack->add_option("--comment", f->comment, "Why, or what is being done");
  ack->callback([f, &action] { action = [f] { return Ack(*f); }; });

  CLI::App* archive = cmd->add_subcommand("archive", "Hide an ended alert from list");
  archive->add_option("id", f->id, "Alert id")->required()->check(IdValidator());
  archive->callback([f, &action] { action = [f] { return Archive(*f); }; });

  CLI::App* silence = cmd->add_subcommand("silence", "Silences: add, list, expire");
  silence->require_subcommand(1);
  CLI::App* add = silence->add_subcommand(
      "add", "Silence the alerts matching a selector (the notifications are not sent)");
  add->add_option(
         "--match", f->match,
         "Selector over alert labels, e.g. '{model=\"rank\",severity=~\"warning|critical\"}'")
      ->required();
  add->add_option("--duration", f->duration, "How long, from now (default 2h)");
  add->add_option("--comment", f->comment, "Why (required)")->required();
  add->add_option("--by", f->by, "Who (default: $USER)");
  add->callback([f, &action] { action = [f] { return SilenceAdd(*f); }; });
  CLI::App* slist = silence->add_subcommand("list", "Silences in effect or still to start");
  slist->add_flag("--all", f->all, "Expired ones too");
  slist->add_flag("--json", f->json, "JSON instead of a table");
  slist->callback([f, &action] { action = [f] { return SilenceList(*f); }; });
  CLI::App* expire = silence->add_subcommand("expire", "End a silence now");
  expire->add_option("id", f->id, "Silence id")->required()->check(IdValidator());
  expire->callback([f, &action] { action = [f] { return SilenceExpire(*f); }; });

  CLI::App* outbox = cmd->add_subcommand("outbox", "Notifications and their delivery status");
  outbox->add_option("--state", f->state, "pending, delivered, failed or skipped");
  outbox->add_option("--receiver", f->receiver, "Only this receiver");
  outbox->add_option("--limit", f->limit, "At most this many (default 50)")
      ->check(CLI::Range(1, 1000000));
  outbox->add_flag("--json", f->json, "JSON instead of text");
  outbox->callback([f, &action] { action = [f] { return Outbox(*f); }; });
}

}  // namespace tailguard::cli
