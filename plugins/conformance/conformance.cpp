// The `conformance` plugin: the fixtures the official MCP conformance suite
// (@modelcontextprotocol/conformance) calls by name — test_* tools, test:// resources and a
// template, test_* prompts with completion, logging, progress, sampling and elicitation — so
// that the suite can check toolhost's whole MCP surface. Built for tests; the default config
// does not serve it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <toolhost/sdk/sdk.hpp>

#include "media.hpp"

namespace {

namespace sdk = toolhost::sdk;
using sdk::quote;

constexpr const char* kKind = "conformance.fixtures";
constexpr const char* kNoArgs = R"({"type":"object","properties":{},"additionalProperties":false})";

// Sleeps `ms`, or less when the call is cancelled.
void pause(sdk::call& call, int ms) {
  for (int waited = 0; waited < ms && !call.cancelled(); waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string text_block(std::string_view text) { return std::string(R"({"type":"text","text":)") + quote(text) + "}"; }

std::string prompt_message(std::string_view content_json) {
  return std::string(R"({"role":"user","content":)") + std::string(content_json) + "}";
}

// Three info log messages about 50 ms apart (the logging fixtures of both eras).
sdk::result three_logs(const sdk::args&, sdk::call& call) {
  call.log(sdk::log_level::info, "Tool execution started");
  pause(call, 50);
  call.log(sdk::log_level::info, "Tool processing data");
  pause(call, 50);
  call.log(sdk::log_level::info, "Tool execution completed");
  return sdk::result::text("Logging test completed: sent 3 log messages.");
}

// A question the 2026-07-28 input-required scenarios expect under a key of their choosing: the
// key goes in the params' _meta, where toolhost takes it out (in 2025-11-25 the question is an
// ordinary request to the client and the key is not needed). The answer's JSON, or nothing
// while it has none.
std::optional<rapidjson::Document> ask(sdk::call& call, std::string_view key, std::string_view method,
                                       std::string params) {
  params.pop_back();  // the closing brace
  params += std::string(params.size() > 1 ? "," : "") + R"("_meta":{"io.toolhost/inputKey":)" + quote(key) + "}}";
  auto answer = call.request(method, params);
  if (!answer.ok()) return std::nullopt;
  return sdk::parse_json(*answer);
}

std::string content_field(const std::optional<rapidjson::Document>& answer, const char* field) {
  if (!answer || !answer->IsObject()) return "";
  const rapidjson::Value* content = sdk::member(*answer, "content");
  if (content == nullptr || !content->IsObject()) return "";
  if (const rapidjson::Value* v = sdk::member(*content, field))
    return v->IsString() ? v->GetString() : sdk::to_json(*v);
  return "";
}

std::string roots_text(const std::optional<rapidjson::Document>& answer) {
  std::string text;
  const rapidjson::Value* roots = answer && answer->IsObject() ? sdk::member(*answer, "roots") : nullptr;
  if (roots == nullptr || !roots->IsArray()) return text;
  for (const auto& r : roots->GetArray()) {
    if (auto uri = sdk::string_member(r, "uri")) text += (text.empty() ? "" : ", ") + std::string(*uri);
  }
  return text;
}

constexpr const char* kNameQuestion =
    R"({"message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}})";

