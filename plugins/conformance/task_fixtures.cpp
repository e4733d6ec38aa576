#include "task_fixtures.hpp"

#include <chrono>
#include <string>
#include <thread>

namespace conformance {
namespace {

namespace sdk = toolhost::sdk;
using sdk::quote;

// Sleeps `ms`, or less when the call is cancelled.
void pause(sdk::call& call, int64_t ms) {
  for (int64_t waited = 0; waited < ms && !call.cancelled(); waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The content member `field` of an accepted elicitation, or "".
std::string accepted(const absl::StatusOr<sdk::elicit_answer>& answer, const char* field) {
  if (!answer.ok() || answer->action != "accept") return "";
  auto doc = sdk::parse_json(answer->content);
  if (!doc || !doc->IsObject()) return "";
  const rapidjson::Value* v = sdk::member(*doc, field);
  if (v == nullptr) return "";
  return v->IsString() ? std::string(v->GetString()) : sdk::to_json(*v);
}

constexpr const char* kConfirmSchema =
    R"({"type":"object","properties":{"confirm":{"type":"boolean"},"name":{"type":"string"}},"required":["confirm"]})";

}  // namespace

absl::Status register_task_tools(sdk::plugin& p, const char* kind) {
  absl::Status s = p.tool("greet")
                       .description("Says hello to `name` at once (never a task).")
                       .input_schema(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})")
                       .permission(kind)
                       .concurrent()
                       .handler([](const sdk::args& a, sdk::call&) {
                         return sdk::result::text("Hello, " + a.string("name") + "!");
                       });
  if (s.ok()) {
    s = p.tool("slow_compute")
            .description("Works for `seconds` seconds (progress every 100 ms), then answers; may run as a task.")
            .input_schema(
                R"({"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":600},"label":{"type":"string"}},"required":["seconds"]})")
            .permission(kind)
            .concurrent()
            .tasks()
            .handler([](const sdk::args& a, sdk::call& call) {
              const int64_t total = static_cast<int64_t>(a.number("seconds") * 1000);
              for (int64_t done = 0; done < total && !call.cancelled(); done += 100) {
                call.progress(static_cast<double>(done), static_cast<double>(total), "computing");
                pause(call, std::min<int64_t>(100, total - done));
              }
              if (call.cancelled()) return sdk::result::error("cancelled");
              call.progress(static_cast<double>(total), static_cast<double>(total), "done");
              return sdk::result::text("Computed " + a.string("label", "it") + " in " + std::to_string(total) + " ms");
            });
  }
  if (s.ok()) {
    s = p.tool("failing_job")
            .description("Runs only as a task; fails with a tool error after about a second.")
            .input_schema(R"({"type":"object","properties":{}})")
            .permission(kind)
            .concurrent()
            .tasks(true)
            .handler([](const sdk::args&, sdk::call& call) {
              pause(call, 1000);
              return sdk::result::error("The job failed on purpose (a tool error, not a protocol error).");
            });
  }
  if (s.ok()) {
    // A protocol error: after a second it needs the client's roots, which the suite's client does
    // not declare (-32021).
    s = p.tool("protocol_error_job")
            .description("May run as a task; after about a second needs the client's roots and fails without them.")
            .input_schema(R"({"type":"object","properties":{}})")
            .permission(kind)
            .concurrent()
            .tasks()
            .handler([](const sdk::args&, sdk::call& call) {
              pause(call, 1000);
              auto roots = call.request("roots/list", "{}");
              if (!roots.ok()) return sdk::result::error("roots/list failed: " + std::string(roots.status().message()));
              return sdk::result::text("The client has roots after all.");
            });
  }
  if (s.ok()) {
    s = p.tool("confirm_delete")
            .description("May run as a task; after preparing for a second and a half, asks the user to confirm.")
            .input_schema(R"({"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]})")
            .permission(kind)
            .concurrent()
            .tasks()
            .handler([](const sdk::args& a, sdk::call& call) {
              pause(call, 1500);
              auto answer = call.elicit("Delete " + a.string("filename") + "?", kConfirmSchema);
              if (!answer.ok()) return sdk::result::error("Not deleted: " + std::string(answer.status().message()));
              const bool yes = accepted(answer, "confirm") == "true";
              return sdk::result::text((yes ? "Deleted " : "Kept ") + a.string("filename") + ".");
            });
  }
  if (s.ok()) {
    s = p.tool("multi_input")
            .description("May run as a task; asks the user two questions at the same time.")
            .input_schema(R"({"type":"object","properties":{}})")
            .permission(kind)
            .concurrent()
            .tasks()
            .handler([](const sdk::args&, sdk::call& call) {
              pause(call, 1500);
              std::string first, second;
              std::thread other([&] { second = accepted(call.elicit("Second name?", kConfirmSchema), "name"); });
              first = accepted(call.elicit("First name?", kConfirmSchema), "name");
              other.join();
              if (first.empty() || second.empty()) return sdk::result::error("Not both questions were answered.");
              return sdk::result::text("Got " + first + " and " + second + ".");
            });
  }
  if (s.ok()) {
    // Asks before it becomes a task (an input-required round), then works long enough to be one.
    s = p.tool("test_tool_with_task")
            .description("Runs only as a task; asks the user's name first, then greets after a second and a half.")
            .input_schema(R"({"type":"object","properties":{}})")
            .permission(kind)
            .concurrent()
            .tasks(true)
            .handler([](const sdk::args&, sdk::call& call) {
              auto answer = call.request(
                  "elicitation/create",
                  R"({"mode":"form","message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},"_meta":{"io.toolhost/inputKey":"user_name"}})");
              if (!answer.ok()) return sdk::result::error("No name: " + std::string(answer.status().message()));
              auto doc = sdk::parse_json(*answer);
              std::string name;
              if (doc && doc->IsObject()) {
                if (const rapidjson::Value* content = sdk::member(*doc, "content"))
                  name = std::string(sdk::string_member(*content, "name").value_or(""));
              }
              pause(call, 1500);
              return sdk::result::text("Hello, " + name + "!");
            });
  }
  return s;
}

}  // namespace conformance
