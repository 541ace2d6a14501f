#include "data/chat/python_ops.h"

#include <cmath>
#include <limits>

#include "data/chat/methods.h"
#include "data/chat/python_format.h"
#include "data/chat/template_error.h"
#include "data/chat/text_utils.h"

namespace gtpo::data::chat {

namespace {

bool is_integral(const Value& v) { return v.kind == Value::Kind::Int || v.kind == Value::Kind::Bool; }
int64_t as_int(const Value& v) { return v.kind == Value::Kind::Bool ? (v.boolean ? 1 : 0) : v.integer; }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  value_error("unsupported operand type(s) for ", op, ": '", type_name(a), "' and '", type_name(b), "'");
}

void check_defined(const Value& v) {
  if (v.is_undefined()) value_error("'", v.text.empty() ? "value" : v.text, "' is undefined");
}

// OP(x, y) through a __builtin_*_overflow; Python's integers do not overflow, gtpo's 64-bit ones say so.
template <typename Op>
int64_t checked(Op op, int64_t x, int64_t y) {
  int64_t result = 0;
  if (op(x, y, &result)) value_error("integer overflow (gtpo's template integers are 64-bit)");
  return result;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1) value_error("integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value repeat(const Value& seq, int64_t times, std::size_t max_bytes) {
  if (times <= 0) return seq.is_string() ? Value::from_string("") : Value::from_list({}, seq.list->tuple);
  if (seq.is_string()) {
    if (!seq.text.empty() && static_cast<uint64_t>(times) > max_bytes / seq.text.size())
      value_error("string repetition larger than the output limit of ", max_bytes, " bytes");
    WorkMeter::charge(static_cast<uint64_t>(times));  // each copy, even of an empty string
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.text;
    return Value::from_string(std::move(out));
  }
  const auto& items = seq.items();
  if (!items.empty() && static_cast<uint64_t>(times) > max_bytes / 16 / items.size())
    value_error("list repetition too large");
  WorkMeter::charge(static_cast<uint64_t>(times));
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::from_list(std::move(out), seq.list->tuple);
}

// Python's index rules: negative counts from the end; returns false when out of range.
bool resolve_index(int64_t index, std::size_t size, std::size_t& out) {
  const int64_t n = static_cast<int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return false;
  out = static_cast<std::size_t>(index);
  return true;
}

// Python's int ** int: exact (squaring, overflow an error), a negative exponent gives a float, 0 ** -n
// raises.
Value int_power(int64_t x, int64_t y) {
  if (y < 0) {
    if (x == 0) value_error("0 cannot be raised to a negative power");
    return Value::from_float(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
  int64_t result = 1, base = x;
  for (int64_t e = y; e > 0; e >>= 1) {
    if ((e & 1) && __builtin_mul_overflow(result, base, &result)) value_error("integer overflow in **");
    // A square that overflows while bits remain means the result would overflow too.
    if (e > 1 && __builtin_mul_overflow(base, base, &base)) value_error("integer overflow in **");
  }
  return Value::from_int(result);
}

// Python's float ** float: what it raises is an error here too (a complex result, 0 to a negative power,
// overflow), never a silent nan or inf.
Value float_power(double x, double y) {
  if (x == 0.0 && y < 0.0) value_error("0.0 cannot be raised to a negative power");
  if (x < 0.0 && std::isfinite(y) && y != std::floor(y))
    value_error("a negative number to a fractional power is a complex number (", x, " ** ", y, ")");
  const double r = std::pow(x, y);
  if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
    value_error("numerical result out of range in **");
  return Value::from_float(r);
}

}  // namespace

double as_double(const Value& v) {
  if (v.kind == Value::Kind::Float) return v.number;
  return static_cast<double>(as_int(v));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.boolean;
    case Value::Kind::Int: return v.integer != 0;
    case Value::Kind::Float: return v.number != 0;
    case Value::Kind::String: return !v.text.empty();
    case Value::Kind::List: return !v.items().empty();
    case Value::Kind::Dict: return !v.dict->entries.empty();
    default: return true;
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (is_integral(a) && is_integral(b)) return as_int(a) == as_int(b);
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String:
      WorkMeter::charge(std::min(a.text.size(), b.text.size()));
      return a.text == b.text;
    case Value::Kind::List: {
      const auto &x = a.items(), &y = b.items();
      if (x.size() != y.size() || a.list->tuple != b.list->tuple) return false;
      WorkMeter::charge(x.size());
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      if (a.dict->entries.size() != b.dict->entries.size()) return false;
      for (const auto& [k, v] : a.dict->entries) {
        const Value* other = b.dict->find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default: return a.dict == b.dict && a.function == b.function;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (is_integral(a) && is_integral(b)) return as_int(a) < as_int(b);
    return as_double(a) < as_double(b);
  }
  if (a.is_string() && b.is_string()) return a.text < b.text;  // UTF-8 byte order is code point order
  if (a.kind == Value::Kind::List && b.kind == Value::Kind::List) {
    const auto &x = a.items(), &y = b.items();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    return x.size() < y.size();
  }
  value_error("'<' not supported between instances of '", type_name(a), "' and '", type_name(b), "'");
}

Value negate(const Value& v) {
  check_defined(v);
  if (is_integral(v)) {
    return Value::from_int(checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); },
                                   0, as_int(v)));
  }
  if (v.kind == Value::Kind::Float) return Value::from_float(-v.number);
  value_error("bad operand type for unary -: '", type_name(v), "'");
}

