#include "window_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <set>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/eleven/values.hpp>

#include "atomic_file.hpp"

namespace toolhost::eleven {
namespace {

std::string arg(const rapidjson::Value& args, const char* name) {
  if (!args.IsObject()) return {};
  auto it = args.FindMember(name);
  return it != args.MemberEnd() && it->value.IsString()
             ? std::string(it->value.GetString(), it->value.GetStringLength())
             : std::string();
}

bool has_arg(const rapidjson::Value& args, const char* name) {
  return args.IsObject() && args.FindMember(name) != args.MemberEnd();
}

std::string who(const author& a) {
  std::string out = a.agent.empty() ? "an agent" : a.agent;
  if (!a.chat.empty()) out += " (chat " + a.chat + ")";
  return out;
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::filesystem::path xdg_folder(const char* variable, const char* fallback_under_home) {
  const char* value = std::getenv(variable);
  if (value != nullptr && *value == '/') return value;  // the spec ignores relative values
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr && *home != '\0' ? home : "/tmp") / fallback_under_home;
}

// FNV-1a: a hash that is the same in every build, so a project is found again after an upgrade.
uint64_t stable_hash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string hex8(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf, 8);
}

}  // namespace

std::filesystem::path default_project_path(const std::filesystem::path& binary) {
  const std::string name = binary.filename().string();
  const std::filesystem::path folder = xdg_folder("XDG_DATA_HOME", ".local/share") / "eleven" / "projects" /
                                       (name + "-" + hex8(stable_hash(binary.parent_path().string())));
  return folder / (name + ".eleven.json");
}

std::vector<std::filesystem::path> legacy_project_paths(const std::filesystem::path& binary) {
  const std::string name = binary.filename().string();
  // The state-folder name used std::hash of the binary's folder, as libstdc++ computes it.
  char tag[20];
  std::snprintf(tag, sizeof tag, "%016zx", std::hash<std::string>{}(binary.parent_path().string()));
  return {binary.parent_path() / (name + ".eleven.json"), xdg_folder("XDG_STATE_HOME", ".local/state") / "eleven" /
                                                              (name + "-" + std::string(tag, 8) + ".eleven.json")};
}

namespace {

// Takes the lock on `lock_path`: -1 with `error` set when it cannot, or when another window
// holds it. The file may be removed by the window that held it between our open and our lock;
// a lock on a removed file guards nothing, so that case tries again.
int take_lock(const std::filesystem::path& lock_path, const std::filesystem::path& project, absl::Status& error) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      error = absl::PermissionDeniedError("Cannot create " + lock_path.string() + ": " + std::strerror(errno) + ".");
      return -1;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      error = absl::FailedPreconditionError("Another window has the project " + project.string() + " open.");
      return -1;
    }
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      return fd;
    }
    ::close(fd);
  }
  error = absl::UnavailableError("Could not take the lock " + lock_path.string() + ": it keeps being replaced.");
  return -1;
}

}  // namespace

absl::Status window_state::open(const std::filesystem::path& binary, std::filesystem::path project_path) {
  auto p = program::open(binary);
  if (!p.ok()) return p.status();
  const bool named = !project_path.empty();
  if (!named) {
    project_path = default_project_path(p->path());
    std::error_code ec;
    std::filesystem::create_directories(project_path.parent_path(), ec);
    if (ec) {
      return absl::PermissionDeniedError("Cannot create the project folder " + project_path.parent_path().string() +
                                         ": " + ec.message() + "; name a project file with --project.");
    }
  }
  project_path = std::filesystem::absolute(project_path).lexically_normal();
  if (project_ && project_->path() == project_path) close();  // reopening our own project
  // Two windows saving one project would silently drop each other's changes.
  const std::filesystem::path lock_path =
      project_path.parent_path() / ("." + project_path.filename().string() + ".lock");
  absl::Status locked;
  const int lock = take_lock(lock_path, project_path, locked);
  if (lock < 0) return locked;
  const auto give_up = [&](absl::Status s) {
    ::unlink(lock_path.c_str());
    ::close(lock);
    return s;
  };
  std::error_code ec;
  absl::StatusOr<project_store> store = project_store::load(project_path, p->path());
  if (store.ok() && !named && !std::filesystem::exists(project_path, ec)) {
    for (const auto& legacy : legacy_project_paths(p->path())) {
      if (!std::filesystem::exists(legacy, ec)) continue;
      store = project_store::load(legacy, p->path());
      if (store.ok()) store->relocate(project_path);
      break;
    }
  }
  if (!store.ok()) return give_up(store.status());
  close();
  project_lock_ = lock;
  lock_path_ = lock_path;
  program_ = std::make_unique<program>(std::move(*p));
  project_ = std::make_unique<project_store>(std::move(*store));
  selected_.reset();
  view_ = "pseudocode";
  sync_procedures();
  return absl::OkStatus();
}