absl::Status register_input_required_tools(sdk::plugin& p) {
  auto tool = [&p](const char* name, const char* description) {
    return std::move(p.tool(name).description(description).input_schema(kNoArgs).permission(kKind).concurrent());
  };
  const auto unanswered = [] { return sdk::result::error("The client has not answered the question yet."); };
  absl::Status s = tool("test_input_required_result_elicitation", "Asks the user's name, then greets them.")
                       .handler([unanswered](const sdk::args&, sdk::call& call) {
                         auto answer = ask(call, "user_name", "elicitation/create", kNameQuestion);
                         if (!answer) return unanswered();
                         return sdk::result::text("Hello, " + content_field(answer, "name") + "!");
                       });
  if (s.ok()) {
    s = tool("test_input_required_result_sampling", "Asks the client's model for the capital of France.")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto answer = ask(
                  call, "capital_question", "sampling/createMessage",
                  R"({"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}],"maxTokens":100})");
              if (!answer) return unanswered();
              return sdk::result::text("The model answered: " + content_field(answer, "text"));
            });
  }
  if (s.ok()) {
    s = tool("test_input_required_result_list_roots", "Asks the client for its roots and lists them.")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto answer = ask(call, "client_roots", "roots/list", "{}");
              if (!answer) return unanswered();
              return sdk::result::text("The client's roots: " + roots_text(answer));
            });
  }
  if (s.ok()) {
    // toolhost reads answers only with the requestState it sealed: an answer here is one whose
    // state was checked.
    s = tool("test_input_required_result_request_state", "Asks for a confirmation; the answer comes with the state.")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto answer = ask(
                  call, "confirm", "elicitation/create",
                  R"({"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}})");
              if (!answer) return unanswered();
              return sdk::result::text("state-ok: confirmed " + content_field(answer, "ok"));
            });
  }
  if (s.ok()) {
    s = tool("test_input_required_result_multiple_inputs", "Asks a name, a greeting and the roots at once.")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto name = ask(call, "user_name", "elicitation/create", kNameQuestion);
              auto greeting = ask(
                  call, "greeting", "sampling/createMessage",
                  R"({"messages":[{"role":"user","content":{"type":"text","text":"Generate a greeting"}}],"maxTokens":50})");
              auto roots = ask(call, "client_roots", "roots/list", "{}");
              if (!name || !greeting || !roots) return unanswered();
              return sdk::result::text(content_field(greeting, "text") + " " + content_field(name, "name") +
                                       " (roots: " + roots_text(roots) + ")");
            });
  }
  if (s.ok()) {
    s = tool("test_input_required_result_multi_round", "Asks a name, then a favourite colour.")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto name = ask(
                  call, "step1", "elicitation/create",
                  R"({"message":"Step 1: What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}})");
              if (!name) return unanswered();
              auto color = ask(
                  call, "step2", "elicitation/create",
                  R"({"message":"Step 2: What is your favorite color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}})");
              if (!color) return unanswered();
              return sdk::result::text(content_field(name, "name") + " likes " + content_field(color, "color"));
            });
  }
  if (s.ok()) {
    // Asks only what the client's capabilities allow: the user (elicitation), the model (sampling).
    s = tool("test_input_required_result_capabilities", "Asks the user and the model what the client can ask them.")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto caps = sdk::parse_json(call.raw()->client_capabilities_json);
              const auto declared = [&](const char* c) {
                return caps && caps->IsObject() && sdk::member(*caps, c) != nullptr;
              };
              std::optional<rapidjson::Document> name, greeting;
              if (declared("elicitation")) name = ask(call, "user_name", "elicitation/create", kNameQuestion);
              if (declared("sampling")) {
                greeting = ask(
                    call, "greeting", "sampling/createMessage",
                    R"({"messages":[{"role":"user","content":{"type":"text","text":"Generate a greeting"}}],"maxTokens":50})");
              }
              if ((declared("elicitation") && !name) || (declared("sampling") && !greeting)) return unanswered();
              return sdk::result::text("Asked what the client can ask.");
            });
  }
  if (s.ok()) {
    s = tool("test_input_required_result_tampered_state", "Asks for a confirmation (its state must come back intact).")
            .handler([unanswered](const sdk::args&, sdk::call& call) {
              auto answer = ask(
                  call, "confirm", "elicitation/create",
                  R"({"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}})");
              if (!answer) return unanswered();
              return sdk::result::text("Confirmed.");
            });
  }
  return s;
}

