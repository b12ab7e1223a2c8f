// The binary encoding of the alert engine's state: see state.h for the layout.
#include "alert/state.h"

#include <bit>
#include <cstring>

#include "common/encoding.h"
#include "common/strings.h"

namespace tailguard::alert_internal {
namespace {

constexpr std::string_view kMagic = "TGAS";

class Writer {
 public:
  // The encoding version being written.
  uint64_t version = kStateVersion;
  void WriteUnit(Unit u) {
    if (version >= 2) U(static_cast<uint64_t>(u));
  }
  void U(uint64_t v) { encoding::PutVarint(out_, v); }
  void I(int64_t v) { encoding::PutVarint(out_, encoding::ZigZag(v)); }
  void B(bool v) { U(v ? 1 : 0); }
  void T(WallTime t) { I(t.time_since_epoch().count()); }
  void D(double v) { encoding::PutFixed64(out_, std::bit_cast<uint64_t>(v)); }
  void S(std::string_view s) {
    U(s.size());
    out_.append(s);
  }
  void L(const Labels& labels) {
    U(labels.size());
    for (const auto& [name, value] : labels) {
      S(name);
      S(value);
    }
  }
  void Notified(const NotifiedAlert& n) {
    S(n.rule);
    S(n.series);
    L(n.labels);
    L(n.annotations);
    U(static_cast<uint64_t>(n.status));
    U(static_cast<uint64_t>(n.stat));
    I(n.tier);
    S(n.severity);
    D(n.value);
    D(n.threshold);
    D(n.baseline_p99);
    T(n.starts_at);
    T(n.ends_at);
    WriteUnit(n.unit);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

// Reads what Writer wrote. Every method returns a harmless value and latches failure at the
// first problem; callers check ok() before using what they read.
class Parser {
 public:
  explicit Parser(std::string_view bytes) : in_(bytes) {}

  // The encoding version being read (set once the header is read).
  uint64_t version = kStateVersion;
  Unit ReadUnit() {
    if (version < 2) return Unit::kNanoseconds;
    return static_cast<Unit>(Bounded(static_cast<uint64_t>(Unit::kCount), "unit"));
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t remaining() const { return in_.remaining(); }

  void Fail(std::string_view what) {
    if (ok()) error_ = Cat(what, " at byte ", in_.offset());
  }

  uint64_t U() {
    if (!ok()) return 0;
    std::optional<uint64_t> v = in_.Varint();
    if (!v) Fail("truncated or malformed number");
    return v.value_or(0);
  }
  // An unsigned value in [0, max].
  uint64_t Bounded(uint64_t max, std::string_view what) {
    const uint64_t v = U();
    if (v > max) Fail(Cat(what, " out of range"));
    return ok() ? v : 0;
  }
  int64_t I() { return encoding::UnZigZag(U()); }
  int IntIn(int lo, int hi, std::string_view what) {
    const int64_t v = I();
    if (v < lo || v > hi) Fail(Cat(what, " out of range"));
    return ok() ? static_cast<int>(v) : lo;
  }
  bool B() { return Bounded(1, "flag") == 1; }
  // A time: WallTime::min() (a "never" marker) or within about a century of 1970 either way, so
  // that adding a configured interval cannot overflow.
  WallTime T() {
    const int64_t ns = I();
    constexpr int64_t kLimit = int64_t{1} << 62;
    if (ns != WallTime::min().time_since_epoch().count() && (ns < -kLimit || ns > kLimit)) {
      Fail("time out of range");
    }
    return ok() ? WallTime(Duration(ns)) : WallTime{};
  }
  double D() {
    if (!ok()) return 0;
    std::optional<uint64_t> v = in_.Fixed64();
    if (!v) Fail("truncated number");
    return std::bit_cast<double>(v.value_or(0));
  }
  std::string S() {
    const uint64_t n = U();
    if (!ok()) return {};
    std::optional<std::string_view> b = n <= in_.remaining() ? in_.Bytes(n) : std::nullopt;
    if (!b) {
      Fail("truncated string");
      return {};
    }
    return std::string(*b);
  }
  // A list length: each element takes at least one byte, so a count past the input is corrupt
  // (and never reaches an allocation).
  size_t Count() {
    const uint64_t n = U();
    if (ok() && n > in_.remaining()) Fail("list longer than the input");
    return ok() ? static_cast<size_t>(n) : 0;
  }
  Labels L() {
    Labels out;
    const size_t n = Count();
    out.reserve(n);
    for (size_t i = 0; i < n && ok(); ++i) {
      std::string name = S();
      std::string value = S();
      out.emplace_back(std::move(name), std::move(value));
    }
    return out;
  }
  Statistic Stat() {
    return static_cast<Statistic>(Bounded(static_cast<uint64_t>(Statistic::kAnomalyScore), "stat"));
  }
  NotifiedAlert Notified() {
    NotifiedAlert n;
    n.rule = S();
    n.series = S();
    n.labels = L();
    n.annotations = L();
    n.status = static_cast<NotifyStatus>(Bounded(1, "status"));
    n.stat = Stat();
    n.tier = IntIn(0, kMaxAlertTiers - 1, "tier");
    n.severity = S();
    n.value = D();
    n.threshold = D();
    n.baseline_p99 = D();
    n.starts_at = T();
    n.ends_at = T();
    n.unit = ReadUnit();
    return n;
  }

 private:
  encoding::Reader in_;
  std::string error_;
};

void WriteMachine(Writer& w, const SavedMachine& m) {
  w.S(m.rule);
  const DebounceSnapshot& d = m.machine;
  w.U(static_cast<uint64_t>(d.state));
  w.I(d.tier);
  w.T(d.since);
  w.T(d.breach_start);
  w.U(kMaxAlertTiers);
  for (int k = 0; k < kMaxAlertTiers; ++k) {
    w.U(d.streak[k]);
    w.T(d.clean_since[k]);
  }
  w.D(m.value);
  w.D(m.threshold);
  w.B(m.live.has_value());
  if (m.live) {
    const SavedLive& l = *m.live;
    w.I(l.tier);
    w.S(l.severity);
    w.L(l.labels);
    w.U(static_cast<uint64_t>(l.stat));
    w.D(l.value);
    w.D(l.threshold);
    w.D(l.baseline_p99);
    w.T(l.starts_at);
    w.U(l.muted);
    w.WriteUnit(l.unit);
  }
}

SavedMachine ReadMachine(Parser& p) {
  SavedMachine m;
  m.rule = p.S();
  DebounceSnapshot& d = m.machine;
  d.state = static_cast<AlertState>(p.Bounded(static_cast<uint64_t>(AlertState::kAlert), "state"));
  d.tier = p.IntIn(-1, kMaxAlertTiers - 1, "tier");
  d.since = p.T();
  d.breach_start = p.T();
  const size_t tiers = p.Bounded(kMaxAlertTiers, "tier count");
  for (size_t k = 0; k < tiers && p.ok(); ++k) {
    d.streak[k] = static_cast<uint32_t>(p.Bounded(UINT32_MAX, "streak"));
    d.clean_since[k] = p.T();
  }
  for (size_t k = tiers; k < kMaxAlertTiers; ++k) d.clean_since[k] = WallTime::min();
  if (p.ok() && (d.state == AlertState::kNormal) != (d.tier < 0)) p.Fail("tier does not fit state");
  m.value = p.D();
  m.threshold = p.D();
  if (p.B()) {
    SavedLive l;
    l.tier = p.IntIn(0, kMaxAlertTiers - 1, "tier");
    l.severity = p.S();
    l.labels = p.L();
    l.stat = p.Stat();
    l.value = p.D();
    l.threshold = p.D();
    l.baseline_p99 = p.D();
    l.starts_at = p.T();
    l.muted = static_cast<uint8_t>(p.Bounded(7, "mute bits"));
    l.unit = p.ReadUnit();
    m.live = std::move(l);
  }
  return m;
}

}  // namespace

std::string EncodeState(const SavedState& state, uint64_t version) {
  Writer w;
  w.version = version;
  w.out().append(kMagic);
  w.U(version);
  w.T(state.next_stale_check);
  w.U(state.series.size());
  for (const SavedSeries& s : state.series) {
    w.S(s.metric);
    w.L(s.labels);
    w.T(s.last_time);
    w.T(s.last_seen);
    w.WriteUnit(s.unit);
    w.U(s.machines.size());
    for (const SavedMachine& m : s.machines) WriteMachine(w, m);
  }
  w.U(state.groups.size());
  for (const SavedGroup& g : state.groups) {
    w.B(g.node);
    w.S(g.owner);
    w.S(g.key);
    w.L(g.group_labels);
    w.T(g.started);
    w.T(g.next_flush);
    w.B(g.notified);
    w.T(g.last_notified);
    w.U(g.sequence);
    w.U(g.firing.size());
    for (const auto& [rule, series] : g.firing) {
      w.S(rule);
      w.S(series);
    }
    w.U(g.resolved.size());
    for (const NotifiedAlert& n : g.resolved) w.Notified(n);
    w.U(g.shown.size());
    for (const ShownAlert& s : g.shown) {
      w.S(s.rule);
      w.S(s.series);
      w.I(s.tier);
      w.T(s.starts_at);
    }
  }
  encoding::PutFixed32(w.out(), encoding::Crc32(w.out()));
  return std::move(w.out());
}

absl::StatusOr<SavedState> DecodeState(std::string_view bytes) {
  const auto error = [](std::string_view what) {
    return absl::InvalidArgumentError(Cat("alert state: ", what));
  };
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return error("not an alert engine state");
  }
  if (bytes.size() < kMagic.size() + 1 + 4) return error("truncated");
  std::string_view body = bytes.substr(0, bytes.size() - 4);
  Parser p(body.substr(kMagic.size()));
  const uint64_t version = p.U();
  if (!p.ok()) return error("truncated");
  if (version < 1 || version > kStateVersion) {
    return error(Cat("unknown version ", version, " (this build reads 1 to ", kStateVersion, ")"));
  }
  p.version = version;
  encoding::Reader crc(bytes.substr(body.size()));
  if (crc.Fixed32() != encoding::Crc32(body))
    return error("checksum mismatch (truncated or damaged)");

  SavedState state;
  state.next_stale_check = p.T();
  const size_t series = p.Count();
  for (size_t i = 0; i < series && p.ok(); ++i) {
    SavedSeries s;
    s.metric = p.S();
    s.labels = p.L();
    s.last_time = p.T();
    s.last_seen = p.T();
    s.unit = p.ReadUnit();
    const size_t machines = p.Count();
    for (size_t j = 0; j < machines && p.ok(); ++j) s.machines.push_back(ReadMachine(p));
    state.series.push_back(std::move(s));
  }
  const size_t groups = p.Count();
  for (size_t i = 0; i < groups && p.ok(); ++i) {
    SavedGroup g;
    g.node = p.B();
    g.owner = p.S();
    g.key = p.S();
    g.group_labels = p.L();
    g.started = p.T();
    g.next_flush = p.T();
    g.notified = p.B();
    g.last_notified = p.T();
    g.sequence = p.U();
    const size_t firing = p.Count();
    for (size_t j = 0; j < firing && p.ok(); ++j) {
      std::string rule = p.S();
      std::string key = p.S();
      g.firing.emplace_back(std::move(rule), std::move(key));
    }
    const size_t resolved = p.Count();
    for (size_t j = 0; j < resolved && p.ok(); ++j) g.resolved.push_back(p.Notified());
    const size_t shown = p.Count();
    for (size_t j = 0; j < shown && p.ok(); ++j) {
      ShownAlert s;
      s.rule = p.S();
      s.series = p.S();
      s.tier = p.IntIn(0, kMaxAlertTiers - 1, "tier");
      s.starts_at = p.T();
      g.shown.push_back(std::move(s));
    }
    state.groups.push_back(std::move(g));
  }
  if (p.ok() && p.remaining() != 0) p.Fail("unexpected bytes after the state");
  if (!p.ok()) return error(p.error());
  return state;
}

}  // namespace tailguard::alert_internal
