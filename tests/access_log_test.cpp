// The access log's line (server/access_log.h) without a server: its fields, quoting, the probes
// left out, and what of a client's X-Request-Id is kept.
#include <gtest/gtest.h>

#include <string>

#include "server/access_log.h"

namespace verbatim::server {
namespace {

TEST(AccessLog, LineNamesRequestStatusTimeAndGeneration) {
  AccessRecord r;
  r.client = "127.0.0.1:5000";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.ms = 12.345;
  GenerationNote g;
  g.id = "chatcmpl-1";
  g.prompt_tokens = 20;
  g.cached_tokens = 16;
  g.completion_tokens = 7;
  g.finish = "stop+length";
  g.stream = true;
  r.generation = g;
  r.request_id = "abc";
  EXPECT_EQ(access_line(r),
            "127.0.0.1:5000 \"POST /v1/chat/completions\" 200 12.3 ms chatcmpl-1 stream prompt 20 (cached 16) "
            "completion 7 finish stop+length x-request-id abc");
  r.generation->client_gone = true;
  r.generation->stream = false;
  r.generation->cached_tokens = 0;
  EXPECT_EQ(access_line(r),
            "127.0.0.1:5000 \"POST /v1/chat/completions\" 200 12.3 ms chatcmpl-1 prompt 20 completion 7 finish "
            "stop+length client gone x-request-id abc");
}

TEST(AccessLog, ErrorsAndOddBytesAreQuotedOnOneLine) {
  AccessRecord r;
  r.client = "[::1]:7";
  r.method = "GET";
  r.path = "/nowhere\n\"x\"";
  r.status = 404;
  r.error = std::string(300, 'e') + "\n";
  const std::string line = access_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_NE(line.find("\"GET /nowhere\\x0A\\\"x\\\"\" 404 - ms error \""), std::string::npos) << line;
  EXPECT_NE(line.find(std::string(200, 'e') + "...\""), std::string::npos) << "an error is cut at 200 bytes";
}

TEST(AccessLog, ProbesAndRequestIds) {
  EXPECT_TRUE(is_probe("GET", "/health", 200));
  EXPECT_TRUE(is_probe("HEAD", "/metrics", 200));
  EXPECT_FALSE(is_probe("GET", "/health", 503)) << "a failing probe is logged";
  EXPECT_FALSE(is_probe("POST", "/health", 405));
  EXPECT_FALSE(is_probe("GET", "/version", 200));
  EXPECT_EQ(sanitize_request_id("run-1/q 2\x01\xff"), "run-1/q2");
  EXPECT_EQ(sanitize_request_id(std::string(500, 'a')).size(), 128u);
  EXPECT_EQ(sanitize_request_id(""), "");
}

TEST(AccessLog, TakeClearsThisThreadsState) {
  access_begin();
  GenerationNote g;
  g.id = "cmpl-9";
  access_note(g);
  AccessTaken t = access_take();
  ASSERT_TRUE(t.ms.has_value());
  EXPECT_GE(*t.ms, 0.0);
  ASSERT_TRUE(t.generation.has_value());
  EXPECT_EQ(t.generation->id, "cmpl-9");
  AccessTaken again = access_take();  // nothing begun since: no time, no note
  EXPECT_FALSE(again.ms.has_value());
  EXPECT_FALSE(again.generation.has_value());
}

}  // namespace
}  // namespace verbatim::server
