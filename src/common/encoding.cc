// Varints, fixed-width integers and CRC-32.
#include "common/encoding.h"

#include <array>

namespace tailguard::encoding {

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutFixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void PutFixed64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::optional<uint64_t> Reader::Varint() {
  uint64_t result = 0;
  for (size_t i = 0; i < 10; ++i) {
    if (offset_ + i >= bytes_.size()) return std::nullopt;
    const uint64_t byte = static_cast<uint8_t>(bytes_[offset_ + i]);
    // The tenth byte may only carry the top bit of a 64-bit value.
    if (i == 9 && byte > 1) return std::nullopt;
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      // A last byte of zero after the first pads the value: reject it, so every value has one
      // encoding and parse-then-serialize gives back the same bytes.
      if (byte == 0 && i > 0) return std::nullopt;
      offset_ += i + 1;
      return result;
    }
  }
  return std::nullopt;
}

std::optional<uint32_t> Reader::Fixed32() {
  if (remaining() < 4) return std::nullopt;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes_[offset_ + i])) << (8 * i);
  }
  offset_ += 4;
  return v;
}

std::optional<uint64_t> Reader::Fixed64() {
  if (remaining() < 8) return std::nullopt;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes_[offset_ + i])) << (8 * i);
  }
  offset_ += 8;
  return v;
}

std::optional<std::string_view> Reader::Bytes(size_t n) {
  if (remaining() < n) return std::nullopt;
  std::string_view out = bytes_.substr(offset_, n);
  offset_ += n;
  return out;
}

namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

}  // namespace

uint32_t Crc32(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (char ch : bytes) c = kCrcTable[(c ^ static_cast<uint8_t>(ch)) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

}  // namespace tailguard::encoding
