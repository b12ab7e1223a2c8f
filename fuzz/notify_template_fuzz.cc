// Fuzzes the notification renderer on the same bytes, used twice:
// - as a receiver's body template: ValidateTemplate and Render never crash or throw, Render
//   accepts exactly what ValidateTemplate accepts (for every content type and for GET), a JSON
//   template whose fields all sit inside JSON strings stays valid JSON, and a GET request's
//   URL never holds a space or control character;
// - as alert text (annotations, root causes, label values, severity): the WeCom message is
//   valid JSON, its content valid UTF-8 within WeCom's limit (4096 bytes markdown, 2048 text).
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "alert/notify/render.h"

namespace {

using tailguard::Labels;
using tailguard::Notification;
using tailguard::NotifiedAlert;
using tailguard::NotifyStatus;
using tailguard::ReceiverTarget;
using tailguard::WallTime;
using namespace tailguard::notify;

Notification Sample(std::string_view text) {
  Notification n;
  n.time = WallTime(std::chrono::seconds(1'793'685'760));
  n.receiver = "r";
  n.group_key = "{alertname=\"x\"}";
  n.group_labels = {{"alertname", "x"}};
  n.idempotency_key = "r|{alertname=\"x\"}|1|1";
  n.sequence = 1;
  const std::string t(text);
  for (int i = 0; i < 40; ++i) {
    NotifiedAlert a;
    a.rule = "x";
    a.series = "m{model=\"" + t.substr(0, static_cast<size_t>(i) * 3) + "\"}";
    a.labels = {{"alertname", "x"}, {"model", t}, {"severity", i % 3 ? "warning" : t}};
    a.annotations = {{"summary", t}, {"root_causes", t + "\n" + t}, {t.substr(0, 8), t}};
    a.severity = i % 3 ? "warning" : t;
    a.status = i % 5 == 4 ? NotifyStatus::kResolved : NotifyStatus::kFiring;
    a.value = 0.412 * i;
    a.threshold = 0.27;
    a.baseline_p99 = 0.18;
    a.starts_at = n.time - std::chrono::seconds(60 * i);
    a.ends_at = a.status == NotifyStatus::kResolved ? n.time : WallTime{};
    n.alerts.push_back(a);
  }
  return n;
}

// RFC 3629, written apart from the renderer's own check.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

void CheckTemplate(std::string_view text, const Notification& n, const MessageContext& ctx) {
  const bool valid = ValidateTemplate(text).ok();
  ReceiverTarget t;
  t.kind = ReceiverTarget::Kind::kTemplate;
  t.url = "https://sms.example.com/send?a=b";
  t.body_template = std::string(text);
  for (const char* method : {"POST", "GET"}) {
    for (const char* type :
         {"application/json", "application/x-www-form-urlencoded", "text/plain"}) {
      t.method = method;
      t.content_type = type;
      const absl::StatusOr<HttpRequest> r = Render(t, n, ctx);
      if (r.ok() != valid) std::abort();
      if (!r.ok()) continue;
      if (t.method == std::string_view("GET")) {
        if (!r->body.empty()) std::abort();
        for (unsigned char c : r->url) {
          if (c <= 0x20 || c >= 0x7f) std::abort();
        }
      }
    }
  }
  // Every field inside a JSON string: the filled document must parse.
  if (valid && text.find('"') == std::string_view::npos &&
      text.find('\\') == std::string_view::npos) {
    bool controls = false;
    for (unsigned char c : text) controls |= c < 0x20;
    t.method = "POST";
    t.content_type = "application/json";
    t.body_template = "{\"t\":\"" + std::string(text) + "\"}";
    const absl::StatusOr<HttpRequest> r = Render(t, n, ctx);
    if (!r.ok()) std::abort();
    if (!controls && IsValidUtf8(text) && !nlohmann::json::accept(r->body)) std::abort();
  }
}

void CheckWeCom(std::string_view text, const MessageContext& ctx) {
  const Notification n = Sample(text);
  ReceiverTarget t;
  t.kind = ReceiverTarget::Kind::kWeCom;
  t.url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k";
  for (bool mentions : {false, true}) {
    t.mentioned_mobile_list.clear();
    if (mentions) t.mentioned_mobile_list = {std::string(text.substr(0, 16))};
    const absl::StatusOr<HttpRequest> r = Render(t, n, ctx);
    if (!r.ok()) std::abort();
    const nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
    if (body.is_discarded()) std::abort();
    const char* type = mentions ? "text" : "markdown";
    const std::string content = body[type]["content"];
    if (content.size() > (mentions ? kWeComTextMaxBytes : kWeComMarkdownMaxBytes)) std::abort();
    if (!IsValidUtf8(content)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  MessageContext ctx;
  ctx.external_url = "http://127.0.0.1:9090";
  ctx.instance = "fuzz";
  CheckTemplate(text, Sample(text.substr(0, 64)), ctx);
  CheckWeCom(text, ctx);
  return 0;
}
