// The project file: everything people and agents wrote about one binary (renames, notes, line
// comments, bookmarks, code types, number formats), the log of every change with its author,
// and the suggestions waiting for review. Saved as JSON, atomically, after every change.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::eleven {

enum class mark_kind { name, note, comment, bookmark, code_type, number_format };
inline constexpr mark_kind kMarkKinds[] = {mark_kind::name,     mark_kind::note,      mark_kind::comment,
                                           mark_kind::bookmark, mark_kind::code_type, mark_kind::number_format};
std::string_view to_string(mark_kind kind);
std::optional<mark_kind> mark_kind_from(std::string_view text);

struct author {
  std::string agent;
  std::string chat;
};

// One change to one mark. A missing value means the mark is removed.
struct change {
  mark_kind kind = mark_kind::name;
  uint64_t address = 0;
  std::optional<std::string> value;
};

struct history_entry {
  uint64_t seq = 0;
  std::string time;  // UTC, ISO 8601
  author by;
  change what;                        // what.value is the value after the change
  std::optional<std::string> before;  // the value it replaced
  std::string text;                   // a line a person reads: "renamed 0x401196 to check_license"
  bool undone = false;
};

struct patch {
  uint64_t address = 0;
  std::vector<uint8_t> bytes;
  std::string reason;
};

enum class suggestion_status { waiting, accepted, rejected };
std::string_view to_string(suggestion_status status);

struct suggestion {
  uint64_t id = 0;
  std::string time;
  author by;
  suggestion_status status = suggestion_status::waiting;
  std::optional<change> edit;  // a project edit filed while review was on
  std::optional<patch> bytes;  // or a patch
  std::string summary;         // "Patch 0x401196 to 90 90", "Rename FUN_00401196 to check_license"
};

class project_store {
 public:
  // Loads `path`; a file that does not exist yet is an empty project for `binary`. A project
  // written for another binary is refused, so marks never land on the wrong file.
  static absl::StatusOr<project_store> load(const std::filesystem::path& path, const std::filesystem::path& binary);
  // Reads the JSON text of a project file that `path` names.
  static absl::StatusOr<project_store> parse(std::string_view text, const std::filesystem::path& path,
                                             const std::filesystem::path& binary);

  const std::filesystem::path& path() const noexcept { return path_; }
  // Saves at `path` from now on (a project read from where an older window kept it).
  void relocate(std::filesystem::path path) { path_ = std::move(path); }
  absl::Status save() const;
  std::string to_json() const;

  const std::map<uint64_t, std::string>& marks(mark_kind kind) const;
  std::optional<std::string> mark(mark_kind kind, uint64_t address) const;

  // Applies a change and logs it; `text` is the history line.
  const history_entry& apply(const change& c, const author& by, std::string text);
  // Reverts the newest change not yet undone; NotFound when there is none.
  absl::StatusOr<history_entry> undo();
  const std::vector<history_entry>& history() const noexcept { return history_; }

  const suggestion& suggest(suggestion s);
  const std::vector<suggestion>& suggestions() const noexcept { return suggestions_; }
  // Marks a waiting suggestion accepted or rejected (the caller applies an accepted edit).
  absl::StatusOr<suggestion> settle(uint64_t id, bool accept);
  // Accepted patches, in the order they were accepted.
  std::vector<patch> accepted_patches() const;

 private:
  std::filesystem::path path_;
  std::string binary_;
  std::map<mark_kind, std::map<uint64_t, std::string>> marks_;
  std::vector<history_entry> history_;
  std::vector<suggestion> suggestions_;
  std::vector<uint64_t> accepted_order_;
  uint64_t next_seq_ = 1;
  uint64_t next_suggestion_ = 1;
};

std::string utc_now();

}  // namespace toolhost::eleven