absl::Status register_tools(sdk::plugin& p) {
  auto tool = [&p](const char* name, const char* description) {
    return std::move(p.tool(name).description(description).input_schema(kNoArgs).permission(kKind).concurrent());
  };
  absl::Status s = tool("test_simple_text", "Returns a fixed text.").handler([](const sdk::args&, sdk::call&) {
    return sdk::result::text("This is a simple text response for testing.");
  });
  if (s.ok()) {
    s = tool("test_image_content", "Returns a 1x1 PNG image.").handler([](const sdk::args&, sdk::call&) {
      return sdk::result().add_image(conformance::red_pixel_png(), "image/png");
    });
  }
  if (s.ok()) {
    s = tool("test_audio_content", "Returns a short WAV tone.").handler([](const sdk::args&, sdk::call&) {
      return sdk::result().add_audio(conformance::tone_wav(), "audio/wav");
    });
  }
  if (s.ok()) {
    s = tool("test_embedded_resource", "Returns an embedded text resource.").handler([](const sdk::args&, sdk::call&) {
      return sdk::result().add_content(
          R"({"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}})");
    });
  }
  if (s.ok()) {
    s = tool("test_multiple_content_types", "Returns text, an image and an embedded resource.")
            .handler([](const sdk::args&, sdk::call&) {
              return sdk::result()
                  .add_text("Multiple content types test:")
                  .add_image(conformance::red_pixel_png(), "image/png")
                  .add_content(std::string(R"({"type":"resource","resource":{"uri":"test://mixed-content-resource",)") +
                               R"("mimeType":"application/json","text":)" + quote(R"({"test":"data","value":123})") +
                               "}}");
            });
  }
  if (s.ok()) {
    s = tool("test_tool_with_logging", "Sends three info log messages about 50 ms apart.").handler(three_logs);
  }
  if (s.ok()) {
    // 2026-07-28's name for the same fixture; its log messages reach only a request that asked
    // for them with _meta's logLevel.
    s = tool("test_logging_tool", "Sends three info log messages about 50 ms apart.").handler(three_logs);
  }
  if (s.ok()) {
    s = tool("test_missing_capability", "Needs the client's sampling capability: asks the client's model a question.")
            .handler([](const sdk::args&, sdk::call& call) {
              auto answer = call.request(
                  "sampling/createMessage",
                  R"({"messages":[{"role":"user","content":{"type":"text","text":"Say hello"}}],"maxTokens":10})");
              if (!answer.ok()) return sdk::result::error("Sampling failed: " + std::string(answer.status().message()));
              return sdk::result::text("The client's model answered.");
            });
  }
  if (s.ok()) {
    s = tool("test_streaming_elicitation", "Reports progress, then asks the user to confirm (elicitation/create).")
            .handler([](const sdk::args&, sdk::call& call) {
              call.progress(0, 1);
              auto answer = call.elicit(
                  "Continue?", R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})");
              if (!answer.ok())
                return sdk::result::error("Elicitation failed: " + std::string(answer.status().message()));
              return sdk::result::text("Elicitation completed: action=" + answer->action);
            });
  }
  if (s.ok()) {
    s = tool("test_trigger_tool_change", "Announces that the tool list changed (notifications/tools/list_changed).")
            .handler([&p](const sdk::args&, sdk::call&) {
              p.notify_list_changed(TOOLHOST_LIST_TOOLS);
              return sdk::result::text("Announced a tool list change.");
            });
  }
  if (s.ok()) {
    s = tool("test_trigger_prompt_change",
             "Announces that the prompt list changed (notifications/prompts/list_changed).")
            .handler([&p](const sdk::args&, sdk::call&) {
              p.notify_list_changed(TOOLHOST_LIST_PROMPTS);
              return sdk::result::text("Announced a prompt list change.");
            });
  }
  if (s.ok()) {
    // 2026-07-28 over HTTP: region and priority are mirrored into Mcp-Param-Region and
    // Mcp-Param-Priority, which the host checks against the arguments before the call runs.
    s = p.tool("test_custom_headers")
            .description("Echoes a query with the region and priority a client also sends as Mcp-Param-* headers.")
            .input_schema(
                R"({"type":"object","properties":{)"
                R"("region":{"type":"string","description":"Where to run the query","x-mcp-header":"Region"},)"
                R"("priority":{"type":"integer","description":"How urgent it is","x-mcp-header":"Priority"},)"
                R"("query":{"type":"string","description":"The query, which is not mirrored"}},)"
                R"("required":["region","priority","query"]})")
            .permission(kKind)
            .concurrent()
            .handler([](const sdk::args& a, sdk::call&) {
              return sdk::result::text("Region " + a.string("region") + ", priority " +
                                       std::to_string(a.integer("priority")) + ": " + a.string("query"));
            });
  }
  if (s.ok()) {
    s = tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100, about 50 ms apart.")
            .handler([](const sdk::args&, sdk::call& call) {
              call.progress(0, 100);
              pause(call, 50);
              call.progress(50, 100);
              pause(call, 50);
              call.progress(100, 100);
              return sdk::result::text("Progress test completed.");
            });
  }
  if (s.ok()) {
    s = tool("test_error_handling", "Always fails with a tool error.").handler([](const sdk::args&, sdk::call&) {
      return sdk::result::error("This tool intentionally returns an error for testing");
    });
  }
  if (s.ok()) {
    s = p.tool("test_sampling")
            .description("Asks the client's model (sampling/createMessage) to answer `prompt`.")
            .input_schema(
                R"({"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]})")
            .permission(kKind)
            .concurrent()
            .handler([](const sdk::args& a, sdk::call& call) {
              const std::string params =
                  std::string(R"({"messages":[{"role":"user","content":{"type":"text","text":)") +
                  quote(a.string("prompt")) + R"(}}],"maxTokens":100})";
              auto answer = call.request("sampling/createMessage", params);
              if (!answer.ok()) return sdk::result::error("Sampling failed: " + std::string(answer.status().message()));
              auto doc = sdk::parse_json(*answer);
              std::string text;
              if (doc) {
                const rapidjson::Value* content = sdk::member(*doc, "content");
                if (content != nullptr) text = std::string(sdk::string_member(*content, "text").value_or(""));
              }
              return sdk::result::text("LLM response: " + text);
            });
  }
  if (s.ok()) {
    s = p.tool("test_elicitation")
            .description("Asks the user (elicitation/create) for a username and an email address.")
            .input_schema(
                R"({"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]})")
            .permission(kKind)
            .concurrent()
            .handler([](const sdk::args& a, sdk::call& call) {
              auto answer = call.elicit(
                  a.string("message"),
                  R"({"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]})");
              if (!answer.ok())
                return sdk::result::error("Elicitation failed: " + std::string(answer.status().message()));
              return sdk::result::text("User response: action=" + answer->action + ", content=" + answer->content);
            });
  }
  if (s.ok()) {
    s = tool("test_elicitation_sep1034_defaults",
             "Asks the user with a form whose fields all have defaults (SEP-1034).")
            .handler([](const sdk::args&, sdk::call& call) {
              auto answer = call.elicit(
                  "Please review and update the form fields with defaults",
                  R"({"type":"object","properties":{)"
                  R"("name":{"type":"string","description":"User name","default":"John Doe"},)"
                  R"("age":{"type":"integer","description":"User age","default":30},)"
                  R"("score":{"type":"number","description":"User score","default":95.5},)"
                  R"("status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},)"
                  R"("verified":{"type":"boolean","description":"Verification status","default":true}}})");
              if (!answer.ok())
                return sdk::result::error("Elicitation failed: " + std::string(answer.status().message()));
              return sdk::result::text("Elicitation completed: action=" + answer->action +
                                       ", content=" + answer->content);
            });
  }
  if (s.ok()) {
    s = tool("test_elicitation_sep1330_enums", "Asks the user with every kind of enum field (SEP-1330).")
            .handler([](const sdk::args&, sdk::call& call) {
              auto answer = call.elicit(
                  "Please select options from the enum fields",
                  R"({"type":"object","properties":{)"
                  R"("untitledSingle":{"type":"string","description":"Untitled single-select","enum":["option1","option2","option3"]},)"
                  R"("titledSingle":{"type":"string","description":"Titled single-select","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},)"
                  R"("legacyEnum":{"type":"string","description":"Legacy titled enum","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},)"
                  R"("untitledMulti":{"type":"array","description":"Untitled multi-select","items":{"type":"string","enum":["option1","option2","option3"]}},)"
                  R"("titledMulti":{"type":"array","description":"Titled multi-select","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}})");
              if (!answer.ok())
                return sdk::result::error("Elicitation failed: " + std::string(answer.status().message()));
              return sdk::result::text("Elicitation completed: action=" + answer->action +
                                       ", content=" + answer->content);
            });
  }
  if (s.ok()) {
    s = p.tool("json_schema_2020_12_tool")
            .description("Tool with JSON Schema 2020-12 features")
            .input_schema(
                R"({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",)"
                R"("$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},)"
                R"("properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},)"
                R"("contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},)"
                R"("allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],)"
                R"("if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},)"
                R"("then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false})")
            .permission(kKind)
            .concurrent()
            .handler([](const sdk::args& a, sdk::call&) {
              return sdk::result::text("Received: " + sdk::to_json(a.json()));
            });
  }
  return s;
}