void window_state::close() {
  program_.reset();
  project_.reset();
  selected_.reset();
  if (project_lock_ >= 0) {
    ::unlink(lock_path_.c_str());  // while the lock is still ours
    ::close(project_lock_);        // releases the flock
  }
  project_lock_ = -1;
  lock_path_.clear();
}

void window_state::sync_procedures() {
  std::set<uint64_t> starts;
  for (const auto& [address, type] : project_->marks(mark_kind::code_type)) {
    if (type == "procedure") starts.insert(address);
  }
  program_->set_procedures(starts);
}

std::string window_state::file_name() const { return program_->path().filename().string(); }

std::string window_state::display_name(uint64_t function) const {
  if (auto renamed = project_->mark(mark_kind::name, function)) return *renamed;
  const function_info* f = program_->function_starting(function);
  return f != nullptr ? f->original_name : ghidra_function_name(function);
}

absl::StatusOr<uint64_t> window_state::resolve_function(std::string_view text) const {
  if (text.empty()) return absl::InvalidArgumentError("No function given: name it, or give its address like 0x401136.");
  if (looks_like_address(text)) {
    auto a = parse_address(text);
    if (!a.ok()) return a.status();
    const function_info* f = program_->function_containing(*a);
    if (f == nullptr) {
      return absl::NotFoundError("There is no function at " + format_address(*a) + " in " + file_name() + ".");
    }
    return f->address;
  }
  for (const auto& [address, name] : project_->marks(mark_kind::name)) {
    if (name == text && program_->function_starting(address) != nullptr) return address;
  }
  for (const auto& [address, f] : program_->functions()) {
    if (f.original_name == text) return address;
  }
  if (auto a = parse_ghidra_function_name(text); a && program_->function_starting(*a) != nullptr) return *a;
  return absl::NotFoundError("There is no function named " + in_quotes(text) + " in " + file_name() +
                             "; use a name the window shows (like FUN_00401136) or an address (like 0x401136).");
}

absl::StatusOr<uint64_t> window_state::mapped_address(std::string_view text, bool code) const {
  auto a = parse_address(text);
  if (!a.ok()) return a.status();
  if (!program_->is_mapped(*a)) {
    return absl::OutOfRangeError(format_address(*a) + " is not in any loaded section of " + file_name() + ".");
  }
  if (code && !program_->is_code(*a)) {
    return absl::InvalidArgumentError(format_address(*a) + " is not in the code of " + file_name() +
                                      ", so there is no instruction there.");
  }
  return *a;
}

absl::StatusOr<uint64_t> window_state::resolve_location(std::string_view text) const {
  if (looks_like_address(text)) return mapped_address(text, false);
  return resolve_function(text);
}

answer window_state::call_tool(std::string_view tool, const rapidjson::Value& args, const author& from) {
  // The name first: a tool Eleven does not have is that, open file or not.
  static constexpr std::string_view kTools[] = {"current_view",  "open_function",   "set_view",         "list_marks",
                                                "propose_patch", "rename_function", "add_note",         "add_comment",
                                                "bookmark",      "set_code_type",   "set_number_format"};
  if (std::find(std::begin(kTools), std::end(kTools), tool) == std::end(kTools)) {
    return answer::refuse("Eleven has no tool named " + in_quotes(tool) + ".");
  }
  if (!is_open()) return answer::refuse(std::string(kNoFileOpen));
  if (tool == "current_view") return current_view();
  if (tool == "open_function") return open_function(args);
  if (tool == "set_view") return set_view(args);
  if (tool == "list_marks") {
    answer a = list_marks();
    // Only the calling agent's own suggestions are its business.
    std::string lines = a.text;
    std::string own;
    for (const suggestion& s : project_->suggestions()) {
      if (s.status != suggestion_status::waiting) continue;
      if (!from.agent.empty() && s.by.agent != from.agent) continue;
      own += "waiting for the user's review: " + s.summary + "\n";
    }
    if (lines.empty() && own.empty())
      return answer::fine("Nothing is written into the project for " + file_name() + " yet.");
    lines += own;
    if (!lines.empty() && lines.back() == '\n') lines.pop_back();
    return answer::fine(lines);
  }
  if (tool == "propose_patch") return propose_patch(args, from);
  auto e = plan_edit(tool, args);
  if (!e.ok()) return answer::refuse(std::string(e.status().message()));
  return file_edit(*e, from);
}

