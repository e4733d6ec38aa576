// The example plugin: the whole plugin ABI in one small file.
//
// It registers one permission kind and one tool, `count`, which counts up to a number, one
// step every `delay_ms`, reporting progress as it goes and stopping early when the client
// cancels. Copy this file to start a plugin of your own.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include <toolhost/sdk/sdk.hpp>

namespace {

namespace sdk = toolhost::sdk;

constexpr const char* kCountSchema = R"json({
  "type": "object",
  "properties": {
    "to": {"type": "integer", "minimum": 1, "maximum": 1000000, "description": "Count from 1 up to this number"},
    "delay_ms": {"type": "integer", "minimum": 0, "maximum": 10000, "description": "Pause between steps, in milliseconds (default 0)"}
  },
  "required": ["to"],
  "additionalProperties": false
})json";

constexpr const char* kCountOutput = R"({
  "type": "object",
  "properties": {
    "counted": {"type": "integer"},
    "completed": {"type": "boolean"}
  },
  "required": ["counted", "completed"]
})";

// Waits `ms` milliseconds, or less if the call is cancelled meanwhile.
class interruptible_sleep {
 public:
  explicit interruptible_sleep(sdk::call& call) {
    call.on_cancel([this] {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
      wake_.notify_all();
    });
  }
  void wait(int64_t ms) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return cancelled_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool cancelled_ = false;
};

sdk::result count(const sdk::args& args, sdk::call& call) {
  const int64_t to = args.integer("to");
  const int64_t delay_ms = args.integer("delay_ms", 0);
  if (to < 1) return sdk::result::error("'to' must be at least 1.");

  interruptible_sleep sleep(call);
  int64_t counted = 0;
  for (int64_t i = 1; i <= to; ++i) {
    if (call.cancelled()) break;  // the host discards what we return, so just stop
    if (delay_ms > 0) sleep.wait(delay_ms);
    if (call.cancelled()) break;
    counted = i;
    call.progress(static_cast<double>(i), static_cast<double>(to), "counted to " + std::to_string(i));
  }
  const bool completed = counted == to;
  std::string summary = completed ? "Counted to " + std::to_string(to) + "."
                                  : "Stopped at " + std::to_string(counted) + " of " + std::to_string(to) + ".";
  return sdk::result::structured(R"({"counted":)" + std::to_string(counted) + R"(,"completed":)" +
                                 (completed ? "true" : "false") + "}")
      .add_text(summary);
}

absl::Status init(sdk::plugin& plugin) {
  // A permission kind is a row a person sees in the settings; the config can set it to
  // allow, ask or never.
  if (auto s = plugin.permission_kind("example.count", "Count numbers", TOOLHOST_PERMISSION_ALLOW); !s.ok()) {
    return s;
  }
  return plugin.tool("count")
      .title("Count")
      .description("Counts from 1 up to `to`, reporting progress at every step. Cancel it to stop early.")
      .input_schema(kCountSchema)
      .output_schema(kCountOutput)
      .annotations(R"({"readOnlyHint":true,"openWorldHint":false})")
      .permission("example.count")
      .concurrent()
      .handler(count);
}

}  // namespace

TOOLHOST_PLUGIN("example", "1.0.0", "Counts numbers: the plugin ABI in one file", init)