// test://watched-resource changes every 3 seconds while the plugin runs.
class watched_resource {
 public:
  explicit watched_resource(const sdk::plugin& p) : plugin_(p) {}
  ~watched_resource() { stop(); }

  void start() {
    thread_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      while (!wake_.wait_for(lock, std::chrono::seconds(3), [this] { return stopping_; })) {
        ++version_;
        lock.unlock();
        plugin_.notify_resource_updated("test://watched-resource");
        lock.lock();
      }
    });
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  int version() {
    std::lock_guard lock(mutex_);
    return version_;
  }

 private:
  const sdk::plugin& plugin_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int version_ = 0;
  std::thread thread_;
};

absl::Status register_resources(sdk::plugin& p, watched_resource& watched) {
  absl::Status s =
      p.resource({.uri = "test://static-text",
                  .name = "static-text",
                  .description = "A static text resource for testing",
                  .mime_type = "text/plain",
                  .read = [](std::string_view uri, sdk::call&) -> absl::StatusOr<std::string> {
                    return sdk::resource_text(uri, "text/plain", "This is the content of the static text resource.");
                  }});
  if (s.ok()) {
    s = p.resource({.uri = "test://static-binary",
                    .name = "static-binary",
                    .description = "A static binary resource (a 1x1 PNG) for testing",
                    .mime_type = "image/png",
                    .read = [](std::string_view uri, sdk::call&) -> absl::StatusOr<std::string> {
                      return sdk::resource_blob(uri, "image/png", conformance::red_pixel_png());
                    }});
  }
  if (s.ok()) {
    s = p.resource({.uri = "test://watched-resource",
                    .name = "watched-resource",
                    .description = "A resource that changes every 3 seconds; subscribe to hear about it",
                    .mime_type = "text/plain",
                    .read = [&watched](std::string_view uri, sdk::call&) -> absl::StatusOr<std::string> {
                      return sdk::resource_text(uri, "text/plain",
                                                "Watched resource, version " + std::to_string(watched.version()));
                    }});
  }
  if (s.ok()) {
    s = p.resource({.uri = "test://template/{id}/data",
                    .is_template = true,
                    .name = "template-data",
                    .description = "Data for any id, from a URI template",
                    .mime_type = "application/json",
                    .read = [](std::string_view uri, sdk::call&) -> absl::StatusOr<std::string> {
                      constexpr std::string_view kPrefix = "test://template/", kSuffix = "/data";
                      if (uri.size() <= kPrefix.size() + kSuffix.size() || uri.substr(0, kPrefix.size()) != kPrefix ||
                          uri.substr(uri.size() - kSuffix.size()) != kSuffix) {
                        return absl::NotFoundError("not a test://template/{id}/data URI");
                      }
                      const std::string id(uri.substr(kPrefix.size(), uri.size() - kPrefix.size() - kSuffix.size()));
                      const std::string json = std::string(R"({"id":)") + quote(id) +
                                               R"(,"templateTest":true,"data":)" + quote("Data for ID: " + id) + "}";
                      return sdk::resource_text(uri, "application/json", json);
                    },
                    .complete =
                        [](std::string_view argument, std::string_view value, const rapidjson::Value&) {
                          std::vector<std::string> out;
                          if (argument != "id") return sdk::completion_values(out);
                          for (const char* id : {"1", "2", "3", "123"}) {
                            if (std::string_view(id).substr(0, value.size()) == value) out.emplace_back(id);
                          }
                          return sdk::completion_values(out);
                        }});
  }
  return s;
}

