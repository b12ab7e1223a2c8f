// Varints, zigzag and CRC-32.
#include "common/encoding.h"

#include <gtest/gtest.h>

namespace tailguard::encoding {
namespace {

TEST(EncodingTest, VarintRoundTripsEdgeValues) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300},
                     uint64_t{1} << 35, UINT64_MAX}) {
    std::string s;
    PutVarint(s, v);
    Reader r(s);
    ASSERT_EQ(r.Varint(), v);
    EXPECT_EQ(r.remaining(), 0u);
  }
}

TEST(EncodingTest, VarintRejectsTruncatedAndOverlongInput) {
  Reader truncated(std::string_view("\x80\x80", 2));
  EXPECT_FALSE(truncated.Varint().has_value());
  EXPECT_EQ(truncated.offset(), 0u);
  const std::string overlong(11, '\x80');
  Reader r(overlong);
  EXPECT_FALSE(r.Varint().has_value());
  // Ten bytes whose last one carries more than the 64th bit.
  const std::string too_big = std::string(9, '\xff') + "\x02";
  Reader r2(too_big);
  EXPECT_FALSE(r2.Varint().has_value());
}

// Regression: the fuzzer found "\x82\x00" (2, padded) accepted, so a parsed histogram did not
// serialize back to its bytes. Every value has exactly one encoding now.
TEST(EncodingTest, VarintRejectsPaddedEncodings) {
  Reader padded(std::string_view("\x82\x00", 2));
  EXPECT_FALSE(padded.Varint().has_value());
  Reader zero(std::string_view("\x80\x00", 2));
  EXPECT_FALSE(zero.Varint().has_value());
  Reader plain_zero(std::string_view("\x00", 1));
  EXPECT_EQ(plain_zero.Varint(), 0u);
}

TEST(EncodingTest, ZigZagMapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZag(-2), 3u);
  for (int64_t v : {int64_t{0}, int64_t{-5}, int64_t{77}, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
}

TEST(EncodingTest, Crc32MatchesZlib) {
  // zlib.crc32(b"123456789") == 0xCBF43926, the standard check value.
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32(""), 0u);
}

TEST(EncodingTest, FixedWidthIsLittleEndian) {
  std::string s;
  PutFixed32(s, 0x01020304u);
  PutFixed64(s, 0x1122334455667788ull);
  EXPECT_EQ(static_cast<uint8_t>(s[0]), 0x04);
  Reader r(s);
  EXPECT_EQ(r.Fixed32(), 0x01020304u);
  EXPECT_EQ(r.Fixed64(), 0x1122334455667788ull);
  EXPECT_FALSE(r.Fixed32().has_value());
}

}  // namespace
}  // namespace tailguard::encoding
