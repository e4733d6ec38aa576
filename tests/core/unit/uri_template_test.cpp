#include <catch2/catch.hpp>

#include "host/mcp/uri_template.hpp"

using toolhost::mcp::uri_template_matches;

TEST_CASE("level-1 URI templates match one path segment per variable", "[uri]") {
  CHECK(uri_template_matches("test://template/{id}/data", "test://template/42/data"));
  CHECK(uri_template_matches("file:///{name}", "file:///x.txt"));
  CHECK_FALSE(uri_template_matches("test://template/{id}/data", "test://template//data"));
  CHECK_FALSE(uri_template_matches("test://template/{id}/data", "test://template/4/2/data"));
  CHECK_FALSE(uri_template_matches("test://template/{id}/data", "test://template/42/datax"));
  CHECK_FALSE(uri_template_matches("test://a", "test://b"));
}
