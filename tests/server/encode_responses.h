// EncodeResponses built by hand for the gateway's pure-mapping tests
// (scoring, classification): one result per given vector, in order.
#ifndef ATTNSERVE_TESTS_SERVER_ENCODE_RESPONSES_H_
#define ATTNSERVE_TESTS_SERVER_ENCODE_RESPONSES_H_

#include <cstdint>
#include <vector>

#include "attnserve/v1/inference.pb.h"

namespace attnserve::testing_util {

// Results with these embeddings.
inline v1::EncodeResponse Embeddings(const std::vector<std::vector<float>>& vectors) {
  v1::EncodeResponse response;
  for (const std::vector<float>& v : vectors) {
    v1::Tensor* t = response.add_results()->mutable_embedding();
    t->add_shape(static_cast<int64_t>(v.size()));
    for (float x : v) t->add_values(x);
  }
  return response;
}

// Results carrying these logits (a cross-encoder's or classifier's).
inline v1::EncodeResponse Logits(const std::vector<std::vector<float>>& logits) {
  v1::EncodeResponse response;
  for (const std::vector<float>& l : logits) {
    v1::EncodeResult* r = response.add_results();
    for (float x : l) r->add_logits(x);
  }
  return response;
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_SERVER_ENCODE_RESPONSES_H_
