#include "expression.hpp"

#include <cctype>
#include <vector>

namespace toolhost::debugger {

namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '@' || c == '$' || c == '.';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '@' || c == '$' || c == '.' || c == '!' ||
         c == '`' || c == '?';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class parser {
 public:
  parser(std::string_view text, size_t pos, expression_context& context) : text_(text), pos_(pos), ctx_(context) {}

  absl::StatusOr<uint64_t> expression() { return binary(0); }
  size_t position() const { return pos_; }
  void skip_blanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool at_end() {
    skip_blanks();
    return pos_ >= text_.size();
  }

 private:
  // Binary operators by precedence level, lowest first.
  struct op {
    std::string_view text;
    int level;
    bool word;  // "and", "or", "xor", "mod" need a boundary after them
  };
  static constexpr op kOps[] = {
      {"or", 0, true},  {"|", 0, false},  {"xor", 1, true}, {"^", 1, false},  {"and", 2, true}, {"&", 2, false},
      {"==", 3, false}, {"!=", 3, false}, {"<=", 3, false}, {">=", 3, false}, {"=", 3, false},  {">>>", 4, false},
      {"<<", 4, false}, {">>", 4, false}, {"<", 3, false},  {">", 3, false},  {"+", 5, false},  {"-", 5, false},
      {"*", 6, false},  {"/", 6, false},  {"%", 6, false},  {"mod", 6, true},
  };

  const op* peek_op() {
    skip_blanks();
    std::string_view rest = text_.substr(pos_);
    for (const auto& o : kOps) {
      if (rest.size() < o.text.size()) continue;
      if (lower(rest.substr(0, o.text.size())) != o.text) continue;
      if (o.word && rest.size() > o.text.size() && is_ident_char(rest[o.text.size()])) continue;
      if (o.word && pos_ > 0 && is_ident_char(text_[pos_ - 1])) continue;
      // "=" must not be the start of "==" handled above; "<" not "<<" etc. (longer ops first)
      return &o;
    }
    return nullptr;
  }

  absl::StatusOr<uint64_t> binary(int min_level) {
    auto left = unary();
    if (!left.ok()) return left;
    uint64_t value = *left;
    for (;;) {
      const op* o = peek_op();
      if (o == nullptr || o->level < min_level) break;
      const size_t saved = pos_;
      pos_ += o->text.size();
      skip_blanks();
      if (pos_ >= text_.size()) {
        pos_ = saved;
        return absl::InvalidArgumentError("the expression ends after '" + std::string(o->text) + "'");
      }
      auto right = binary(o->level + 1);
      if (!right.ok()) return right;
      const uint64_t r = *right;
      const std::string_view t = o->text;
      if (t == "or" || t == "|")
        value |= r;
      else if (t == "xor" || t == "^")
        value ^= r;
      else if (t == "and" || t == "&")
        value &= r;
      else if (t == "==" || t == "=")
        value = value == r;
      else if (t == "!=")
        value = value != r;
      else if (t == "<=")
        value = static_cast<int64_t>(value) <= static_cast<int64_t>(r);
      else if (t == ">=")
        value = static_cast<int64_t>(value) >= static_cast<int64_t>(r);
      else if (t == "<")
        value = static_cast<int64_t>(value) < static_cast<int64_t>(r);
      else if (t == ">")
        value = static_cast<int64_t>(value) > static_cast<int64_t>(r);
      else if (t == "<<")
        value = r >= 64 ? 0 : value << r;
      else if (t == ">>")
        value = r >= 64 ? 0 : value >> r;
      else if (t == ">>>")
        value = static_cast<uint64_t>(static_cast<int64_t>(value) >> (r >= 64 ? 63 : r));
      else if (t == "+")
        value += r;
      else if (t == "-")
        value -= r;
      else if (t == "*")
        value *= r;
      else if (t == "/" || t == "%" || t == "mod") {
        if (r == 0) return absl::InvalidArgumentError("division by zero");
        value = t == "/" ? value / r : value % r;
      }
    }
    return value;
  }

  absl::StatusOr<uint64_t> unary() {
    skip_blanks();
    if (pos_ >= text_.size()) return absl::InvalidArgumentError("an expression was expected");
    const char c = text_[pos_];
    if (c == '-' || c == '+' || c == '~' || c == '!') {
      ++pos_;
      auto v = unary();
      if (!v.ok()) return v;
      if (c == '-') return ~*v + 1;
      if (c == '~') return ~*v;
      if (c == '!') return static_cast<uint64_t>(*v == 0);
      return *v;
    }
    return primary();
  }

  absl::StatusOr<uint64_t> primary() {
    skip_blanks();
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      auto v = expression();
      if (!v.ok()) return v;
      skip_blanks();
      if (pos_ >= text_.size() || text_[pos_] != ')') return absl::InvalidArgumentError("a ')' is missing");
      ++pos_;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '`')) ++end;
      const std::string_view word = text_.substr(pos_, end - pos_);
      auto v = parse_number(word);
      if (!v) return absl::InvalidArgumentError("'" + std::string(word) + "' is not a number");
      pos_ = end;
      return *v;
    }
    if (c == '\'') {
      // A character constant: 'A' is 0x41.
      const size_t close = text_.find('\'', pos_ + 1);
      if (close == std::string_view::npos || close == pos_ + 1 || close - pos_ > 9) {
        return absl::InvalidArgumentError("a character constant is 'x'");
      }
      uint64_t v = 0;
      for (size_t i = pos_ + 1; i < close; ++i) v = v << 8 | static_cast<uint8_t>(text_[i]);
      pos_ = close + 1;
      return v;
    }
    if (!is_ident_start(c)) {
      return absl::InvalidArgumentError(std::string("unexpected '") + c + "' in the expression");
    }
    size_t end = pos_;
    while (end < text_.size() && is_ident_char(text_[end])) ++end;
    // "module!symbol+0x10": '+' ends the name. Symbols may contain '?' and '.', not operators.
    std::string_view word = text_.substr(pos_, end - pos_);
    const std::string name = lower(word);
    // Functions: poi(x) and the sized reads.
    static constexpr std::pair<std::string_view, int> kReads[] = {
        {"poi", 8}, {"qwo", 8}, {"dwo", 4}, {"wo", 2}, {"by", 1}};
    size_t after = end;
    while (after < text_.size() && text_[after] == ' ') ++after;
    if (after < text_.size() && text_[after] == '(') {
      for (const auto& [fname, size] : kReads) {
        if (name == fname) {
          pos_ = after;
          auto address = primary();
          if (!address.ok()) return address;
          auto v = ctx_.read_memory(*address, size);
          if (!v.ok()) return v.status();
          return *v;
        }
      }
      if (name == "hi" || name == "low") {
        pos_ = after;
        auto v = primary();
        if (!v.ok()) return v;
        return name == "hi" ? (*v >> 16) & 0xffff : *v & 0xffff;
      }
    }
    pos_ = end;
    if (word[0] == '@') {
      auto r = ctx_.register_value(name.substr(1));
      if (!r) return absl::NotFoundError("there is no register '" + std::string(word.substr(1)) + "'");
      return *r;
    }
    // A bare word: a hexadecimal number first (MASM's rule), then a register, then a symbol.
    if (auto v = parse_number(word)) return *v;
    if (auto r = ctx_.register_value(name)) return *r;
    auto s = ctx_.symbol_address(word);
    if (s.ok()) return *s;
    if (absl::IsNotFound(s.status())) {
      return absl::NotFoundError("'" + std::string(word) + "' is not a number, register or symbol (" +
                                 std::string(s.status().message()) + ")");
    }
    return s.status();
  }

  std::string_view text_;
  size_t pos_;
  expression_context& ctx_;
};

}  // namespace

