// Template::render: walks the statement tree with jinja2's scoping (a for loop's body has its own scope per
// iteration; if/elif do not; macros see the template's top-level names and their parameters).
#include <unordered_map>

#include "data/chat/filters.h"
#include "data/chat/lexer.h"
#include "data/chat/parser.h"
#include "data/chat/python_format.h"
#include "data/chat/python_ops.h"
#include "data/chat/template.h"
#include "data/chat/template_error.h"
#include "data/chat/text_utils.h"
#include "data/chat/value_tests.h"

namespace gtpo::data::chat {

namespace {

struct Scope {
  std::unordered_map<std::string, Value> vars;
  const Scope* parent = nullptr;

  Value lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return it->second;
    }
    return Value::undefined(name);
  }
};

enum class Flow { Normal, Break, Continue };

int64_t int_argument(const CallArgs& args, std::size_t index, const char* what) {
  const Value* v = args.get(index, "");
  if (!v || (v->kind != Value::Kind::Int && v->kind != Value::Kind::Bool))
    value_error(what, ": expected an integer argument");
  return v->kind == Value::Kind::Bool ? v->boolean : v->integer;
}

// range(stop) / range(start, stop[, step]), capped as jinja2's sandbox caps it (MAX_RANGE).
Value builtin_range(CallArgs& args, int) {
  constexpr int64_t kMaxRange = 100000;
  const std::size_t n = args.positional.size();
  if (n < 1 || n > 3) value_error("range expected 1 to 3 integer arguments, got ", n);
  int64_t start = 0, stop = 0, step = 1;
  if (n == 1) stop = int_argument(args, 0, "range");
  else {
    start = int_argument(args, 0, "range");
    stop = int_argument(args, 1, "range");
    if (n == 3) step = int_argument(args, 2, "range");
  }
  if (step == 0) value_error("range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange)
      value_error("range too big: the sandbox allows at most ", kMaxRange, " items");
    out.push_back(Value::from_int(i));
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::from_list(std::move(out));
}

Value builtin_namespace(CallArgs& args, int) {
  std::vector<std::pair<std::string, Value>> items;
  for (const Value& v : args.positional) {
    if (v.kind != Value::Kind::Dict) value_error("namespace() takes only a mapping as positional argument");
    for (const auto& entry : v.dict->entries) items.push_back(entry);
  }
  for (const auto& entry : args.keyword) items.push_back(entry);
  return Value::new_namespace(std::move(items));
}

Value builtin_dict(CallArgs& args, int) {
  std::vector<std::pair<std::string, Value>> items;
  for (const Value& v : args.positional) {
    if (v.kind != Value::Kind::Dict) value_error("dict() takes only a mapping as positional argument here");
    for (const auto& entry : v.dict->entries) items.push_back(entry);
  }
  for (const auto& entry : args.keyword) items.push_back(entry);
  return Value::from_dict(std::move(items));
}

class Renderer {
 public:
  Renderer(const std::string& label, const RenderLimits& limits) : label_(label), limits_(limits) {
    filter_limits_.max_bytes = limits.max_output_bytes;
    filter_limits_.steps = &steps_;
    filter_limits_.max_steps = limits.max_steps;
  }

  std::string run(const Body& body, const Variables& variables) {
    root_.vars["range"] = Value::from_function(builtin_range);
    root_.vars["namespace"] = Value::from_function(builtin_namespace);
    root_.vars["dict"] = Value::from_function(builtin_dict);
    for (const auto& [name, value] : variables) root_.vars[name] = value;
    std::string out;
    exec(body, root_, out);
    return out;
  }

 private:
  template <typename... Parts>
  [[noreturn]] void error(int line, const Parts&... parts) const {
    std::ostringstream os;
    os << label_ << ":" << line << ": ";
    detail::append_all(os, parts...);
    throw TemplateError(os.str());
  }

  // Bounds the C++ recursion of exec/eval (macros calling macros inside deep blocks): an error, not a crash.
  struct DepthGuard {
    Renderer& r;
    DepthGuard(Renderer& renderer, int line) : r(renderer) {
      if (++r.depth_ > r.limits_.max_depth)
        r.error(line, "evaluation nested deeper than ", r.limits_.max_depth, " (RenderLimits::max_depth)");
    }
    ~DepthGuard() { --r.depth_; }
  };

  void step(int line) {
    if (++steps_ > limits_.max_steps)
      error(line, "the template ran more than ", limits_.max_steps, " steps (RenderLimits::max_steps)");
  }

  void append(std::string& out, const std::string& text, int line) {
    if (out.size() + text.size() > limits_.max_output_bytes)
      error(line, "output longer than ", limits_.max_output_bytes, " bytes (RenderLimits::max_output_bytes)");
    out += text;
  }

  // ---- statements ----
  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow flow = exec_one(*s, scope, out);
      if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
  }

  Flow exec_one(const Stmt& s, Scope& scope, std::string& out) {
    step(s.line);
    DepthGuard guard(*this, s.line);
    try {
      switch (s.kind) {
        case Stmt::Kind::Text: append(out, s.text, s.line); return Flow::Normal;
        case Stmt::Kind::Output: append(out, to_str(eval(*s.expr, scope)), s.line); return Flow::Normal;
        case Stmt::Kind::If:
          for (const auto& [cond, body] : s.branches)
            if (truthy(eval(*cond, scope))) return exec(body, scope, out);
          return exec(s.else_body, scope, out);
        case Stmt::Kind::For: return exec_for(s, scope, out);
        case Stmt::Kind::Set: assign(s, eval(*s.expr, scope), scope); return Flow::Normal;
        case Stmt::Kind::SetBlock: {
          std::string captured;
          Scope inner{{}, &scope};
          exec(s.body, inner, captured);
          Value v = Value::from_string(std::move(captured));
          if (s.expr) v = apply_chain(*s.expr, std::move(v), scope);
          scope.vars[s.targets[0]] = std::move(v);
          return Flow::Normal;
        }
        case Stmt::Kind::FilterBlock: {
          std::string captured;
          const Flow flow = exec(s.body, scope, captured);
          append(out, to_str(apply_chain(*s.expr, Value::from_string(std::move(captured)), scope)), s.line);
          return flow;
        }
        case Stmt::Kind::Plain: return exec(s.body, scope, out);
        case Stmt::Kind::Macro: scope.vars[s.name] = make_macro(s); return Flow::Normal;
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
      }
    } catch (const ValueError& e) {
      error(s.line, e.what());
    }
    return Flow::Normal;
  }

  void bind_targets(const std::vector<std::string>& targets, const Value& value, Scope& scope) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = value;
      return;
    }
    const std::vector<Value> parts = iterate(value);
    if (parts.size() != targets.size())
      value_error(parts.size() < targets.size() ? "not enough" : "too many", " values to unpack (expected ",
                  targets.size(), ", got ", parts.size(), ")");
    for (std::size_t i = 0; i < targets.size(); ++i) scope.vars[targets[i]] = parts[i];
  }

  void assign(const Stmt& s, Value value, Scope& scope) {
    if (!s.attribute.empty()) {
      const Value ns = scope.lookup(s.targets[0]);
      if (ns.kind != Value::Kind::Namespace)
        value_error("cannot assign attribute '", s.attribute, "' on '", s.targets[0], "' (", type_name(ns),
                    "): only a namespace() takes attributes");
      ns.dict->set(s.attribute, std::move(value));
      return;
    }
    bind_targets(s.targets, value, scope);
  }

  Flow exec_for(const Stmt& s, Scope& scope, std::string& out) {
    std::vector<Value> items = iterate(eval(*s.expr, scope));
    if (s.loop_filter) {
      std::vector<Value> kept;
      for (Value& item : items) {
        step(s.line);
        Scope probe{{}, &scope};
        bind_targets(s.targets, item, probe);
        if (truthy(eval(*s.loop_filter, probe))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      step(s.line);
      Scope iteration{{}, &scope};
      bind_targets(s.targets, items[static_cast<std::size_t>(i)], iteration);
      iteration.vars["loop"] = loop_object(items, i);
      const Flow flow = exec(s.body, iteration, out);
      if (flow == Flow::Break) break;
    }
    if (n == 0) return exec(s.else_body, scope, out);
    return Flow::Normal;
  }

  static Value loop_object(const std::vector<Value>& items, int64_t i) {
    const int64_t n = static_cast<int64_t>(items.size());
    std::vector<std::pair<std::string, Value>> fields = {
        {"index", Value::from_int(i + 1)},        {"index0", Value::from_int(i)},
        {"revindex", Value::from_int(n - i)},     {"revindex0", Value::from_int(n - i - 1)},
        {"first", Value::from_bool(i == 0)},      {"last", Value::from_bool(i == n - 1)},
        {"length", Value::from_int(n)},           {"depth", Value::from_int(1)},
        {"depth0", Value::from_int(0)},
        {"previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("loop.previtem")},
        {"nextitem", i + 1 < n ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("loop.nextitem")},
        {"cycle", Value::from_function([i](CallArgs& args, int) {
           if (args.positional.empty()) value_error("loop.cycle needs at least one argument");
           return args.positional[static_cast<std::size_t>(i) % args.positional.size()];
         })}};
    return Value::from_dict(std::move(fields));
  }

  Value make_macro(const Stmt& s) {
    const Stmt* macro = &s;
    return Value::from_function([this, macro](CallArgs& args, int line) { return call_macro(*macro, args, line); });
  }

  Value call_macro(const Stmt& m, CallArgs& args, int line) {
    if (call_depth_ >= limits_.max_call_depth)
      error(line, "macro calls nested deeper than ", limits_.max_call_depth, " (RenderLimits::max_call_depth)");
    Scope frame{{}, &root_};
    std::vector<Value> extra;
    for (std::size_t i = 0; i < args.positional.size(); ++i) {
      if (i < m.params.size()) frame.vars[m.params[i].first] = args.positional[i];
      else extra.push_back(args.positional[i]);
    }
    std::vector<std::pair<std::string, Value>> extra_kwargs;
    for (const auto& [k, v] : args.keyword) {
      bool is_param = false;
      for (const auto& p : m.params) is_param = is_param || p.first == k;
      if (is_param) frame.vars[k] = v;
      else extra_kwargs.emplace_back(k, v);
    }
    for (const auto& [name, fallback] : m.params)
      if (!frame.vars.count(name)) frame.vars[name] = fallback ? eval(*fallback, frame) : Value::undefined(name);
    frame.vars["varargs"] = Value::from_list(std::move(extra), true);
    frame.vars["kwargs"] = Value::from_dict(std::move(extra_kwargs));
    ++call_depth_;
    std::string out;
    exec(m.body, frame, out);  // an error ends the whole render, so no unwinding of the count is needed
    --call_depth_;
    return Value::from_string(std::move(out));
  }

  // A filter chain parsed over a placeholder (block set, filter block) applied to VALUE.
  Value apply_chain(const Expr& chain, Value value, Scope& scope) {
    if (chain.kind != Expr::Kind::Filter) return value;
    Value inner = apply_chain(*chain.a, std::move(value), scope);
    CallArgs args = eval_args(chain, scope);
    return apply_filter(chain.name, inner, args, filter_limits_);
  }

  // ---- expressions ----
  CallArgs eval_args(const Expr& e, Scope& scope) {
    CallArgs args;
    for (const ExprPtr& a : e.args) args.positional.push_back(eval(*a, scope));
    for (const auto& [k, a] : e.kwargs) args.keyword.emplace_back(k, eval(*a, scope));
    return args;
  }

  static std::optional<int64_t> slice_bound(const Value& v) {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (v.kind == Value::Kind::Int) return v.integer;
    if (v.kind == Value::Kind::Bool) return v.boolean ? 1 : 0;
    value_error("slice indices must be integers or None, not ", type_name(v));
  }

  Value eval(const Expr& e, Scope& scope) {
    step(e.line);
    DepthGuard guard(*this, e.line);
    try {
      Value v = eval_inner(e, scope);
      if (v.is_string()) {
        produced_ += v.text.size();
        if (produced_ > limits_.max_string_bytes)
          error(e.line, "the template built more than ", limits_.max_string_bytes,
                " bytes of strings (RenderLimits::max_string_bytes)");
        if (v.text.size() > limits_.max_output_bytes)
          error(e.line, "a string longer than ", limits_.max_output_bytes, " bytes (RenderLimits::max_output_bytes)");
      }
      return v;
    } catch (const ValueError& err) {
      error(e.line, err.what());
    }
  }

  // {k: v, ...}: string keys only.
  Value eval_dict(const Expr& e, Scope& scope) {
    std::vector<std::pair<std::string, Value>> items;
    for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
      Value key = eval(*e.args[i], scope);
      if (!key.is_string())
        value_error("dict keys must be strings in gtpo's templates, got ", type_name(key));
      items.emplace_back(std::move(key.text), eval(*e.args[i + 1], scope));
    }
    return Value::from_dict(std::move(items));
  }

  Value eval_call(const Expr& e, Scope& scope) {
    Value callee = eval(*e.a, scope);
    CallArgs args = eval_args(e, scope);
    if (callee.kind != Value::Kind::Callable) {
      if (callee.is_undefined())
        value_error("'", callee.text.empty() ? "value" : callee.text,
                    "' is undefined (called as a function)");
      value_error("'", type_name(callee), "' object is not callable");
    }
    return (*callee.function)(args, e.line);
  }

  // a < b <= c ...: Python's chained comparison, each operand evaluated once, stopping at the first false.
  Value eval_compare(const Expr& e, Scope& scope) {
    Value left = eval(*e.a, scope);
    for (std::size_t i = 0; i < e.ops.size(); ++i) {
      Value right = eval(*e.args[i], scope);
      const std::string& op = e.ops[i];
      bool ok = false;
      if (op == "==")
        ok = equals(left, right);
      else if (op == "!=")
        ok = !equals(left, right);
      else if (op == "<")
        ok = less(left, right);
      else if (op == ">")
        ok = less(right, left);
      else if (op == "<=")
        ok = less(left, right) || equals(left, right);
      else if (op == ">=")
        ok = less(right, left) || equals(left, right);
      else if (op == "in")
        ok = contains(right, left);
      else
        ok = !contains(right, left);
      if (!ok) return Value::from_bool(false);
      left = std::move(right);
    }
    return Value::from_bool(true);
  }

  Value eval_inner(const Expr& e, Scope& scope) {
    using K = Expr::Kind;
    switch (e.kind) {
      case K::Literal: return e.value;
      case K::Name: return scope.lookup(e.name);
      case K::List: {
        std::vector<Value> items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
        return Value::from_list(std::move(items), e.is_tuple);
      }
      case K::Dict: return eval_dict(e, scope);
      case K::GetAttr: return get_attribute(eval(*e.a, scope), e.name);
      case K::GetItem: {
        Value container = eval(*e.a, scope);
        return subscript(container, eval(*e.b, scope));
      }
      case K::Slice: {
        Value container = eval(*e.a, scope);
        const auto bound = [&](const ExprPtr& p) { return p ? slice_bound(eval(*p, scope)) : std::nullopt; };
        const auto start = bound(e.b), stop = bound(e.c), step_value = bound(e.d);
        return slice(container, start, stop, step_value);
      }
      case K::Call: return eval_call(e, scope);
      case K::Filter: {
        Value v = eval(*e.a, scope);
        CallArgs args = eval_args(e, scope);
        return apply_filter(e.name, v, args, filter_limits_);
      }
      case K::Test: {
        Value v = eval(*e.a, scope);
        CallArgs args = eval_args(e, scope);
        return Value::from_bool(apply_test(e.name, v, args) != e.negated);
      }
      case K::Not: return Value::from_bool(!truthy(eval(*e.a, scope)));
      case K::Negate: return negate(eval(*e.a, scope));
      case K::Plus: {
        Value v = eval(*e.a, scope);
        if (!v.is_number()) value_error("bad operand type for unary +: '", type_name(v), "'");
        return v.kind == Value::Kind::Bool ? Value::from_int(v.boolean) : v;
      }
      case K::Binary: {
        Value a = eval(*e.a, scope);
        Value b = eval(*e.b, scope);
        if (e.name == "~") {
          std::string left = to_str(a), right = to_str(b);
          if (left.size() + right.size() > limits_.max_output_bytes) value_error("string longer than the output limit");
          WorkMeter::charge(left.size() + right.size());
          return Value::from_string(left + right);
        }
        return arithmetic(e.name, a, b, limits_.max_output_bytes);
      }
      case K::And: {
        Value a = eval(*e.a, scope);
        return truthy(a) ? eval(*e.b, scope) : a;
      }
      case K::Or: {
        Value a = eval(*e.a, scope);
        return truthy(a) ? a : eval(*e.b, scope);
      }
      case K::Compare: return eval_compare(e, scope);
      case K::Condition:
        if (truthy(eval(*e.b, scope))) return eval(*e.a, scope);
        return e.c ? eval(*e.c, scope) : Value::undefined();
    }
    return Value::undefined();
  }

  const std::string& label_;
  const RenderLimits& limits_;
  FilterLimits filter_limits_;
  Scope root_;
  uint64_t steps_ = 0;
  WorkMeter meter_{steps_, limits_.max_steps};  // operations' work counts in steps_ too
  std::size_t produced_ = 0;
  int call_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Template::Template(const std::string& source, std::string label) : label_(std::move(label)) {
  body_ = parse_template(tokenize(source, label_), label_);
}

std::string Template::render(const Variables& variables, const RenderLimits& limits) const {
  return Renderer(label_, limits).run(body_, variables);
}

}  // namespace gtpo::data::chat