Value arithmetic(const std::string& op, const Value& a, const Value& b, std::size_t max_bytes) {
  check_defined(a);
  check_defined(b);
  if (a.is_number() && b.is_number()) {
    if (op == "/") {
      if (as_double(b) == 0) value_error("division by zero");
      return Value::from_float(as_double(a) / as_double(b));
    }
    if (is_integral(a) && is_integral(b)) {
      const int64_t x = as_int(a), y = as_int(b);
      const auto add = [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); };
      const auto sub = [](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); };
      const auto mul = [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); };
      if (op == "+") return Value::from_int(checked(add, x, y));
      if (op == "-") return Value::from_int(checked(sub, x, y));
      if (op == "*") return Value::from_int(checked(mul, x, y));
      if (op == "//" || op == "%") {
        if (y == 0) value_error("integer division or modulo by zero");
        const int64_t q = floor_div(x, y);
        return Value::from_int(op == "//" ? q : x - q * y);
      }
      if (op == "**") return int_power(x, y);
    } else {
      const double x = as_double(a), y = as_double(b);
      if (op == "+") return Value::from_float(x + y);
      if (op == "-") return Value::from_float(x - y);
      if (op == "*") return Value::from_float(x * y);
      if (op == "**") return float_power(x, y);
      if (op == "//" || op == "%") {
        if (y == 0) value_error("float division or modulo by zero");
        const double m = std::fmod(x, y);
        const double mod = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
        if (op == "%") return Value::from_float(mod);
        // Python's float_divmod: the quotient from the exact remainder, rounded to the nearest integer.
        const double div = (x - mod) / y;
        double floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1;
        return Value::from_float(floordiv);
      }
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.text.size() + b.text.size() > max_bytes) value_error("string longer than the output limit");
      WorkMeter::charge(a.text.size() + b.text.size());
      return Value::from_string(a.text + b.text);
    }
    if (a.kind == Value::Kind::List && b.kind == Value::Kind::List && a.list->tuple == b.list->tuple) {
      WorkMeter::charge(a.items().size() + b.items().size());
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return Value::from_list(std::move(out), a.list->tuple);
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.kind == Value::Kind::List) && is_integral(b)) return repeat(a, as_int(b), max_bytes);
    if ((b.is_string() || b.kind == Value::Kind::List) && is_integral(a)) return repeat(b, as_int(a), max_bytes);
  }
  unsupported(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::String:
      if (!item.is_string())
        value_error("'in <string>' requires string as left operand, not ", type_name(item));
      return find_text(container.text, item.text) != std::string::npos;
    case Value::Kind::List:
      WorkMeter::charge(container.items().size());
      for (const Value& v : container.items())
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::Dict: return item.is_string() && container.dict->find(item.text) != nullptr;
    case Value::Kind::Undefined: return false;
    default: value_error("argument of type '", type_name(container), "' is not iterable");
  }
}

