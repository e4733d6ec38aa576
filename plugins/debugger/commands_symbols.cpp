// Modules and symbols: lm, ln, x, .reload, ld.
#include <algorithm>
#include <cctype>

#include <cstring>

#include <absl/strings/str_format.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/types/dt.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "pe_symbols.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

constexpr uint64_t kKernelSpace = 0xffff800000000000ull;

struct lm_options {
  bool verbose = false, loaded_only = false, kernel = false, user = false, names_only = false, sorted = false;
  std::string pattern = "*";
  std::string address;  // an expression, when `a` was given
};

// WinDbg's lm option letters, run together or apart: "vm nt", "Dvmnt", "m nt*", "a rip", "1m", "sm".
absl::StatusOr<lm_options> parse_lm(std::string_view args) {
  lm_options o;
  size_t pos = 0;
  while (pos < args.size()) {
    const char c = args[pos];
    if (c == ' ' || c == '\t') {
      ++pos;
      continue;
    }
    auto rest = [&]() {
      size_t start = pos + 1;
      while (start < args.size() && (args[start] == ' ' || args[start] == '\t')) ++start;
      size_t end = start;
      while (end < args.size() && args[end] != ' ' && args[end] != '\t') ++end;
      std::string word(args.substr(start, end - start));
      pos = end;
      return word;
    };
    switch (std::tolower(static_cast<unsigned char>(c))) {
      case 'v':
        o.verbose = true;
        ++pos;
        break;
      case 'l':
        o.loaded_only = true;
        ++pos;
        break;
      case 'k':
        o.kernel = true;
        ++pos;
        break;
      case 'u':
        o.user = true;
        ++pos;
        break;
      case 'd':
      case 'o':
      case 'f':
      case 'n':
      case 't':
      case 'i':
      case 'e': ++pos; break;  // display variants
      case '1':
        o.names_only = true;
        ++pos;
        break;
      case 's':
        o.sorted = true;
        ++pos;
        break;
      case 'm':
        o.pattern = rest();
        if (o.pattern.empty()) return absl::InvalidArgumentError("m needs a module name pattern, e.g. lm m nt");
        break;
      case 'a': {
        o.address = std::string(trim(args.substr(pos + 1)));
        if (o.address.empty()) return absl::InvalidArgumentError("a needs an address, e.g. lm a rip");
        pos = args.size();
        break;
      }
      default: return absl::InvalidArgumentError(std::string("unknown lm option '") + c + "'");
    }
  }
  return o;
}

std::string status_text(const module& m) {
  if (m.state == symbol_state::deferred) return "(deferred)";
  const symbol_source* best = m.best();
  if (best == nullptr) return "(no symbols)";
  return "(" + best->status() + ")";
}

std::string lm_line(const module& m) {
  std::string name = m.name;
  if (name.size() < 8) name.resize(8, ' ');
  std::string line = address_text(m.base) + " " + address_text(m.base + m.size) + "   " + name + "   ";
  std::string status = status_text(m);
  const symbol_source* best = m.state == symbol_state::loaded ? m.best() : nullptr;
  if (best != nullptr && !best->file().empty()) {
    if (status.size() < 22) status.resize(22, ' ');
    return line + status + " " + best->file();
  }
  return line + status;
}