answer window_state::current_view() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("file");
  w.String(program_->path().string().c_str());
  w.Key("function");
  if (selected_)
    w.String(display_name(*selected_).c_str());
  else
    w.Null();
  w.Key("address");
  if (selected_)
    w.String(format_address(*selected_).c_str());
  else
    w.Null();
  w.Key("view");
  // The home canvas always reads pseudocode; the workbench shows the view the user chose.
  if (selected_)
    w.String(canvas_ == canvas::home ? "pseudocode" : view_.c_str());
  else
    w.Null();
  w.EndObject();
  return answer::fine(std::string(buffer.GetString(), buffer.GetSize()));
}

answer window_state::open_function(const rapidjson::Value& args) {
  auto f = resolve_function(arg(args, "function"));
  if (!f.ok()) return answer::refuse(std::string(f.status().message()));
  selected_ = *f;
  return answer::fine("Showing " + display_name(*f) + " (" + format_address(*f) + ") to the user.");
}

answer window_state::set_view(const rapidjson::Value& args) {
  const std::string view = arg(args, "view");
  if (auto s = check_view(view); !s.ok()) return answer::refuse(std::string(s.message()));
  if (canvas_ == canvas::home) {
    return answer::refuse(
        "The user is on the home canvas, where only the workbench can switch views, so they keep reading "
        "pseudocode; ask them to open the workbench if they should see the " +
        view + " view.");
  }
  view_ = view;
  return answer::fine("Switched the workbench to the " + view + " view.");
}

answer window_state::list_marks() const {
  std::string out;
  for (const auto& [address, name] : project_->marks(mark_kind::name)) {
    out += "renamed " + format_address(address) + " to " + name + "\n";
  }
  // The document's order: renames, bookmarks, notes, line comments, code types, number formats.
  for (const auto& [address, label] : project_->marks(mark_kind::bookmark)) {
    out += "bookmark at " + format_address(address) + (label.empty() ? "" : ": " + label) + "\n";
  }
  for (const auto& [address, note] : project_->marks(mark_kind::note)) {
    out += "note on " + display_name(address) + ": " + note + "\n";
  }
  for (const auto& [address, comment] : project_->marks(mark_kind::comment)) {
    out += "comment at " + format_address(address) + ": " + comment + "\n";
  }
  for (const auto& [address, type] : project_->marks(mark_kind::code_type)) {
    out += "code type at " + format_address(address) + ": " + type + "\n";
  }
  for (const auto& [address, format] : project_->marks(mark_kind::number_format)) {
    out += "number format at " + format_address(address) + ": " + format + "\n";
  }
  return answer::fine(out);
}

