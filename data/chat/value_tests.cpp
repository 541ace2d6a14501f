#include "data/chat/value_tests.h"

#include <cctype>
#include <cmath>

#include "data/chat/python_format.h"
#include "data/chat/python_ops.h"
#include "data/chat/template_error.h"

namespace gtpo::data::chat {

namespace {

const Value& argument(const CallArgs& args, const std::string& test) {
  const Value* v = args.get(0, "other");
  if (!v) value_error("test '", test, "' needs an argument");
  return *v;
}

bool integral(const Value& v, const std::string& test) {
  if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool)
    value_error("test '", test, "' needs an integer, got ", type_name(v));
  return true;
}

int64_t int_of(const Value& v) { return v.kind == Value::Kind::Bool ? v.boolean : v.integer; }

}  // namespace

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.kind == K::Dict;
  if (name == "iterable") return v.kind == K::List || v.kind == K::Dict || v.is_string() || v.is_undefined();
  if (name == "sequence") return v.kind == K::List || v.kind == K::Dict || v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "true") return v.kind == K::Bool && v.boolean;
  if (name == "false") return v.kind == K::Bool && !v.boolean;
  if (name == "callable") return v.kind == K::Callable;
  if (name == "even") return integral(v, name) && int_of(v) % 2 == 0;
  if (name == "odd") return integral(v, name) && int_of(v) % 2 != 0;
  if (name == "divisibleby") {
    const Value& n = argument(args, name);
    integral(v, name);
    integral(n, name);
    if (int_of(n) == 0) value_error("divisibleby 0");
    return int_of(v) % int_of(n) == 0;
  }
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    bool cased = false;
    for (char c : v.text) {
      if ((name == "lower" && c >= 'A' && c <= 'Z') || (name == "upper" && c >= 'a' && c <= 'z')) return false;
      cased = cased || std::isalpha(static_cast<unsigned char>(c));
    }
    return cased;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, argument(args, name));
  if (name == "ne" || name == "!=") return !equals(v, argument(args, name));
  if (name == "lt" || name == "lessthan" || name == "<") return less(v, argument(args, name));
  if (name == "gt" || name == "greaterthan" || name == ">") return less(argument(args, name), v);
  if (name == "le" || name == "<=") return !less(argument(args, name), v);
  if (name == "ge" || name == ">=") return !less(v, argument(args, name));
  if (name == "in") return contains(argument(args, name), v);
  if (name == "sameas") {
    const Value& other = argument(args, name);
    if (v.kind != other.kind) return false;
    if (v.kind == K::List) return v.list == other.list;
    if (v.kind == K::Dict || v.kind == K::Namespace) return v.dict == other.dict;
    return equals(v, other);
  }
  value_error("no test named '", name, "'");
}

}  // namespace gtpo::data::chat
