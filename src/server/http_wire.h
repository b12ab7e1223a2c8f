// The wire-level helpers the gateway's data path shares (the worker's relay and the upstream pool):
// Asio's coroutine types bound to the worker's executor, header field scans that cost less than
// Beast's lookups, and header serialisation into a reused string. Internal to src/server: it
// includes Beast, and only the data path's .cc files include it.
#ifndef TAILGUARD_SERVER_HTTP_WIRE_H_
#define TAILGUARD_SERVER_HTTP_WIRE_H_

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/stream.h"

namespace tailguard::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
// Sockets, streams and coroutines bound to their worker's io_context by type, not through the
// polymorphic any_io_executor (which costs a move of a type-erased executor in every
// operation and every resumption).
// Stream (server/stream.h) is basic_stream with reads that skip Asio's wasted first recv().
using Executor = StreamExecutor;
using Socket = Stream::socket_type;
template <class T>
using awaitable = net::awaitable<T, Executor>;
constexpr net::use_awaitable_t<Executor> use_awaitable;

// Largest upstream response body read into memory (streamed responses have no limit).
constexpr uint64_t kMaxResponseBytes = 256ull << 20;
constexpr size_t kMaxUpstreamHeaderBytes = 64 * 1024;
// Interim (1xx) answers read past before an upstream's final answer: a bound, so an upstream
// that sends nothing else cannot hold a request (and a worker's attention) forever.
constexpr int kMaxInterimAnswers = 16;

// Beast reads a body into the buffer as far as the buffer's spare capacity goes (512 bytes at
// least): a megabyte into a buffer sized for headers took hundreds of reads and resumptions
// (about 5 ms of a worker). A body with a known length above a few kilobytes gets room for one
// read of 64 KiB, the most Beast reads at a time (the body itself goes into its own string).
constexpr size_t kBodyReadReserve = 64 * 1024;
constexpr size_t kBufferKeep = 96 * 1024;  // what an idle connection keeps of a larger buffer


inline void ReserveForBody(beast::flat_buffer& buffer, const boost::optional<uint64_t>& length) {
  if (!length || *length <= 8 * 1024) return;
  buffer.reserve(buffer.size() +
                 static_cast<size_t>(std::min<uint64_t>(*length, kBodyReadReserve)));
}

// Gives back what ReserveForBody() took, so that idle connections stay small.
inline void ShrinkAfterBody(beast::flat_buffer& buffer) {
  if (buffer.capacity() > kBufferKeep) buffer.shrink_to_fit();
}

// RFC 9110 9.2.2: a request that can be repeated with the same effect.
inline bool IsIdempotent(http::verb v) {
  return v == http::verb::get || v == http::verb::head || v == http::verb::put ||
         v == http::verb::delete_ || v == http::verb::options || v == http::verb::trace;
}

// A malformed message (as opposed to a connection that ended or timed out).
inline bool IsParseError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_buffer;
}

inline auto Token(beast::error_code& ec) { return net::redirect_error(use_awaitable, ec); }

inline std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }
inline beast::string_view Bsv(std::string_view s) { return {s.data(), s.size()}; }

// Headers that describe one hop, not the message (RFC 9110 7.6.1), and must not be forwarded.
inline bool HopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
      return true;
    default:
      return false;
  }
}

// The value of the first field `name` ("" if none). The data path looks fields up this way: a
// scan of a request's or response's few fields costs a fraction of Beast's lookup by name
// (about 300 instructions), and finds the same field.
template <class Fields>
beast::string_view FieldValue(const Fields& fields, http::field name) {
  for (const auto& f : fields) {
    if (f.name() == name) return f.value();
  }
  return {};
}

template <class Fields>
beast::string_view FieldValue(const Fields& fields, std::string_view name) {
  for (const auto& f : fields) {
    const beast::string_view n = f.name_string();
    if (n.size() == name.size() &&
        beast::iequals(n, beast::string_view(name.data(), name.size()))) {
      return f.value();
    }
  }
  return {};
}

template <class Fields>
bool HasField(const Fields& fields, http::field name) {
  return std::any_of(fields.begin(), fields.end(),
                     [name](const auto& f) { return f.name() == name; });
}