absl::StatusOr<window_state::edit> window_state::plan_edit(std::string_view tool, const rapidjson::Value& args) const {
  edit e;
  if (tool == "rename_function") {
    auto f = resolve_function(arg(args, "function"));
    if (!f.ok()) return f.status();
    const std::string new_name = arg(args, "new_name");
    if (auto s = check_new_name(new_name); !s.ok()) return s;
    for (const auto& [address, fn] : program_->functions()) {
      if (address != *f && display_name(address) == new_name) {
        return absl::AlreadyExistsError("Another function is already named " + new_name + " (" +
                                        format_address(address) + "); choose another name.");
      }
    }
    const std::string old_name = display_name(*f);
    e.what = {mark_kind::name, *f, new_name};
    e.done = "Renamed " + old_name + " to " + new_name + " in the user's project.";
    e.summary = "Rename " + old_name + " to " + new_name;
    e.history = "renamed " + format_address(*f) + " to " + new_name;
    return e;
  }
  if (tool == "add_note") {
    auto f = resolve_function(arg(args, "function"));
    if (!f.ok()) return f.status();
    const std::string note = arg(args, "note");
    const std::string name = display_name(*f);
    if (note.empty()) {
      if (!project_->mark(mark_kind::note, *f)) return absl::NotFoundError(name + " has no note to remove.");
      e.what = {mark_kind::note, *f, std::nullopt};
      e.done = "Removed the note on " + name + " from the user's project.";
      e.summary = "Remove the note on " + name;
      e.history = "removed the note on " + name;
    } else {
      e.what = {mark_kind::note, *f, note};
      e.done = "Added a note on " + name + " in the user's project.";
      e.summary = "Note on " + name + ": " + note;
      e.history = "note on " + name + ": " + note;
    }
    return e;
  }
  if (tool == "add_comment") {
    auto a = mapped_address(arg(args, "address"), true);
    if (!a.ok()) return a.status();
    const std::string comment = arg(args, "comment");
    const std::string at = format_address(*a);
    if (comment.empty()) {
      if (!project_->mark(mark_kind::comment, *a))
        return absl::NotFoundError("There is no comment at " + at + " to remove.");
      e.what = {mark_kind::comment, *a, std::nullopt};
      e.done = "Removed the comment at " + at + " from the user's project.";
      e.summary = "Remove the comment at " + at;
      e.history = "removed the comment at " + at;
    } else {
      e.what = {mark_kind::comment, *a, comment};
      e.done = "Added a comment at " + at + " in the user's project.";
      e.summary = "Comment at " + at + ": " + comment;
      e.history = "comment at " + at + ": " + comment;
    }
    return e;
  }
  if (tool == "bookmark") {
    auto a = resolve_location(arg(args, "address"));
    if (!a.ok()) return a.status();
    const std::string label = arg(args, "label");
    const std::string at = format_address(*a);
    e.what = {mark_kind::bookmark, *a, label};
    e.done = label.empty() ? "Bookmarked " + at + " in the user's project."
                           : "Bookmarked " + at + " as " + in_quotes(label) + " in the user's project.";
    e.summary = label.empty() ? "Bookmark " + at : "Bookmark " + at + " as " + in_quotes(label);
    e.history = "bookmark at " + at + (label.empty() ? "" : ": " + label);
    return e;
  }
  if (tool == "set_code_type") {
    auto a = mapped_address(arg(args, "address"), false);
    if (!a.ok()) return a.status();
    const std::string type = arg(args, "type");
    if (auto s = check_code_type(type); !s.ok()) return s;
    const std::string at = format_address(*a);
    if (type.empty()) {
      e.what = {mark_kind::code_type, *a, std::nullopt};
      e.done = at + " reads as code again in the user's project.";
      e.summary = "Read " + at + " as code again";
      e.history = "code type at " + at + " cleared";
    } else {
      e.what = {mark_kind::code_type, *a, type};
      e.done = type == "procedure"
                   ? "Started a function at " + at + " (" +
                         (program_->function_starting(*a) != nullptr ? display_name(*a) : ghidra_function_name(*a)) +
                         ") in the user's project."
                   : "Marked " + at + " as " + type + " in the user's project.";
      e.summary = "Mark " + at + " as " + type;
      e.history = "code type at " + at + ": " + type;
    }
    return e;
  }
  if (tool == "set_number_format") {
    auto a = mapped_address(arg(args, "address"), true);
    if (!a.ok()) return a.status();
    const std::string format = arg(args, "format");
    if (auto s = check_number_format(format); !s.ok()) return s;
    const std::string at = format_address(*a);
    if (format.empty()) {
      e.what = {mark_kind::number_format, *a, std::nullopt};
      e.done = "The number at " + at + " reads in Ghidra's own format again.";
      e.summary = "Show the number at " + at + " in Ghidra's own format";
      e.history = "number format at " + at + " cleared";
    } else {
      e.what = {mark_kind::number_format, *a, format};
      e.done = "The number at " + at + " now reads as " + format + " in the user's project.";
      e.summary = "Show the number at " + at + " as " + format;
      e.history = "number format at " + at + ": " + format;
    }
    return e;
  }
  return absl::NotFoundError("Eleven has no tool named " + in_quotes(tool) + ".");
}

