#include "model/kserve_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tailguard::model {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ErrorOf(std::string_view body) {
  absl::StatusOr<InferRequest> r = ParseInferRequest(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(ParseInferRequestTest, ReadsFlatAndNestedData) {
  absl::StatusOr<InferRequest> r = ParseInferRequest(R"({"id":"a7","inputs":[
      {"name":"x","shape":[2,3],"datatype":"FP32","data":[[1,2,3],[4,5,6.5]]},
      {"name":"ids","shape":[2],"datatype":"INT64","data":[7,-9]},
      {"name":"user","shape":[1],"datatype":"BYTES","data":["u1"]},
      {"name":"m","shape":[2],"datatype":"BOOL","data":[true,false]}],
      "outputs":[{"name":"y"}],"parameters":{"k":1}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->id, "a7");
  ASSERT_EQ(r->inputs.size(), 4u);
  EXPECT_EQ(r->inputs[0].name, "x");
  EXPECT_THAT(r->inputs[0].shape, ElementsAre(2, 3));
  EXPECT_THAT(r->inputs[0].floats, ElementsAre(1, 2, 3, 4, 5, 6.5));
  EXPECT_EQ(r->inputs[0].RowSize(), 3u);
  EXPECT_EQ(r->inputs[1].type, DataType::kInt64);
  EXPECT_THAT(r->inputs[1].ints, ElementsAre(7, -9));
  EXPECT_THAT(r->inputs[2].strings, ElementsAre("u1"));
  EXPECT_THAT(r->inputs[3].ints, ElementsAre(1, 0));
}

TEST(ParseInferRequestTest, ExplainsBadRequests) {
  EXPECT_THAT(ErrorOf("{"), HasSubstr("not valid JSON"));
  EXPECT_THAT(ErrorOf("[]"), HasSubstr("must be an object"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[]})"), HasSubstr("inputs: required"));
  EXPECT_THAT(ErrorOf(R"({"id":1,"inputs":[]})"), HasSubstr("id: must be a string"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"shape":[1],"datatype":"FP32","data":[1]}]})"),
              HasSubstr("inputs[0].name: required"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP16","data":[1]}]})"),
              HasSubstr("inputs[0].datatype: \"FP16\" is not served"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32","data":[1]}]})"),
              HasSubstr("inputs[0].data: expected 6 values for shape [2, 3], got 1"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1,2]}]})"),
              HasSubstr("more values than the shape [1] holds"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[-1],"datatype":"FP32","data":[]}]})"),
              HasSubstr("inputs[0].shape[0]: must be a whole number"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT32","data":[1.5]}]})"),
              HasSubstr("inputs[0].data[0]: INT32 data must be whole numbers"));
  EXPECT_THAT(
      ErrorOf(R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT32","data":[4294967296]}]})"),
      HasSubstr("from -2147483648 to 2147483647"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[1],"datatype":"BYTES","data":[1]}]})"),
              HasSubstr("BYTES data must be strings"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},
                                     {"name":"x","shape":[1],"datatype":"FP32","data":[1]}]})"),
              HasSubstr("inputs[1].name: \"x\" is already the name of another input"));
  EXPECT_THAT(
      ErrorOf(R"({"inputs":[{"name":"x","shape":[65536,65536],"datatype":"FP32","data":[]}]})"),
      HasSubstr("is more than the 16777216 values a request may carry"));
  EXPECT_THAT(ErrorOf(R"({"inputs":[{"name":"x","shape":[1,1,1,1,1,1,1,1,1],"datatype":"FP32",
                                     "data":[1]}]})"),
              HasSubstr("9 dimensions; at most 8"));
}

TEST(EncodeInferResponseTest, WritesTheProtocolsFields) {
  HostTensor y;
  y.name = "output0";
  y.shape = {2, 1};
  y.type = DataType::kFp32;
  y.floats = {0.25, std::nan("")};
  HostTensor flags;
  flags.name = "output1";
  flags.shape = {2};
  flags.type = DataType::kBool;
  flags.ints = {1, 0};
  const nlohmann::json doc =
      nlohmann::json::parse(EncodeInferResponse("risk", "2", "req-1", {y, flags}));
  EXPECT_EQ(doc["model_name"], "risk");
  EXPECT_EQ(doc["model_version"], "2");
  EXPECT_EQ(doc["id"], "req-1");
  EXPECT_EQ(doc["outputs"][0]["name"], "output0");
  EXPECT_EQ(doc["outputs"][0]["shape"], nlohmann::json::parse("[2,1]"));
  EXPECT_EQ(doc["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(doc["outputs"][0]["data"][0], 0.25);
  EXPECT_TRUE(doc["outputs"][0]["data"][1].is_null());
  EXPECT_EQ(doc["outputs"][1]["data"], nlohmann::json::parse("[true,false]"));
  EXPECT_FALSE(nlohmann::json::parse(EncodeInferResponse("m", "1", "", {})).contains("id"));
}

TEST(DataTypeTest, NamesRoundTrip) {
  for (DataType t : {DataType::kBool, DataType::kInt32, DataType::kInt64, DataType::kFp32,
                     DataType::kFp64, DataType::kBytes}) {
    EXPECT_EQ(ParseDataType(DataTypeName(t)), t);
  }
  EXPECT_EQ(ParseDataType("fp32"), std::nullopt);
}

}  // namespace
}  // namespace tailguard::model