absl::Status register_prompts(sdk::plugin& p) {
  absl::Status s = p.prompt({.name = "test_simple_prompt",
                             .description = "A simple prompt without arguments",
                             .get = [](const sdk::args&, sdk::call&) -> absl::StatusOr<std::string> {
                               return std::string(R"({"messages":[)") +
                                      prompt_message(text_block("This is a simple prompt for testing.")) + "]}";
                             }});
  if (s.ok()) {
    s = p.prompt({.name = "test_prompt_with_arguments",
                  .description = "A prompt with two required arguments",
                  .arguments_json = R"([{"name":"arg1","description":"First test argument","required":true},)"
                                    R"({"name":"arg2","description":"Second test argument","required":true}])",
                  .get = [](const sdk::args& a, sdk::call&) -> absl::StatusOr<std::string> {
                    const std::string text =
                        "Prompt with arguments: arg1='" + a.string("arg1") + "', arg2='" + a.string("arg2") + "'";
                    return std::string(R"({"messages":[)") + prompt_message(text_block(text)) + "]}";
                  },
                  .complete =
                      [](std::string_view argument, std::string_view value, const rapidjson::Value&) {
                        static const std::vector<std::string> kWords = {"paris", "park",    "party",
                                                                        "test",  "testing", "tester"};
                        std::vector<std::string> out;
                        if (argument == "arg1" || argument == "arg2") {
                          for (const auto& w : kWords) {
                            if (w.compare(0, value.size(), value) == 0) out.push_back(w);
                          }
                        }
                        return sdk::completion_values(out);
                      }});
  }
  if (s.ok()) {
    s = p.prompt(
        {.name = "test_prompt_with_embedded_resource",
         .description = "A prompt that embeds the resource it is given",
         .arguments_json = R"([{"name":"resourceUri","description":"URI of the resource to embed","required":true}])",
         .get = [](const sdk::args& a, sdk::call&) -> absl::StatusOr<std::string> {
           const std::string resource = std::string(R"({"type":"resource","resource":{"uri":)") +
                                        quote(a.string("resourceUri")) +
                                        R"(,"mimeType":"text/plain","text":"Embedded resource content for testing."}})";
           return std::string(R"({"messages":[)") + prompt_message(resource) + "," +
                  prompt_message(text_block("Please process the embedded resource above.")) + "]}";
         }});
  }
  if (s.ok()) {
    // Asks the user before it renders: in 2026-07-28 an input-required result of prompts/get.
    s = p.prompt(
        {.name = "test_input_required_result_prompt",
         .description = "A prompt that first asks the user what context to use",
         .get = [](const sdk::args&, sdk::call& call) -> absl::StatusOr<std::string> {
           auto answer = ask(
               call, "user_context", "elicitation/create",
               R"({"message":"What context should the prompt use?","requestedSchema":{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}})");
           if (!answer) return absl::FailedPreconditionError("the user has not said what context to use");
           return std::string(R"({"messages":[)") +
                  prompt_message(text_block("Use this context: " + content_field(answer, "context"))) + "]}";
         }});
  }
  if (s.ok()) {
    s = p.prompt({.name = "test_prompt_with_image",
                  .description = "A prompt with an image",
                  .get = [](const sdk::args&, sdk::call&) -> absl::StatusOr<std::string> {
                    const std::string image = std::string(R"({"type":"image","data":)") +
                                              quote(conformance::red_pixel_png()) + R"(,"mimeType":"image/png"})";
                    return std::string(R"({"messages":[)") + prompt_message(image) + "," +
                           prompt_message(text_block("Please analyze the image above.")) + "]}";
                  }});
  }
  return s;
}