answer window_state::file_edit(const edit& e, const author& from) {
  const project_store before = *project_;
  std::string text;
  if (options_.review) {
    suggestion s;
    s.by = from;
    s.edit = e.what;
    s.summary = e.summary;
    project_->suggest(std::move(s));
    text = std::string(kSuggestedPrefix) + ": " + e.summary + ". It waits for their review in the Changes tab.";
  } else {
    project_->apply(e.what, from, e.history);
    text = e.done;
  }
  if (absl::Status s = project_->save(); !s.ok()) {
    *project_ = before;
    return answer::refuse(std::string(s.message()));
  }
  sync_procedures();
  return answer::fine(text);
}

answer window_state::propose_patch(const rapidjson::Value& args, const author& from) {
  auto a = mapped_address(arg(args, "address"), false);
  if (!a.ok()) return answer::refuse(std::string(a.status().message()));
  auto bytes = parse_hex_bytes(arg(args, "bytes"));
  if (!bytes.ok()) return answer::refuse(std::string(bytes.status().message()));
  const std::string reason = arg(args, "reason");
  if (reason.find_first_not_of(" \t\r\n") == std::string::npos) {
    return answer::refuse("Give a reason: one sentence on what the patch does, shown to the user.");
  }
  if (!program_->has_file_bytes(*a, bytes->size())) {
    return answer::refuse("The " + std::to_string(bytes->size()) + " bytes at " + format_address(*a) +
                          " are not all stored in " + file_name() +
                          " (they reach memory the file does not hold), so "
                          "they cannot be patched.");
  }
  suggestion s;
  s.by = from;
  s.bytes = patch{*a, *bytes, reason};
  s.summary = "Patch " + format_address(*a) + " to " + format_bytes(*bytes);
  const project_store before = *project_;
  const std::string summary = s.summary;
  project_->suggest(std::move(s));
  if (absl::Status st = project_->save(); !st.ok()) {
    *project_ = before;
    return answer::refuse(std::string(st.message()));
  }
  return answer::fine(std::string(kSuggestedPrefix) + ": " + summary + " (" + reason +
                      "). Nothing is saved until they accept it in the Changes tab, and then Eleven writes a patched "
                      "copy, never the original file.");
}

std::filesystem::path window_state::patched_copy_path() const {
  if (!options_.patched_copy.empty()) return options_.patched_copy;
  return project_->path().parent_path() / (program_->path().filename().string() + ".patched");
}

absl::Status window_state::write_patched_copy() const {
  std::string image(program_->elf().bytes());
  for (const patch& p : project_->accepted_patches()) {
    for (size_t i = 0; i < p.bytes.size(); ++i) {
      auto offset = program_->elf().file_offset(p.address + i);
      if (!offset || *offset >= image.size()) {
        return absl::OutOfRangeError("The patch at " + format_address(p.address) +
                                     " reaches bytes the file does not hold.");
      }
      image[*offset] = static_cast<char>(p.bytes[i]);
    }
  }
  const std::filesystem::path target = patched_copy_path();
  std::error_code ec;
  if (std::filesystem::equivalent(target, program_->path(), ec)) {
    return absl::FailedPreconditionError(
        "The patched copy would overwrite the original file; choose another --patched-copy.");
  }
  struct stat st {};
  const unsigned mode = ::stat(program_->path().c_str(), &st) == 0 ? (st.st_mode & 0777) : 0755;
  return write_file_atomically(target, image, mode);
}

answer window_state::accept(uint64_t id) {
  const project_store before = *project_;
  auto s = project_->settle(id, true);
  if (!s.ok()) return answer::refuse(std::string(s.status().message()));
  std::string text = "Accepted #" + std::to_string(id) + ": " + s->summary + ".";
  if (s->edit) {
    // The edit is saved now, logged under the agent that proposed it.
    project_->apply(*s->edit, s->by, "accepted suggestion #" + std::to_string(id) + ": " + s->summary);
  }
  if (s->bytes) {
    if (absl::Status w = write_patched_copy(); !w.ok()) {
      *project_ = before;
      return answer::refuse("Could not write the patched copy: " + std::string(w.message()));
    }
    text += " Wrote the patched copy to " + patched_copy_path().string() + "; the original file is unchanged.";
  }
  if (absl::Status w = project_->save(); !w.ok()) {
    *project_ = before;
    return answer::refuse(std::string(w.message()));
  }
  sync_procedures();
  return answer::fine(text);
}

