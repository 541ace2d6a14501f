#include "data/chat/lexer.h"

#include <cctype>

#include "data/chat/template_error.h"
#include "data/chat/text_utils.h"
#include "data/tokenizer/utf8.h"

namespace gtpo::data::chat {

namespace {

// jinja2 joins the source's lines with "\n" (so \r\n and \r become \n) and drops one final newline.
std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_newlines(const std::string& s, std::size_t from, std::size_t to) {
  int n = 0;
  for (std::size_t i = from; i < to && i < s.size(); ++i) n += s[i] == '\n';
  return n;
}

class Lexer {
 public:
  Lexer(const std::string& source, const std::string& label) : src_(normalize_newlines(source)), label_(label) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const std::size_t at = next_tag(pos_);
      std::string text = src_.substr(pos_, at == std::string::npos ? std::string::npos : at - pos_);
      if (at == std::string::npos) {
        emit_text(text);
        break;
      }
      const char kind = src_[at + 1];  // '{', '%' or '#'
      const char sign = at + 2 < src_.size() && (src_[at + 2] == '-' || src_[at + 2] == '+') ? src_[at + 2] : 0;
      if (sign == '-') {
        text = strip_right(text);
      } else if (sign != '+' && kind != '{') {  // lstrip_blocks: not for {{ }}
        const std::size_t line_begin = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_begin > 0 || line_starting) {
          bool blank = true;
          for (std::size_t i = line_begin; i < text.size(); ++i) blank = blank && (text[i] == ' ' || text[i] == '\t');
          if (blank) text.resize(line_begin);
        }
      }
      emit_text(text);
      line_ += count_newlines(src_, pos_, at);
      pos_ = at + 2 + (sign ? 1 : 0);
      if (kind == '#') line_starting = comment();
      else line_starting = tag(kind == '{');
    }
    tokens_.push_back({Token::Type::End, "", line_});
    return std::move(tokens_);
  }

 private:
  std::size_t next_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string::npos;
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({Token::Type::Text, text, line_});
  }

  template <typename... Parts>
  [[noreturn]] void error(int line, const Parts&... parts) const {
    std::ostringstream os;
    os << label_ << ":" << line << ": syntax error: ";
    detail::append_all(os, parts...);
    throw TemplateError(os.str());
  }

  // Skips whitespace after a `-` end marker; returns whether what it consumed ended a line.
  bool skip_trailing_space() {
    const std::size_t start = pos_;
    while (std::size_t n = space_at(src_, pos_)) pos_ += n;
    line_ += count_newlines(src_, start, pos_);
    return pos_ > start && src_[pos_ - 1] == '\n';
  }

  // trim_blocks: one newline right after a block or comment end is dropped.
  bool trim_newline() {
    if (pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
      return true;
    }
    return false;
  }

  bool comment() {
    const int start_line = line_;
    for (std::size_t i = pos_; i + 1 < src_.size(); ++i) {
      const bool minus = src_[i] == '-' && src_.compare(i + 1, 2, "#}") == 0;
      const bool plus = src_[i] == '+' && src_.compare(i + 1, 2, "#}") == 0;
      if (minus || plus || src_.compare(i, 2, "#}") == 0) {
        line_ += count_newlines(src_, pos_, i);
        pos_ = i + ((minus || plus) ? 3 : 2);
        if (minus) return skip_trailing_space();
        if (plus) return false;
        return trim_newline();
      }
    }
    error(start_line, "missing end of comment tag '#}'");
  }

  // The tokens of one {{ }} or {% %}; returns whether the end consumed a newline (line_starting).
  bool tag(bool variable) {
    const int start_line = line_;
    tokens_.push_back({variable ? Token::Type::VarBegin : Token::Type::BlockBegin, "", line_});
    int depth = 0;  // brackets open: an end marker inside them is an operator, as in jinja2
    while (true) {
      while (pos_ < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos_]))) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size())
        error(start_line, "unexpected end of template, expected end of ", variable ? "print statement '}}'" : "block '%}'");
      if (depth == 0) {
        const std::string close = variable ? "}}" : "%}";
        if (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0) {
          tokens_.push_back({variable ? Token::Type::VarEnd : Token::Type::BlockEnd, "", line_});
          pos_ += 3;
          return skip_trailing_space();
        }
        if (!variable && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, close) == 0) {
          tokens_.push_back({Token::Type::BlockEnd, "", line_});
          pos_ += 3;
          return false;
        }
        if (src_.compare(pos_, 2, close) == 0) {
          tokens_.push_back({variable ? Token::Type::VarEnd : Token::Type::BlockEnd, "", line_});
          pos_ += 2;
          return variable ? false : trim_newline();
        }
      }
      const char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const std::size_t start = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        tokens_.push_back({Token::Type::Name, src_.substr(start, pos_ - start), line_});
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        number();
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "/", "*", "%", "~", "[", "]",
                                           "(", ")", "{", "}", "<", ">", "=", ".", ":", "|", ",", ";"};
        bool matched = false;
        for (const char* op : kOps) {
          const std::string o = op;
          if (src_.compare(pos_, o.size(), o) == 0) {
            if (o == "(" || o == "[" || o == "{") ++depth;
            if ((o == ")" || o == "]" || o == "}") && depth > 0) --depth;
            tokens_.push_back({Token::Type::Op, o, line_});
            pos_ += o.size();
            matched = true;
            break;
          }
        }
        if (!matched) error(line_, "unexpected character '", std::string(1, c), "'");
      }
    }
  }

  void number() {
    const std::size_t start = pos_;
    const auto digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) ||
                                    (src_[pos_] == '_' && pos_ + 1 < src_.size() &&
                                     std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))))
        ++pos_;
    };
    digits();
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
      ++pos_;
      digits();
      is_float = true;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
        pos_ = p;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (std::size_t i = start; i < pos_; ++i)
      if (src_[i] != '_') text += src_[i];
    tokens_.push_back({is_float ? Token::Type::Float : Token::Type::Int, text, line_});
  }

  // A quoted string with Python's escapes (jinja2 decodes them with "unicode-escape").
  void string_literal(char quote) {
    const int start_line = line_;
    std::string out;
    ++pos_;
    while (true) {
      if (pos_ >= src_.size()) error(start_line, "unterminated string");
      const char c = src_[pos_];
      if (c == quote) {
        ++pos_;
        break;
      }
      if (c == '\n') ++line_;
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= src_.size()) error(start_line, "unterminated string");
      const char e = src_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '\n': ++line_; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case 'x': case 'u': case 'U': {
          const std::size_t width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (std::size_t i = 0; i < width; ++i) {
            if (pos_ + i >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_ + i])))
              error(line_, "truncated \\", std::string(1, e), " escape in a string");
            cp = cp * 16 + static_cast<uint32_t>(std::stoi(std::string(1, src_[pos_ + i]), nullptr, 16));
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) error(line_, "escape \\", std::string(1, e), " is not a valid code point");
          pos_ += width;
          utf8_append(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++i, ++pos_)
              cp = cp * 8 + static_cast<uint32_t>(src_[pos_] - '0');
            utf8_append(out, cp);
          } else if (e == 'N') {
            error(line_, "\\N{...} escapes are not supported");
          } else {
            out += '\\';  // Python keeps unknown escapes as they are
            out += e;
          }
      }
    }
    tokens_.push_back({Token::Type::String, out, start_line});
  }

  std::string src_;
  const std::string& label_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& label) {
  return Lexer(source, label).run();
}

}  // namespace gtpo::data::chat