// test_dynamic_tool appears two seconds after the plugin starts, announced with
// notifications/tools/list_changed: the way a plugin adds tools at run time.
class dynamic_tool final : public sdk::provider {
 public:
  explicit dynamic_tool(const sdk::plugin& plugin) : plugin_(plugin) {}
  ~dynamic_tool() override { stop(); }

  void start() {
    thread_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      if (wake_.wait_for(lock, std::chrono::seconds(2), [this] { return stopping_; })) return;
      visible_ = true;
      lock.unlock();
      plugin_.notify_list_changed(TOOLHOST_LIST_TOOLS);
    });
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::string list_tools() override {
    return visible_ ? R"([{"name":"test_dynamic_tool","description":"A tool that appeared at run time",)"
                      R"("inputSchema":{"type":"object","properties":{},"additionalProperties":false},)"
                      R"("x-toolhost-permission":"conformance.fixtures"}])"
                    : "[]";
  }
  std::optional<std::string> call_tool(sdk::call&, std::string_view name, std::string_view) override {
    if (!visible_ || name != "test_dynamic_tool") return std::nullopt;
    return sdk::result::text("This tool was added at run time.").to_json();
  }

 private:
  const sdk::plugin& plugin_;
  std::atomic<bool> visible_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

absl::Status init(sdk::plugin& p) {
  absl::Status s = p.declare_settings(sdk::kNoSettings);
  if (s.ok()) s = p.permission_kind(kKind, "Run the conformance fixtures", TOOLHOST_PERMISSION_ALLOW);
  if (s.ok()) s = register_tools(p);
  if (s.ok()) s = register_input_required_tools(p);
  auto& watched = p.keep(std::make_shared<watched_resource>(p));
  if (s.ok()) s = register_resources(p, watched);
  if (s.ok()) s = register_prompts(p);
  auto dynamic = std::make_shared<dynamic_tool>(p);
  if (s.ok()) s = p.provider(dynamic);
  if (!s.ok()) return s;

  watched.start();
  dynamic->start();
  p.on_deinit([&watched, dynamic] {
    watched.stop();
    dynamic->stop();
  });
  return absl::OkStatus();
}

}  // namespace

TOOLHOST_PLUGIN("conformance", "1.0.0", "The fixtures of the official MCP conformance suite (for tests)", init)