// message::keep_alive(), with the Connection field found by a scan.
template <class Fields>
bool KeepAlive(const Fields& fields, unsigned version) {
  const auto it = std::find_if(fields.begin(), fields.end(),
                               [](const auto& f) { return f.name() == http::field::connection; });
  if (version < 11) return it != fields.end() && http::token_list{it->value()}.exists("keep-alive");
  return it == fields.end() || !http::token_list{it->value()}.exists("close");
}

// message::keep_alive(keep), skipped where it changes nothing: HTTP/1.1, kept alive and no
// Connection field (the usual case once hop-by-hop fields are stripped).
template <class Message>
void SetKeepAlive(Message& m, bool keep) {
  if (m.version() >= 11 && keep && !HasField(m, http::field::connection)) return;
  m.keep_alive(keep);
}

// message::content_length(n) on a message without Transfer-Encoding, skipped where it changes
// nothing: the only Content-Length field is already the last and says `n`.
template <class Message>
void SetContentLength(Message& m, uint64_t n) {
  size_t count = 0;
  for (const auto& f : m) count += f.name() == http::field::content_length ? 1 : 0;
  if (count == 1 && !HasField(m, http::field::transfer_encoding)) {
    const auto& last = *std::prev(m.end());
    char digits[24];
    const auto r = std::to_chars(std::begin(digits), std::end(digits), n);
    if (last.name() == http::field::content_length &&
        View(last.value()) == std::string_view(digits, static_cast<size_t>(r.ptr - digits))) {
      return;
    }
  }
  m.content_length(n);
}

template <class Fields>
void StripHopByHop(Fields& fields) {
  // Connection may name further hop-by-hop headers.
  std::vector<std::string> named;
  for (auto part : http::token_list(FieldValue(fields, http::field::connection))) {
    // The usual "keep-alive" names a header the loop below removes anyway: no copy needed.
    if (HopByHop(http::string_to_field(part))) continue;
    named.emplace_back(part);
  }
  for (const std::string& n : named) fields.erase(n);
  for (auto it = fields.begin(); it != fields.end();) {
    it = HopByHop(it->name()) ? fields.erase(it) : std::next(it);
  }
}

// Sends what the socket takes at once (it is non-blocking), and returns the number of bytes
// sent; `ec` is set on a failure other than would_block. A small message almost always goes
// whole, which spares the asynchronous write, its timer and a resumption of the coroutine; the
// caller writes any rest asynchronously, under the stream's timeout.
inline size_t TrySend(Stream& stream, const std::array<net::const_buffer, 2>& buffers,
               beast::error_code& ec) {
  if (!stream.socket().non_blocking()) return 0;
  const size_t n = stream.socket().send(buffers, 0, ec);
  if (ec == net::error::would_block || ec == net::error::try_again) ec = {};
  return ec ? 0 : n;
}

// A header's fields and blank line, as Beast's serializer writes them.
template <class Fields>
void AppendFields(const Fields& fields, std::string& out) {
  for (const auto& f : fields) {
    out.append(View(f.name_string())).append(": ").append(View(f.value())).append("\r\n");
  }
  out.append("\r\n");
}

// The bytes Beast's serializer writes for a header whose body is not chunked: built into a
// reused string and sent with the body in one gather write, which costs a fraction of the
// serializer's generic buffer sequences.
inline void SerializeHead(const http::request_header<>& h, std::string& out) {
  out.clear();
  out.append(View(h.method_string())).append(" ").append(View(h.target())).append(" HTTP/");
  out.append({static_cast<char>('0' + h.version() / 10), '.',
              static_cast<char>('0' + h.version() % 10), '\r', '\n'});
  AppendFields(h, out);
}

inline void SerializeHead(const http::response_header<>& h, std::string& out) {
  out.clear();
  const unsigned code = h.result_int();
  out.append({'H', 'T', 'T', 'P', '/', static_cast<char>('0' + h.version() / 10), '.',
              static_cast<char>('0' + h.version() % 10), ' ', static_cast<char>('0' + code / 100),
              static_cast<char>('0' + code / 10 % 10), static_cast<char>('0' + code % 10), ' '});
  const beast::string_view reason = h.reason();
  out.append(
      View(reason.empty() ? http::obsolete_reason(static_cast<http::status>(code)) : reason));
  out.append("\r\n");
  AppendFields(h, out);
}

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_HTTP_WIRE_H_
