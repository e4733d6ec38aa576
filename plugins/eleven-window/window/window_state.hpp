// What the window is and shows: the open binary and its project, the canvas the user is on,
// the selected function and view, and the review setting. Answers the agent's bridge calls and
// the person's commands; single-threaded (the server's loop owns it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>
#include <rapidjson/document.h>

#include "program.hpp"
#include "project_store.hpp"

namespace toolhost::eleven {

enum class canvas { home, workbench };

struct window_options {
  bool review = false;  // edits become suggestions (Eleven's reviewAgentEdits)
  canvas start_on = canvas::home;
  std::filesystem::path patched_copy;  // where accepted patches go; default <project dir>/<binary>.patched
};

struct answer {
  bool ok = true;
  std::string text;
  static answer fine(std::string t) { return {true, std::move(t)}; }
  static answer refuse(std::string t) { return {false, std::move(t)}; }
};

// Where a binary's project lives unless the user names a place: in the XDG data folder, one
// folder per binary (its path's hash keeps two binaries of one name apart), so opening /usr/bin/ls
// writes nothing in /usr/bin:
//   $XDG_DATA_HOME/eleven/projects/<name>-<hash>/<name>.eleven.json   (~/.local/share/...)
// The project's lock and the default patched copy sit in the same folder.
std::filesystem::path default_project_path(const std::filesystem::path& binary);
// Where earlier windows kept it by default (beside the binary, or in $XDG_STATE_HOME/eleven); a
// project found there is read, and saved at the default path from then on.
std::vector<std::filesystem::path> legacy_project_paths(const std::filesystem::path& binary);

class window_state {
 public:
  explicit window_state(window_options options) : options_(std::move(options)), canvas_(options_.start_on) {}
  ~window_state() { close(); }
  window_state(const window_state&) = delete;
  window_state& operator=(const window_state&) = delete;

  // Opens a binary and its project (default: default_project_path; nothing is written beside
  // the binary).
  absl::Status open(const std::filesystem::path& binary, std::filesystem::path project = {});
  void close();
  bool is_open() const noexcept { return program_ != nullptr; }

  // An agent's call over the bridge.
  answer call_tool(std::string_view tool, const rapidjson::Value& args, const author& from);
  // A person's command from the control socket (history, suggestions, accept, reject, undo,
  // show, review, open, close, status).
  answer command(std::string_view name, const rapidjson::Value& args);

 private:
  struct edit {
    change what;
    std::string done;     // the answer when saved
    std::string summary;  // the suggestion's line, capitalised: "Rename FUN_... to check_license"
    std::string history;  // the history line: "renamed 0x401196 to check_license"
  };

  answer current_view() const;
  answer open_function(const rapidjson::Value& args);
  answer set_view(const rapidjson::Value& args);
  answer list_marks() const;
  answer propose_patch(const rapidjson::Value& args, const author& from);
  absl::StatusOr<edit> plan_edit(std::string_view tool, const rapidjson::Value& args) const;
  answer file_edit(const edit& e, const author& from);

  answer accept(uint64_t id);
  answer reject(uint64_t id);
  answer undo();
  answer history() const;
  answer suggestions() const;
  answer status() const;

  absl::StatusOr<uint64_t> resolve_function(std::string_view text) const;
  absl::StatusOr<uint64_t> resolve_location(std::string_view text) const;  // name or address
  absl::StatusOr<uint64_t> mapped_address(std::string_view text, bool code) const;
  std::string display_name(uint64_t function) const;
  std::string file_name() const;
  void sync_procedures();
  absl::Status write_patched_copy() const;
  std::filesystem::path patched_copy_path() const;

  window_options options_;
  std::unique_ptr<program> program_;
  std::unique_ptr<project_store> project_;
  int project_lock_ = -1;            // flock held on .<project>.lock while the project is open here
  std::filesystem::path lock_path_;  // removed when the project closes
  canvas canvas_ = canvas::home;
  std::optional<uint64_t> selected_;
  std::string view_ = "pseudocode";
};

}  // namespace toolhost::eleven
