// toolhost::symbols: the symbol path as WinDbg users write it, and finding a file on it.
//
//   auto path = toolhost::symbols::symbol_path::parse("srv*C:\\syms*https://msdl.microsoft.com/download/symbols");
//   path->text();   // as the user wrote it, for .sympath
//
// Elements are separated by ';':
//   DIR                 a plain folder (also read as a symbol store when it has store files)
//   srv*URL             a symbol server, files cached in the default downstream store
//   srv*CACHE*URL       ... cached in CACHE (srv*A*B*URL: several stores, nearest first)
//   srv*STORE           a local symbol-store folder
//   symsrv*symsrv.dll*... the same as srv*...
//   cache*DIR           files found by the elements after it are copied into DIR
//   cache*              ... into the default downstream store
//   URL                 a symbol server without a cache of its own
// The default downstream store is $XDG_CACHE_HOME/toolhost/symbols (~/.cache/toolhost/symbols).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::symbols {

inline constexpr std::string_view kMicrosoftSymbolServer = "https://msdl.microsoft.com/download/symbols";

// One element of the path, with the stores it searches in order (local folders, then at most
// one server URL) and the folders a file found further on is copied into.
struct path_element {
  std::string text;                 // as written
  std::vector<std::string> stores;  // local symbol-store folders, nearest first
  std::string server;               // "http(s)://..." or ""
  std::vector<std::string> caches;  // where files from `server` (or, for cache*, later elements) go
  bool plain_folder = false;        // a folder the user named, searched flat as well as as a store
  bool cache_marker = false;        // a cache*DIR element (it finds nothing itself)
};

class symbol_path {
 public:
  // An empty text is an empty path. An element that cannot be read is an InvalidArgument error
  // naming it.
  static absl::StatusOr<symbol_path> parse(std::string_view text);

  const std::string& text() const { return text_; }
  const std::vector<path_element>& elements() const { return elements_; }
  bool empty() const { return elements_.empty(); }
  // True when some element reaches a server over the network.
  bool uses_network() const;

 private:
  std::string text_;
  std::vector<path_element> elements_;
};

// $XDG_CACHE_HOME/toolhost/symbols, else $HOME/.cache/toolhost/symbols.
std::string default_cache();

// ".symfix [cache]": srv*CACHE*https://msdl.microsoft.com/download/symbols.
std::string symfix_text(std::string_view cache);

}  // namespace toolhost::symbols
