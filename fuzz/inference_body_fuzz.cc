// Fuzzes the request-body inspectors and the SSE scanner on the same bytes.
// - KServeInputSize and InspectOpenAIRequest never crash or throw, and agree with a reference
//   computed from nlohmann's document parser: same result when they accept, and no result from
//   the reference when they reject for a reason the document can show (not duplicates, depth or
//   syntax). A document with a duplicate key may be rejected for its first value, which the
//   reference (last value wins) never sees, so any rejection of one is accepted.
// - SseScanner counts the same events fed whole, in two pieces split at a data-derived point,
//   and byte by byte, and agrees with a reference that buffers lines as the HTML spec describes.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/protocol.h"

namespace {

using nlohmann::json;
using tailguard::server::OpenAIRequest;

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Whether an inspector's error is one the document parser cannot reproduce.
bool OnlyVisibleToTheStream(const absl::Status& s) {
  const std::string m(s.message());  // Debian's absl::string_view is not std::string_view
  return Contains(m, "duplicate") || Contains(m, "nests deeper") || Contains(m, "malformed JSON") ||
         Contains(m, "too large");
}

// Whether some object in the document repeats a key (nlohmann's document keeps the last value).
class DuplicateKeyFinder final : public nlohmann::json_sax<json> {
 public:
  bool found() const { return found_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    found_ |= !keys_.back().insert(k).second;
    return !found_;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  std::vector<std::set<std::string>> keys_;
  bool found_ = false;
};

bool HasDuplicateKey(std::string_view text) {
  DuplicateKeyFinder finder;
  json::sax_parse(text.begin(), text.end(), &finder, nlohmann::json::input_format_t::json,
                  /*strict=*/true);
  return finder.found();
}

// A whole number >= 0 as the streaming inspectors read it: "-0" is a signed integer to
// nlohmann's document but zero all the same.
bool IsNonNegativeInteger(const json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

uint64_t NonNegative(const json& v) {
  return v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
}

std::optional<uint64_t> ReferenceKServe(const json& body) {
  if (!body.is_object()) return std::nullopt;
  const auto inputs = body.find("inputs");
  if (inputs == body.end() || !inputs->is_array()) return std::nullopt;
  uint64_t total = 0;
  for (const json& input : *inputs) {
    if (!input.is_object()) return std::nullopt;
    const auto shape = input.find("shape");
    if (shape == input.end() || !shape->is_array()) return std::nullopt;
    uint64_t product = 1;
    bool zero = false;
    bool overflow = false;
    for (const json& dim : *shape) {
      if (!IsNonNegativeInteger(dim)) return std::nullopt;
      const uint64_t d = NonNegative(dim);
      zero |= d == 0;
      overflow |= __builtin_mul_overflow(product, d, &product);
    }
    if (overflow && !zero) return std::nullopt;
    if (__builtin_add_overflow(total, zero ? 0 : product, &total)) return std::nullopt;
  }
  return total;
}

uint64_t CodePoints(const std::string& s) {
  uint64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::optional<OpenAIRequest> ReferenceOpenAI(const json& body, bool chat) {
  if (!body.is_object()) return std::nullopt;
  OpenAIRequest r;
  if (const auto model = body.find("model"); model != body.end()) {
    if (!model->is_string()) return std::nullopt;
    r.model = model->get<std::string>();
  }
  if (const auto stream = body.find("stream"); stream != body.end()) {
    if (stream->is_boolean()) {
      r.stream = stream->get<bool>();
    } else if (!stream->is_null()) {
      return std::nullopt;
    }
  }
  if (!chat) {
    const auto prompt = body.find("prompt");
    if (prompt == body.end()) return std::nullopt;
    if (prompt->is_string()) {
      r.prompt_chars = CodePoints(prompt->get<std::string>());
      return r;
    }
    if (!prompt->is_array()) return std::nullopt;
    for (const json& item : *prompt) {
      if (item.is_string()) {
        r.prompt_chars += CodePoints(item.get<std::string>());
      } else if (IsNonNegativeInteger(item)) {
        r.prompt_chars += 1;
      } else if (item.is_array()) {
        for (const json& token : item) {
          if (!IsNonNegativeInteger(token)) return std::nullopt;
          r.prompt_chars += 1;
        }
      } else {
        return std::nullopt;
      }
    }
    return r;
  }
  const auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array()) return std::nullopt;
  for (const json& message : *messages) {
    if (!message.is_object()) return std::nullopt;
    const auto content = message.find("content");
    if (content == message.end() || content->is_null()) continue;
    if (content->is_string()) {
      r.prompt_chars += CodePoints(content->get<std::string>());
      continue;
    }
    if (!content->is_array()) return std::nullopt;
    for (const json& part : *content) {
      if (!part.is_object()) return std::nullopt;
      const auto text = part.find("text");
      if (text == part.end()) continue;
      if (!text->is_string()) return std::nullopt;
      r.prompt_chars += CodePoints(text->get<std::string>());
    }
  }
  return r;
}

void CheckBodies(std::string_view text, size_t split) {
  const absl::StatusOr<uint64_t> size = tailguard::server::KServeInputSize(text);
  const absl::StatusOr<uint64_t> header = tailguard::server::KServeInputSize(text, split);
  if (split > text.size() && header.ok()) std::abort();
  const absl::StatusOr<OpenAIRequest> completion =
      tailguard::server::InspectOpenAIRequest(text, false);
  const absl::StatusOr<OpenAIRequest> chat = tailguard::server::InspectOpenAIRequest(text, true);
  for (const absl::Status& s :
       {size.status(), header.status(), completion.status(), chat.status()}) {
    if (!s.ok() && s.code() != absl::StatusCode::kInvalidArgument) std::abort();
  }

  // Accepted bodies are JSON; the reference reads them with the document parser.
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    if (size.ok() || completion.ok() || chat.ok()) std::abort();
    return;
  }
  const bool duplicates = HasDuplicateKey(text);
  auto unexplained = [duplicates](const absl::Status& s) {
    return !duplicates && !OnlyVisibleToTheStream(s);
  };
  const std::optional<uint64_t> ref = ReferenceKServe(doc);
  if (size.ok() ? ref != *size : (unexplained(size.status()) && ref.has_value())) {
    std::abort();
  }
  for (const bool is_chat : {false, true}) {
    const absl::StatusOr<OpenAIRequest>& got = is_chat ? chat : completion;
    const std::optional<OpenAIRequest> want = ReferenceOpenAI(doc, is_chat);
    if (got.ok()) {
      if (!want || want->stream != got->stream || want->model != got->model ||
          want->prompt_chars != got->prompt_chars) {
        std::abort();
      }
    } else if (unexplained(got.status()) && want.has_value()) {
      std::abort();
    }
  }
}

// The HTML event-stream interpretation, buffering whole lines and the data of each event.
void ReferenceSse(std::string_view s, uint64_t& events, bool& done) {
  events = 0;
  done = false;
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  std::string data;
  bool has_data = false;
  while (true) {
    const size_t end = s.find_first_of("\r\n");
    if (end == std::string_view::npos) return;  // an unterminated line never counts
    const std::string_view line = s.substr(0, end);
    s.remove_prefix(s.substr(end, 2) == "\r\n" ? end + 2 : end + 1);
    if (line.empty()) {
      if (has_data) {
        data.pop_back();  // the LF after the last data line
        if (data == "[DONE]") {
          done = true;
        } else {
          ++events;
        }
      }
      data.clear();
      has_data = false;
      continue;
    }
    if (line.front() == ':') continue;
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    if (field == "data") {
      data.append(value);
      data += '\n';
      has_data = true;
    }
  }
}

void CheckSse(std::string_view text, size_t split) {
  split = std::min(split, text.size());
  tailguard::server::SseScanner whole;
  if (whole.Feed(text) != whole.events()) std::abort();
  tailguard::server::SseScanner two;
  const size_t n = two.Feed(text.substr(0, split)) + two.Feed(text.substr(split));
  if (n != two.events() || two.events() != whole.events() || two.done() != whole.done()) {
    std::abort();
  }
  tailguard::server::SseScanner bytes;
  uint64_t sum = 0;
  for (char c : text) sum += bytes.Feed(std::string_view(&c, 1));
  if (sum != whole.events() || bytes.events() != whole.events() || bytes.done() != whole.done()) {
    std::abort();
  }
  uint64_t events = 0;
  bool done = false;
  ReferenceSse(text, events, done);
  if (events != whole.events() || done != whole.done()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A split point from the data itself, so the fuzzer can steer it.
  const size_t split = size == 0 ? 0 : (data[0] | size_t{data[size - 1]} << 8) % (size + 2);
  CheckBodies(text, split);
  CheckSse(text, split);
  return 0;
}
