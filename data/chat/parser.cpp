#include "data/chat/parser.h"

#include <cerrno>
#include <cstdlib>
#include <set>

#include "data/chat/template_error.h"

namespace gtpo::data::chat {

namespace {

using T = Token::Type;

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

StmtPtr make_stmt(Stmt::Kind kind, int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = line;
  return s;
}

std::string describe(const Token& t) {
  switch (t.type) {
    case T::End: return "end of template";
    case T::VarEnd: return "'}}'";
    case T::BlockEnd: return "'%}'";
    case T::String: return "string";
    case T::Text: return "template text";
    default: return "'" + t.text + "'";
  }
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const std::string& label) : tokens_(tokens), label_(label) {}

  Body parse() {
    Body body = parse_body({}, nullptr);
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const std::string& op, std::size_t ahead = 0) const {
    return peek(ahead).type == T::Op && peek(ahead).text == op;
  }
  bool is_name(const std::string& name, std::size_t ahead = 0) const {
    return peek(ahead).type == T::Name && peek(ahead).text == name;
  }
  bool skip_op(const std::string& op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const std::string& name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  template <typename... Parts>
  [[noreturn]] void error(int line, const Parts&... parts) const {
    std::ostringstream os;
    os << label_ << ":" << line << ": syntax error: ";
    detail::append_all(os, parts...);
    throw TemplateError(os.str());
  }

  void expect_op(const std::string& op) {
    if (!skip_op(op)) error(peek().line, "expected '", op, "', got ", describe(peek()));
  }
  std::string expect_name(const char* what) {
    if (peek().type != T::Name) error(peek().line, "expected ", what, ", got ", describe(peek()));
    return next().text;
  }
  void expect_block_end(const char* tag) {
    if (peek().type != T::BlockEnd) error(peek().line, "expected '%}' to end the '", tag, "' tag, got ", describe(peek()));
    next();
  }

  void chain_step(int& chain, int line) {
    if (depth_ + ++chain > kMaxNesting) error(line, "expression nested or chained deeper than ", kMaxNesting, " levels");
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser, int line) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.error(line, "nesting deeper than ", kMaxNesting, " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ---- statements ----
  // Parses until one of END_TAGS opens a block tag; stores that tag name in *ENDED (consumed with its name).
  Body parse_body(const std::set<std::string>& end_tags, std::string* ended, int open_line = 0,
                  const char* open_tag = nullptr) {
    DepthGuard guard(*this, peek().line);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.type == T::End) {
        if (!end_tags.empty()) {
          std::string wanted;
          for (const std::string& e : end_tags) wanted += (wanted.empty() ? "'" : " or '") + e + "'";
          error(t.line, "unexpected end of template: expected ", wanted, " to close the '", open_tag,
                "' block opened on line ", open_line);
        }
        return body;
      }
      if (t.type == T::Text) {
        auto s = make_stmt(Stmt::Kind::Text, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == T::VarBegin) {
        next();
        auto s = make_stmt(Stmt::Kind::Output, t.line);
        s->expr = parse_tuple();
        if (peek().type != T::VarEnd) error(peek().line, "expected '}}', got ", describe(peek()));
        next();
        body.push_back(std::move(s));
      } else if (t.type == T::BlockBegin) {
        next();
        const Token& name = peek();
        if (name.type != T::Name) error(name.line, "expected a tag name after '{%', got ", describe(name));
        if (end_tags.count(name.text)) {
          next();
          *ended = name.text;
          return body;
        }
        body.push_back(parse_statement(end_tags));
      } else {
        error(t.line, "unexpected ", describe(t));
      }
    }
  }

  StmtPtr parse_statement(const std::set<std::string>& outer_end_tags) {
    const Token& tag = next();
    const std::string& name = tag.text;
    const int line = tag.line;
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "macro") return parse_macro(line);
    if (name == "break" || name == "continue") {
      expect_block_end(name.c_str());
      if (loop_depth_ == 0) error(line, "'", name, "' outside a for loop");
      return make_stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, line);
    }
    if (name == "filter") {
      auto s = make_stmt(Stmt::Kind::FilterBlock, line);
      auto first = make(Expr::Kind::Filter, peek().line);  // {% filter name(args) | more %}
      first->name = expect_name("a filter name after 'filter'");
      if (is_op("(")) parse_call_args(*first);
      first->a = make(Expr::Kind::Literal, line);
      s->expr = parse_filter_chain(std::move(first));
      expect_block_end("filter");
      std::string ended;
      s->body = parse_body({"endfilter"}, &ended, line, "filter");
      expect_block_end("endfilter");
      return s;
    }
    if (name == "generation") {  // transformers' AssistantTracker: marks assistant text, renders as is
      expect_block_end("generation");
      auto s = make_stmt(Stmt::Kind::Plain, line);
      std::string ended;
      s->body = parse_body({"endgeneration"}, &ended, line, "generation");
      expect_block_end("endgeneration");
      return s;
    }
    static const std::set<std::string> known_unsupported = {"include", "extends", "block", "import", "from", "call",
                                                              "with", "raw", "autoescape", "do", "trans"};
    if (known_unsupported.count(name)) error(line, "tag '", name, "' is not supported by gtpo's chat templates");
    std::string expected;
    for (const std::string& e : outer_end_tags) expected += (expected.empty() ? "'" : " or '") + e + "'";
    error(line, "unknown tag '", name, "'", expected.empty() ? "" : " (the innermost open block expects " + expected + ")");
  }