std::optional<uint64_t> parse_number(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c != '`') digits += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (digits.empty()) return std::nullopt;
  int radix = 16;
  if (digits.size() > 2 && digits[0] == '0') {
    const char p = digits[1];
    if (p == 'x')
      radix = 16;
    else if (p == 'n')
      radix = 10;
    else if (p == 't')
      radix = 8;
    else if (p == 'y')
      radix = 2;
    if (p == 'x' || p == 'n' || p == 't' || p == 'y') digits = digits.substr(2);
  }
  uint64_t v = 0;
  for (char c : digits) {
    int d = -1;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    if (d < 0 || d >= radix) return std::nullopt;
    const unsigned __int128 next = static_cast<unsigned __int128>(v) * radix + d;
    if (next > UINT64_MAX) return std::nullopt;
    v = static_cast<uint64_t>(next);
  }
  return v;
}

absl::StatusOr<uint64_t> evaluate_prefix(std::string_view text, size_t& pos, expression_context& context) {
  parser p(text, pos, context);
  auto v = p.expression();
  if (!v.ok()) return v;
  p.skip_blanks();
  pos = p.position();
  return v;
}

absl::StatusOr<uint64_t> evaluate(std::string_view text, expression_context& context) {
  size_t pos = 0;
  auto v = evaluate_prefix(text, pos, context);
  if (!v.ok()) return v;
  if (pos < text.size()) {
    return absl::InvalidArgumentError("unexpected '" + std::string(text.substr(pos)) + "' after the expression");
  }
  return v;
}

}  // namespace toolhost::debugger
