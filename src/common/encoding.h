// Byte encodings shared by the binary formats: LEB128 varints, zigzag, little-endian fixed
// width, and CRC-32 (IEEE 802.3, the zlib polynomial).
#ifndef TAILGUARD_COMMON_ENCODING_H_
#define TAILGUARD_COMMON_ENCODING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tailguard::encoding {

void PutVarint(std::string& out, uint64_t v);
void PutFixed32(std::string& out, uint32_t v);
void PutFixed64(std::string& out, uint64_t v);

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Reads from a byte string front to back, remembering the offset for error messages.
// Not thread-safe.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  // Each returns nullopt, consuming nothing, when the input is too short or malformed (a varint
  // longer than 10 bytes, above 2^64, or padded with a trailing zero byte).
  std::optional<uint64_t> Varint();
  std::optional<uint32_t> Fixed32();
  std::optional<uint64_t> Fixed64();
  std::optional<std::string_view> Bytes(size_t n);

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

 private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

// CRC-32 of `bytes`, as zlib's crc32(0, bytes, n).
uint32_t Crc32(std::string_view bytes);

}  // namespace tailguard::encoding

#endif  // TAILGUARD_COMMON_ENCODING_H_