std::size_t length(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return code_point_count(v.text);
    case Value::Kind::List: return v.items().size();
    case Value::Kind::Dict: return v.dict->entries.size();
    default: value_error("object of type '", type_name(v), "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.items();
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      for (const auto& entry : v.dict->entries) keys.push_back(Value::from_string(entry.first));
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> out;
      for (std::string& p : code_points(v.text)) out.push_back(Value::from_string(std::move(p)));
      return out;
    }
    default: value_error("'", type_name(v), "' object is not iterable");
  }
}

Value subscript(const Value& container, const Value& key) {
  if (container.is_undefined())
    value_error("'", container.text.empty() ? "value" : container.text, "' is undefined");
  if (container.kind == Value::Kind::Dict) {
    if (key.is_string())
      if (const Value* v = container.dict->find(key.text)) return *v;
    return key.is_string() ? get_attribute(container, key.text) : Value::undefined();
  }
  if ((container.kind == Value::Kind::List || container.is_string()) && (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
    std::size_t index = 0;
    if (container.is_string()) {
      const std::vector<std::string> pieces = code_points(container.text);
      if (!resolve_index(as_int(key), pieces.size(), index)) return Value::undefined();
      return Value::from_string(pieces[index]);
    }
    if (!resolve_index(as_int(key), container.items().size(), index)) return Value::undefined();
    return container.items()[index];
  }
  if (key.is_string()) return get_attribute(container, key.text);
  return Value::undefined();
}

Value slice(const Value& container, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
            const std::optional<int64_t>& step_in) {
  if (container.is_undefined())
    value_error("'", container.text.empty() ? "value" : container.text, "' is undefined");
  std::vector<Value> items;
  std::vector<std::string> pieces;
  std::size_t size = 0;
  if (container.is_string()) {
    pieces = code_points(container.text);
    size = pieces.size();
  } else if (container.kind == Value::Kind::List) {
    size = container.items().size();
  } else {
    value_error("'", type_name(container), "' object is not subscriptable");
  }
  const int64_t step = step_in.value_or(1);
  if (step == 0) value_error("slice step cannot be zero");
  const int64_t n = static_cast<int64_t>(size);
  // Python's PySlice_AdjustIndices.
  const auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v;
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t lo = adjust(start, step < 0 ? n - 1 : 0);
  const int64_t hi = adjust(stop, step < 0 ? -1 : n);
  std::string text;
  if (container.kind == Value::Kind::List) WorkMeter::charge(size);  // a string's scan charged its bytes
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
    if (container.is_string()) text += pieces[static_cast<std::size_t>(i)];
    else items.push_back(container.items()[static_cast<std::size_t>(i)]);
  }
  if (container.is_string()) return Value::from_string(std::move(text));
  return Value::from_list(std::move(items), container.list->tuple);
}

Value get_attribute(const Value& object, const std::string& name) {
  switch (object.kind) {
    case Value::Kind::Undefined:
      value_error("'", object.text.empty() ? "value" : object.text, "' is undefined (no attribute '", name,
                  "')");
    case Value::Kind::Namespace:
      if (const Value* v = object.dict->find(name)) return *v;
      return Value::undefined(name);
    case Value::Kind::Dict:
      if (auto method = bound_method(object, name)) return *method;
      if (const Value* v = object.dict->find(name)) return *v;
      return Value::undefined(name);
    default:
      if (auto method = bound_method(object, name)) return *method;
      return Value::undefined(name);
  }
}

}  // namespace gtpo::data::chat