  StmtPtr parse_if(int line) {
    auto s = make_stmt(Stmt::Kind::If, line);
    ExprPtr cond = parse_expression();
    expect_block_end("if");
    while (true) {
      std::string ended;
      Body body = parse_body({"elif", "else", "endif"}, &ended, line, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (ended == "elif") {
        cond = parse_expression();
        expect_block_end("elif");
        continue;
      }
      if (ended == "else") {
        expect_block_end("else");
        s->else_body = parse_body({"endif"}, &ended, line, "if");
      }
      expect_block_end("endif");
      return s;
    }
  }

  std::vector<std::string> parse_targets(const char* tag) {
    const std::string what = std::string("a variable name in '") + tag + "'";
    std::vector<std::string> names;
    const bool parens = skip_op("(");
    names.push_back(expect_name(what.c_str()));
    while (skip_op(",")) {
      if (is_name("in") || is_op(")")) break;
      names.push_back(expect_name(what.c_str()));
    }
    if (parens) expect_op(")");
    return names;
  }

  StmtPtr parse_for(int line) {
    auto s = make_stmt(Stmt::Kind::For, line);
    s->targets = parse_targets("for");
    if (!skip_name("in")) error(peek().line, "expected 'in' in the 'for' tag, got ", describe(peek()));
    s->expr = parse_tuple(/*with_condition=*/false);
    if (skip_name("if")) s->loop_filter = parse_expression();
    if (is_name("recursive")) error(peek().line, "recursive for loops are not supported");
    expect_block_end("for");
    ++loop_depth_;
    std::string ended;
    s->body = parse_body({"else", "endfor"}, &ended, line, "for");
    --loop_depth_;
    if (ended == "else") {
      expect_block_end("else");
      s->else_body = parse_body({"endfor"}, &ended, line, "for");
    }
    expect_block_end("endfor");
    return s;
  }

  StmtPtr parse_set(int line) {
    std::vector<std::string> targets;
    std::string attribute;
    targets.push_back(expect_name("a variable name after 'set'"));
    if (skip_op(".")) {
      attribute = expect_name("an attribute name after '.'");
    } else {
      while (skip_op(",")) targets.push_back(expect_name("a variable name"));
    }
    if (skip_op("=")) {
      auto s = make_stmt(Stmt::Kind::Set, line);
      s->targets = std::move(targets);
      s->attribute = attribute;
      s->expr = parse_tuple();
      expect_block_end("set");
      return s;
    }
    if (!attribute.empty() || targets.size() != 1) error(peek().line, "expected '=' in the 'set' tag, got ", describe(peek()));
    auto s = make_stmt(Stmt::Kind::SetBlock, line);
    s->targets = std::move(targets);
    if (is_op("|")) s->expr = parse_filter_chain(make(Expr::Kind::Literal, line));
    if (peek().type != T::BlockEnd) error(peek().line, "expected '=' or '%}' in the 'set' tag, got ", describe(peek()));
    next();
    std::string ended;
    s->body = parse_body({"endset"}, &ended, line, "set");
    expect_block_end("endset");
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = make_stmt(Stmt::Kind::Macro, line);
    s->name = expect_name("the macro's name");
    expect_op("(");
    while (!is_op(")")) {
      std::string param = expect_name("a parameter name");
      ExprPtr fallback;
      if (skip_op("=")) fallback = parse_expression();
      s->params.emplace_back(std::move(param), std::move(fallback));
      if (!skip_op(",")) break;
    }
    expect_op(")");
    expect_block_end("macro");
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string ended;
    s->body = parse_body({"endmacro"}, &ended, line, "macro");
    loop_depth_ = saved_loops;
    expect_block_end("endmacro");
    return s;
  }

  // ---- expressions ----
  bool at_expression_end() const {
    const Token& t = peek();
    return t.type == T::VarEnd || t.type == T::BlockEnd || t.type == T::End || is_op(")") || is_op("]") ||
           is_op("}") || (t.type == T::Name && (t.text == "in" || t.text == "if"));
  }

  ExprPtr parse_tuple(bool with_condition = true) {
    const int line = peek().line;
    ExprPtr first = with_condition ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    auto tuple = make(Expr::Kind::List, line);
    tuple->is_tuple = true;
    tuple->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (at_expression_end()) break;
      tuple->args.push_back(with_condition ? parse_expression() : parse_or());
    }
    return tuple;
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this, peek().line);
    const int line = peek().line;
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
      auto cond = make(Expr::Kind::Condition, line);
      cond->b = parse_or();
      if (skip_name("else")) cond->c = parse_expression();
      cond->a = std::move(expr);
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr binary(Expr::Kind kind, ExprPtr a, ExprPtr b, int line, const std::string& op = "") {
    auto e = make(kind, line);
    e->a = std::move(a);
    e->b = std::move(b);
    e->name = op;
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    int chain = 0;  // a left-deep tree grows here without recursion: bound its depth too
    while (is_name("or")) {
      chain_step(chain, peek().line);
      const int line = next().line;
      left = binary(Expr::Kind::Or, std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    int chain = 0;
    while (is_name("and")) {
      chain_step(chain, peek().line);
      const int line = next().line;
      left = binary(Expr::Kind::And, std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this, peek().line);
      auto e = make(Expr::Kind::Not, next().line);
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = peek().line;
    ExprPtr first = parse_math1();
    auto cmp = make(Expr::Kind::Compare, line);
    while (true) {
      static const std::set<std::string> ops = {"==", "!=", "<", ">", "<=", ">="};
      if (peek().type == T::Op && ops.count(peek().text)) {
        cmp->ops.push_back(next().text);
      } else if (is_name("in")) {
        next();
        cmp->ops.push_back("in");
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        cmp->ops.push_back("not in");
      } else {
        break;
      }
      cmp->args.push_back(parse_math1());
    }
    if (cmp->ops.empty()) return first;
    cmp->a = std::move(first);
    return cmp;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    int chain = 0;
    while (is_op("+") || is_op("-")) {
      chain_step(chain, peek().line);
      const Token& op = next();
      left = binary(Expr::Kind::Binary, std::move(left), parse_concat(), op.line, op.text);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    int chain = 0;
    while (is_op("~")) {
      chain_step(chain, peek().line);
      const int line = next().line;
      left = binary(Expr::Kind::Binary, std::move(left), parse_math2(), line, "~");
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    int chain = 0;
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      chain_step(chain, peek().line);
      const Token& op = next();
      left = binary(Expr::Kind::Binary, std::move(left), parse_pow(), op.line, op.text);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    int chain = 0;
    while (is_op("**")) {
      chain_step(chain, peek().line);
      const int line = next().line;
      left = binary(Expr::Kind::Binary, std::move(left), parse_unary(true), line, "**");
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this, peek().line);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token& op = next();
      node = make(op.text == "-" ? Expr::Kind::Negate : Expr::Kind::Plus, op.line);
      node->a = parse_unary(false);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = peek();
    if (t.type == T::Name) return parse_name(next());
    if (t.type == T::String || t.type == T::Int || t.type == T::Float) return parse_number_or_string();
    if (is_op("(")) return parse_parenthesized(next().line);
    if (is_op("[")) {
      const int line = next().line;
      auto e = make(Expr::Kind::List, line);
      while (!is_op("]")) {
        e->args.push_back(parse_expression());
        if (!skip_op(",")) break;
      }
      expect_op("]");
      return e;
    }
    if (is_op("{")) {
      const int line = next().line;
      auto e = make(Expr::Kind::Dict, line);
      while (!is_op("}")) {
        e->args.push_back(parse_expression());
        expect_op(":");
        e->args.push_back(parse_expression());
        if (!skip_op(",")) break;
      }
      expect_op("}");
      return e;
    }
    error(t.line, "unexpected ", describe(t), ", expected an expression");
  }

  // true / True / false / False, none / None, or a variable.
  ExprPtr parse_name(const Token& t) {
    if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
      auto e = make(Expr::Kind::Literal, t.line);
      e->value = Value::from_bool(t.text == "true" || t.text == "True");
      return e;
    }
    if (t.text == "none" || t.text == "None") {
      auto e = make(Expr::Kind::Literal, t.line);
      e->value = Value::none();
      return e;
    }
    auto e = make(Expr::Kind::Name, t.line);
    e->name = t.text;
    return e;
  }

  ExprPtr parse_number_or_string() {
    const Token& t = peek();
    auto e = make(Expr::Kind::Literal, t.line);
    if (t.type == T::String) {
      std::string text;
      while (peek().type == T::String) text += next().text;  // adjacent literals concatenate
      e->value = Value::from_string(text);
    } else if (t.type == T::Int) {
      next();
      errno = 0;
      const long long v = std::strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE) error(t.line, "integer literal ", t.text, " does not fit in 64 bits");
      e->value = Value::from_int(v);
    } else {
      next();
      e->value = Value::from_float(std::strtod(t.text.c_str(), nullptr));
    }
    return e;
  }

  // After "(": an empty tuple, a parenthesised expression or a tuple.
  ExprPtr parse_parenthesized(int open_line) {
    if (skip_op(")")) {
      auto e = make(Expr::Kind::List, open_line);
      e->is_tuple = true;
      return e;
    }
    const int line = peek().line;
    ExprPtr first = parse_expression();
    if (is_op(",")) {
      auto tuple = make(Expr::Kind::List, line);
      tuple->is_tuple = true;
      tuple->args.push_back(std::move(first));
      while (skip_op(",") && !is_op(")")) tuple->args.push_back(parse_expression());
      first = std::move(tuple);
    }
    expect_op(")");
    return first;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().type == T::Name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!call.kwargs.empty()) error(peek().line, "a positional argument follows a keyword argument");
        call.args.push_back(parse_expression());
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    int chain = 0;
    while (true) {
      chain_step(chain, peek().line);
      const int line = peek().line;
      if (is_op(".")) {
        next();
        if (peek().type == T::Name) {
          auto e = make(Expr::Kind::GetAttr, line);
          e->name = next().text;
          e->a = std::move(node);
          node = std::move(e);
        } else if (peek().type == T::Int) {
          auto e = make(Expr::Kind::GetItem, line);
          e->b = make(Expr::Kind::Literal, line);
          e->b->value = Value::from_int(std::strtoll(next().text.c_str(), nullptr, 10));
          e->a = std::move(node);
          node = std::move(e);
        } else {
          error(line, "expected an attribute name after '.', got ", describe(peek()));
        }
      } else if (is_op("[")) {
        next();
        node = parse_subscript(std::move(node), line);
      } else if (is_op("(")) {
        auto call = make(Expr::Kind::Call, line);
        call->a = std::move(node);
        parse_call_args(*call);
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    int index = 0;
    bool is_slice = false;
    while (true) {
      if (is_op(":")) {
        next();
        is_slice = true;
        if (++index > 2) error(line, "a slice has at most three parts");
        continue;
      }
      if (is_op("]")) break;
      if (parts[index]) error(peek().line, "expected ':' or ']' in a subscript, got ", describe(peek()));
      parts[index] = parse_expression();
    }
    expect_op("]");
    if (!is_slice) {
      if (!parts[0]) error(line, "empty subscript '[]'");
      auto e = make(Expr::Kind::GetItem, line);
      e->a = std::move(target);
      e->b = std::move(parts[0]);
      return e;
    }
    auto e = make(Expr::Kind::Slice, line);
    e->a = std::move(target);
    e->b = std::move(parts[0]);
    e->c = std::move(parts[1]);
    e->d = std::move(parts[2]);
    return e;
  }

  ExprPtr parse_filter_chain(ExprPtr node) {
    int chain = 0;
    while (skip_op("|")) {
      chain_step(chain, peek().line);
      const int line = peek().line;
      auto f = make(Expr::Kind::Filter, line);
      f->name = expect_name("a filter name after '|'");
      if (is_op("(")) parse_call_args(*f);
      f->a = std::move(node);
      node = std::move(f);
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    int chain = 0;
    while (true) {
      chain_step(chain, peek().line);
      if (is_op("|")) {
        node = parse_filter_chain(std::move(node));
      } else if (is_name("is")) {
        const int line = next().line;
        auto test = make(Expr::Kind::Test, line);
        test->negated = skip_name("not");
        test->name = expect_name("a test name after 'is'");
        const Token& t = peek();
        if (is_op("(")) {
          parse_call_args(*test);
        } else if ((t.type == T::Name || t.type == T::String || t.type == T::Int || t.type == T::Float ||
                    is_op("[") || is_op("{")) &&
                   !(is_name("else") || is_name("or") || is_name("and"))) {
          if (is_name("is")) error(t.line, "you cannot chain multiple tests with 'is'");
          test->args.push_back(parse_postfix(parse_primary()));
        }
        test->a = std::move(node);
        node = std::move(test);
      } else if (is_op("(")) {
        node = parse_postfix(std::move(node));
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& tokens_;
  const std::string& label_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens, const std::string& label) {
  return Parser(tokens, label).parse();
}

}  // namespace gtpo::data::chat
