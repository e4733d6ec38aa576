/* The floor row of bench/mcp: the least a stdio MCP server can do per call. It reads a line,
 * finds the request's id and the echo message by plain string search (no JSON parser, no
 * threads), and writes one answer line, flushed. toolhost's stdio latency is compared with
 * this: what is left above it is the host's own cost. Notifications (no "id") get nothing. */
#include <stdio.h>
#include <string.h>

int main(void) {
  char* line = NULL;
  size_t capacity = 0;
  ssize_t length;
  while ((length = getline(&line, &capacity, stdin)) > 0) {
    const char* id = strstr(line, "\"id\":");
    if (id == NULL) continue;
    id += 5;
    const size_t id_length = strcspn(id, ",}");
    const char* message = strstr(line, "\"message\":\"");
    size_t message_length = 0;
    if (message != NULL) {
      message += 11;
      message_length = strcspn(message, "\"");
    }
    printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Echo: %.*s\"}]}}\n",
           (int)id_length, id, (int)message_length, message != NULL ? message : "");
    fflush(stdout);
  }
  return 0;
}