std::string fact_line(const std::string& key, const std::string& value) {
  if (key.empty()) return "    " + value;
  std::string k = key + ":";
  // Timestamp, CheckSum and ImageSize line up their values, as in WinDbg.
  if (key == "Timestamp" || key == "CheckSum" || key == "ImageSize")
    k.resize(18, ' ');
  else
    k += ' ';
  return "    " + k + value;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> session::module_facts(const module& m) {
  if (m.state == symbol_state::loaded) {
    auto facts = m.symbols.facts;
    // The image path is known from the module list even when the image's header is not.
    const bool has_path =
        std::any_of(facts.begin(), facts.end(), [](const auto& f) { return f.first == "Image path"; });
    if (!has_path && !m.path.empty()) facts.emplace_back("Image path", m.path);
    return facts;
  }
  // Deferred: the header facts without loading symbols.
  if (auto image = module_image(m); image.ok()) return pe_facts(**image, m.path);
  return {{"Image path", m.path}};
}

absl::Status session::cmd_lm(const std::string& name, std::string_view args) {
  auto options = parse_lm(args);
  if (!options.ok()) return usage_error(name, std::string(options.status().message()));
  if (!target_->has(TOOLHOST_DT_CAP_MODULES) && !windows_) {
    return absl::UnimplementedError("the " + target_->backend() + " backend offers no module list");
  }
  if (running() && !target_->has(TOOLHOST_DT_CAP_READ_VIRTUAL)) {
    return absl::FailedPreconditionError("the target is running; the module list is read while it is halted");
  }
  refresh_modules();
  std::optional<uint64_t> address;
  if (!options->address.empty()) {
    auto a = eval(options->address);
    if (!a.ok()) return usage_error(name, std::string(a.status().message()));
    address = *a;
  }
  std::vector<const module*> shown;
  for (const auto& m : symbols_.modules()) {
    if (!wildcard_match(options->pattern, m.name)) continue;
    if (address && !m.contains(*address)) continue;
    if (options->loaded_only && (m.state != symbol_state::loaded || m.best() == nullptr)) continue;
    if (options->kernel && !options->user && m.base < kKernelSpace) continue;
    if (options->user && !options->kernel && m.base >= kKernelSpace) continue;
    shown.push_back(&m);
  }
  if (options->sorted) {
    std::sort(shown.begin(), shown.end(), [](const module* a, const module* b) { return a->name < b->name; });
  }
  if (!options->names_only) out_ += "start             end                 module name\n";
  std::string json = R"({"modules":[)";
  bool first = true;
  for (const module* m : shown) {
    out_ += (options->names_only ? m->name : lm_line(*m)) + "\n";
    const symbol_source* best = m->state == symbol_state::loaded ? m->best() : nullptr;
    std::string symbols = m->state == symbol_state::deferred ? "deferred"
                          : best == nullptr                  ? "no symbols"
                                                             : best->status();
    json += std::string(first ? "" : ",") + R"({"name":)" + sdk::quote(m->name) + R"(,"path":)" + sdk::quote(m->path) +
            R"(,"base":)" + sdk::quote(hex(m->base)) + R"(,"size":)" + sdk::quote(hex(m->size)) + R"(,"symbols":)" +
            sdk::quote(symbols) + R"(,"file":)" + (best != nullptr ? sdk::quote(best->file()) : "null");
    first = false;
    if (options->verbose) {
      std::string facts = "{";
      for (const auto& [k, v] : module_facts(*m)) {
        out_ += fact_line(k, v) + "\n";
        if (!k.empty()) facts += std::string(facts.size() > 1 ? "," : "") + sdk::quote(k) + ":" + sdk::quote(v);
      }
      if (m->state == symbol_state::loaded && !m->symbols.problem.empty())
        out_ += "    Symbols: " + m->symbols.problem + "\n";
      json += R"(,"facts":)" + facts + "}";
    }
    json += "}";
  }
  if (shown.empty() && !options->names_only && (options->pattern != "*" || address)) {
    out_ +=
        address ? "No module holds " + address_text(*address) + ".\n" : "No module matches " + options->pattern + ".\n";
  }
  result_json_ = json + "]}";
  return absl::OkStatus();
}

absl::Status session::cmd_reload(const std::string& name, std::string_view args) {
  bool force = false, unload_only = false;
  std::string pattern;
  size_t pos = 0;
  for (;;) {
    skip_blanks(args, pos);
    if (pos >= args.size()) break;
    const std::string word = take_word(args, pos);
    if (word == "/f")
      force = true;
    else if (word == "/u")
      unload_only = true;
    else if (word == "/v" || word == "/n" || word == "/i")
      continue;  // verbose / kernel-only / ignore mismatch: accepted
    else if (!word.empty() && word[0] == '/')
      return usage_error(name, "unknown option " + word);
    else if (pattern.empty())
      pattern = word;
    else
      return usage_error(name, "one module at a time: .reload [/f] [module]");
  }
  if (!target_->has(TOOLHOST_DT_CAP_MODULES) && !windows_) {
    return absl::UnimplementedError("the " + target_->backend() + " backend offers no module list");
  }
  // "nt.sys", "wsfix.sys", "ntoskrnl.exe": WinDbg takes the image name too.
  if (!pattern.empty()) pattern = module_name_of(pattern);
  modules_stale_ = true;
  refresh_modules(/*load_elf=*/false);
  const size_t n = symbols_.unload(pattern.empty() ? "*" : pattern);
  if (!pattern.empty() && n == 0)
    return absl::NotFoundError("no module named '" + pattern + "' is loaded (lm lists them)");
  std::string json = R"({"modules":[)";
  if (unload_only) {
    out_ += "Unloaded the symbols of " + std::to_string(n) + " module" + (n == 1 ? "" : "s") + ".\n";
    result_json_ = json + "]}";
    return absl::OkStatus();
  }
  size_t loaded = 0;
  bool first = true;
  for (const auto& m : symbols_.modules()) {
    if (!pattern.empty() && !wildcard_match(pattern, m.name)) continue;
    // ELF files are read at once, as before; others wait for /f or their first use.
    if (!force && !is_elf_module(m)) continue;
    if (cancelled_ != nullptr && *cancelled_ && (*cancelled_)()) {
      out_ += "Cancelled; the remaining modules stay deferred.\n";
      break;
    }
    symbols_.ensure_loaded(m);
    ++loaded;
    if (force) {
      out_ += lm_line(m) + "\n";
      if (!m.symbols.problem.empty()) out_ += "    " + m.symbols.problem + "\n";
    }
    const symbol_source* best = m.best();
    json += std::string(first ? "" : ",") + R"({"name":)" + sdk::quote(m.name) + R"(,"symbols":)" +
            sdk::quote(best == nullptr ? "no symbols" : best->status()) + R"(,"file":)" +
            (best != nullptr ? sdk::quote(best->file()) : "null") + R"(,"problem":)" +
            (m.symbols.problem.empty() ? "null" : sdk::quote(m.symbols.problem)) + "}";
    first = false;
  }
  if (!force) {
    out_ += "Reloaded " + std::to_string(n) + " module" + (n == 1 ? "" : "s") +
            "; symbols load when first used (.reload /f loads them now).\n";
  }
  result_json_ = json + "]}";
  return absl::OkStatus();
}

absl::Status session::cmd_ld(const std::string& name, std::string_view args) {
  const std::string pattern = module_name_of(trim(args));
  if (pattern.empty()) return usage_error(name, "ld needs a module name");
  refresh_modules();
  size_t n = 0;
  for (const auto& m : symbols_.modules()) {
    if (!wildcard_match(pattern, m.name)) continue;
    ++n;
    symbols_.ensure_loaded(m);
    const symbol_source* best = m.best();
    if (best == nullptr) {
      out_ += "No symbols for " + m.name + (m.symbols.problem.empty() ? "" : ": " + m.symbols.problem) + "\n";
    } else {
      out_ += "Symbols loaded for " + m.name + " (" + best->status() +
              (best->file().empty() ? "" : ", " + best->file()) + ")\n";
      if (!m.symbols.problem.empty()) out_ += "    " + m.symbols.problem + "\n";
    }
  }
  if (n == 0) return absl::NotFoundError("no module named '" + pattern + "' is loaded (lm lists them)");
  return absl::OkStatus();
}

absl::Status session::cmd_ln(const std::string& name, std::string_view args) {
  if (trim(args).empty()) return usage_error(name, "ln needs an address");
  auto address = eval(args);
  if (!address.ok()) return usage_error(name, std::string(address.status().message()));
  refresh_modules();
  auto [below, above] = symbols_.neighbours(*address);
  if (!below && !above) {
    out_ += "No symbol is known near " + address_text(*address) + ".\n";
    result_json_ = "null";
    return absl::OkStatus();
  }
  std::string line;
  if (below) {
    const uint64_t off = *address - below->address;
    line += "(" + address_text(below->address) + ")   " + below->name + (off ? "+" + hex(off) : "");
  }
  if (above) line += "   |  (" + address_text(above->address) + ")   " + above->name;
  const auto source = symbols_.line_at(*address);
  if (source) out_ += source_text(*source) + "\n";
  out_ += line + "\n";
  if (below && below->address == *address) out_ += "Exact matches:\n    " + below->name + "\n";
  std::string json = R"({"symbol":)" + (below ? sdk::quote(symbol_of(*address)) : "null");
  if (source) {
    json += R"(,"source":{"file":)" + sdk::quote(source->file) + R"(,"line":)" + std::to_string(source->line) +
            R"(,"address":)" + sdk::quote(hex(symbols_.module_at(*address)->base + source->offset)) + "}";
  }
  if (below) {
    json += R"(,"below":{"name":)" + sdk::quote(below->name) + R"(,"address":)" + sdk::quote(hex(below->address)) +
            R"(,"offset":)" + sdk::quote(hex(*address - below->address)) + "}";
  }
  if (above)
    json += R"(,"above":{"name":)" + sdk::quote(above->name) + R"(,"address":)" + sdk::quote(hex(above->address)) + "}";
  result_json_ = json + "}";
  return absl::OkStatus();
}

absl::Status session::cmd_x(const std::string& name, std::string_view args) {
  const std::string pattern(trim(args));
  const auto bang = pattern.find('!');
  if (pattern.empty() || bang == std::string::npos) {
    return usage_error(name, "x takes module!pattern, e.g. x libc!str* (* and ? are wildcards)");
  }
  refresh_modules();
  auto matches = symbols_.match(pattern.substr(0, bang), pattern.substr(bang + 1), 2001);
  std::sort(matches.begin(), matches.end(), [](const symbol_match& a, const symbol_match& b) {
    return a.address != b.address ? a.address < b.address : a.name < b.name;
  });
  std::string json = R"({"symbols":[)";
  for (size_t i = 0; i < matches.size() && i < 2000; ++i) {
    out_ += address_text(matches[i].address) + " " + matches[i].name + "\n";
    json += std::string(i ? "," : "") + R"({"name":)" + sdk::quote(matches[i].name) + R"(,"address":)" +
            sdk::quote(hex(matches[i].address)) + R"(,"size":)" + std::to_string(matches[i].size) + "}";
  }
  if (matches.size() > 2000) out_ += "(more than 2000 symbols match; narrow the pattern)\n";
  if (matches.empty()) out_ += "No symbol matches " + pattern + ".\n";
  result_json_ = json + "]}";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger

namespace toolhost::debugger {

absl::Status session::cmd_sympath(const std::string& command, std::string_view args) {
  std::string name = command;
  std::string arg(trim(args));
  // ".sympath+ x" reaches here as ".sympath" with "+ x" (a '+' ends a command name).
  if (!arg.empty() && arg[0] == '+' && name.back() != '+') {
    name += '+';
    arg = std::string(trim(std::string_view(arg).substr(1)));
  }
  std::string text = sympath_.text();
  if (name == ".symfix" || name == ".symfix+") {
    const std::string element = symbols::symfix_text(arg);
    text = name == ".symfix" || text.empty() ? element : text + ";" + element;
  } else if (name == ".sympath+") {
    if (arg.empty()) return usage_error(name, ".sympath+ needs a path element to append");
    text = text.empty() ? arg : text + ";" + arg;
  } else if (!arg.empty()) {
    text = arg;
  }
  const bool changed = text != sympath_.text();
  if (changed) {
    if (absl::Status s = set_symbol_path(text); !s.ok()) return usage_error(name, std::string(s.message()));
  }
  out_ += "Symbol search path is: " + (sympath_.empty() ? std::string("<empty>") : sympath_.text()) + "\n";
  if (changed) out_ += "Modules already loaded keep their symbols until .reload.\n";
  std::string elements = "[";
  for (const auto& e : sympath_.elements()) {
    elements += std::string(elements.size() > 1 ? "," : "") + R"({"text":)" + sdk::quote(e.text) + R"(,"server":)" +
                (e.server.empty() ? "null" : sdk::quote(e.server)) + R"(,"stores":[)";
    for (size_t i = 0; i < e.stores.size(); ++i) elements += (i ? "," : "") + sdk::quote(e.stores[i]);
    elements += "]}";
  }
  result_json_ = R"({"symbol_path":)" + sdk::quote(sympath_.text()) + R"(,"elements":)" + elements + "]}";
  return absl::OkStatus();
}

absl::StatusOr<std::pair<const types::type_table*, std::string>> session::find_type(std::string_view name,
                                                                                    std::optional<types::type_id>& id) {
  refresh_modules();
  const auto bang = name.find('!');
  if (bang != std::string_view::npos) {
    const module* m = symbols_.find_module(name.substr(0, bang));
    if (m == nullptr)
      return absl::NotFoundError("no module named '" + std::string(name.substr(0, bang)) +
                                 "' is loaded (lm lists them)");
    symbols_.ensure_loaded(*m);
    const std::string type_name(name.substr(bang + 1));
    for (const auto& source : m->symbols.sources) {
      const types::type_table* t = source->types();
      if (t == nullptr) continue;
      id = t->find(type_name);
      return std::make_pair(t, m->name);
    }
    std::string why = "module " + m->name + " has no type information";
    if (!m->symbols.problem.empty()) why += " (" + m->symbols.problem + ")";
    return absl::NotFoundError(why);
  }
  // No module: loaded modules first, nt before the others, then the deferred ones.
  std::vector<const module*> order;
  for (const auto& m : symbols_.modules()) {
    if (m.name == "nt")
      order.insert(order.begin(), &m);
    else
      order.push_back(&m);
  }
  const types::type_table* any = nullptr;
  std::string any_module;
  for (int pass = 0; pass < 2; ++pass) {
    for (const module* m : order) {
      if ((m->state == symbol_state::loaded) != (pass == 0)) continue;
      if (pass == 1 && is_elf_module(*m)) continue;
      symbols_.ensure_loaded(*m);
      for (const auto& source : m->symbols.sources) {
        const types::type_table* t = source->types();
        if (t == nullptr) continue;
        if (any == nullptr) {
          any = t;
          any_module = m->name;
        }
        if ((id = t->find(name))) return std::make_pair(t, m->name);
      }
    }
  }
  if (any == nullptr)
    return absl::NotFoundError("no module has type information (a PDB on the symbol path gives it: .sympath, .reload)");
  return std::make_pair(any, any_module);
}

absl::Status session::cmd_dt(const std::string& name, std::string_view args) {
  types::dt_options options;
  size_t pos = 0;
  std::string type_name;
  for (;;) {
    skip_blanks(args, pos);
    if (pos >= args.size() || args[pos] != '-') break;
    const std::string option = take_word(args, pos);
    auto level = [&](size_t prefix, size_t bare) -> std::optional<size_t> {
      if (option.size() == prefix) return bare;
      const std::string digits = option.substr(prefix);
      if (digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
      return static_cast<size_t>(std::stoul(digits));
    };
    if (option.rfind("-r", 0) == 0) {
      auto n = level(2, 1);
      if (!n || *n > 64) return usage_error(name, "-r takes a depth from 0 to 64 (-r alone: 1)");
      options.depth = static_cast<int>(*n);
    } else if (option.rfind("-a", 0) == 0) {
      auto n = level(2, 16);
      if (!n || *n == 0) return usage_error(name, "-a takes how many array elements to show (-a alone: 16)");
      options.array_elements = *n;
    } else if (option == "-b" || option == "-v" || option == "-y") {
      // -b (arrays and structures expanded one level), -v and -y: WinDbg's display variants.
      if (option == "-b") options.array_elements = 16;
    } else {
      return usage_error(name, "unknown option " + option);
    }
  }
  type_name = take_word(args, pos);
  if (type_name.empty()) return usage_error(name, "dt needs a type, e.g. dt nt!_EPROCESS");

  // dt mod!Prefix*: the types whose names match.
  const auto bang = type_name.find('!');
  const std::string bare = bang == std::string::npos ? type_name : type_name.substr(bang + 1);
  if (bare.find_first_of("*?") != std::string::npos) {
    refresh_modules();
    const std::string module_pattern = bang == std::string::npos ? "*" : type_name.substr(0, bang);
    size_t shown = 0, total = 0;
    std::string json = R"({"types":[)";
    for (const auto& m : symbols_.modules()) {
      if (!wildcard_match(module_pattern, m.name)) continue;
      if (bang == std::string::npos && m.state == symbol_state::deferred) continue;  // only what is loaded
      symbols_.ensure_loaded(m);
      for (const auto& source : m.symbols.sources) {
        const types::type_table* t = source->types();
        if (t == nullptr) continue;
        for (const auto& n : types::matching_type_names(*t, bare)) {
          ++total;
          if (shown >= 1000) continue;
          out_ += "          " + m.name + "!" + n + "\n";
          json += std::string(shown ? "," : "") + sdk::quote(m.name + "!" + n);
          ++shown;
        }
        break;
      }
    }
    if (total > shown) out_ += "(" + std::to_string(total - shown) + " more types match; narrow the pattern)\n";
    if (total == 0) out_ += "No type matches " + type_name + ".\n";
    result_json_ = json + "]}";
    return absl::OkStatus();
  }

  std::optional<types::type_id> id;
  auto found = find_type(type_name, id);
  if (!found.ok()) return found.status();
  if (!id) return absl::NotFoundError("Symbol " + type_name + " not found.");
  // An address, then field names (a word that is not an expression is a field).
  std::optional<uint64_t> address;
  skip_blanks(args, pos);
  if (pos < args.size()) {
    size_t probe = pos;
    const std::string word = take_word(args, probe);
    auto value = evaluate(word, *this);
    if (value.ok()) {
      address = *value;
      pos = probe;
    }
  }
  while (pos < args.size()) {
    const std::string field = take_word(args, pos);
    if (!field.empty()) options.fields.push_back(field);
  }
  if (address && !target_->has(TOOLHOST_DT_CAP_READ_VIRTUAL)) {
    return absl::UnimplementedError("the " + target_->backend() + " backend cannot read virtual memory");
  }
  const std::string qualified =
      found->second + "!" + (bang == std::string::npos ? type_name : type_name.substr(bang + 1));
  types::dt_request request{*found->first, *id, qualified, address};
  request.options = options;
  request.read = [this](uint64_t a, std::span<uint8_t> out) -> size_t {
    auto bytes = target_->read(a, out.size());
    if (!bytes.ok()) return 0;
    std::memcpy(out.data(), bytes->data(), bytes->size());
    return bytes->size();
  };
  request.describe = [this](uint64_t a) { return symbol_of(a); };
  auto rendered = types::render_dt(request);
  if (!rendered.ok()) return rendered.status();
  out_ += rendered->text;
  result_json_ = rendered->json;
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