answer window_state::reject(uint64_t id) {
  const project_store before = *project_;
  auto s = project_->settle(id, false);
  if (!s.ok()) return answer::refuse(std::string(s.status().message()));
  if (absl::Status w = project_->save(); !w.ok()) {
    *project_ = before;
    return answer::refuse(std::string(w.message()));
  }
  return answer::fine("Rejected #" + std::to_string(id) + ": " + s->summary + ".");
}

answer window_state::undo() {
  const project_store before = *project_;
  auto e = project_->undo();
  if (!e.ok()) return answer::refuse(std::string(e.status().message()));
  if (absl::Status w = project_->save(); !w.ok()) {
    *project_ = before;
    return answer::refuse(std::string(w.message()));
  }
  sync_procedures();
  return answer::fine("Undid #" + std::to_string(e->seq) + " by " + who(e->by) + ": " + e->text + ".");
}

answer window_state::history() const {
  std::string out;
  for (const history_entry& e : project_->history()) {
    out += "#" + std::to_string(e.seq) + " " + e.time + " " + who(e.by) + ": " + e.text +
           (e.undone ? " (undone)" : "") + "\n";
  }
  if (out.empty()) return answer::fine("No changes yet.");
  out.pop_back();
  return answer::fine(out);
}

answer window_state::suggestions() const {
  std::string out;
  for (const suggestion& s : project_->suggestions()) {
    out += "#" + std::to_string(s.id) + " " + std::string(to_string(s.status)) + " " + who(s.by) + ": " + s.summary;
    if (s.bytes) out += " (" + s.bytes->reason + ")";
    out += "\n";
  }
  if (out.empty()) return answer::fine("No suggestions.");
  out.pop_back();
  return answer::fine(out);
}

answer window_state::status() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("file");
  if (is_open())
    w.String(program_->path().string().c_str());
  else
    w.Null();
  w.Key("project");
  if (is_open())
    w.String(project_->path().string().c_str());
  else
    w.Null();
  w.Key("canvas");
  w.String(canvas_ == canvas::home ? "home" : "workbench");
  w.Key("review");
  w.Bool(options_.review);
  w.Key("functions");
  w.Uint64(is_open() ? program_->functions().size() : 0);
  w.EndObject();
  return answer::fine(std::string(buffer.GetString(), buffer.GetSize()));
}

answer window_state::command(std::string_view name, const rapidjson::Value& args) {
  if (name == "status") return status();
  if (name == "show") {
    const std::string where = arg(args, "canvas");
    if (where != "home" && where != "workbench") return answer::refuse("Show what? Say home or workbench.");
    canvas_ = where == "home" ? canvas::home : canvas::workbench;
    return answer::fine(where == "home" ? "The user is now on the home canvas." : "The user is now in the workbench.");
  }
  if (name == "review") {
    auto it = args.IsObject() ? args.FindMember("on") : rapidjson::Value::ConstMemberIterator();
    if (!args.IsObject() || it == args.MemberEnd() || !it->value.IsBool())
      return answer::refuse("Say review on or review off.");
    options_.review = it->value.GetBool();
    return answer::fine(options_.review ? "Review is on: agents' edits become suggestions."
                                        : "Review is off: agents' edits are saved at once.");
  }
  if (name == "open") {
    const std::string binary = arg(args, "binary");
    if (binary.empty()) return answer::refuse("Open which file? Give its path.");
    if (absl::Status s = open(binary, arg(args, "project")); !s.ok()) return answer::refuse(std::string(s.message()));
    return answer::fine("Opened " + program_->path().string() + " with the project " + project_->path().string() + ".");
  }
  if (name == "close") {
    if (!is_open()) return answer::refuse("No file is open.");
    close();
    return answer::fine("Closed the file.");
  }
  if (!is_open()) return answer::refuse("No file is open.");
  if (name == "history") return history();
  if (name == "suggestions") return suggestions();
  if (name == "undo") return undo();
  if (name == "accept" || name == "reject") {
    auto it = args.IsObject() ? args.FindMember("id") : rapidjson::Value::ConstMemberIterator();
    if (!has_arg(args, "id") || !it->value.IsUint64())
      return answer::refuse("Give the suggestion's number, as suggestions lists it.");
    return name == "accept" ? accept(it->value.GetUint64()) : reject(it->value.GetUint64());
  }
  return answer::refuse("Unknown command " + in_quotes(name) + ".");
}

}  // namespace toolhost::eleven
