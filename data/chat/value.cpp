#include "data/chat/value.h"

#include <algorithm>

#include "data/chat/template_error.h"

namespace gtpo::data::chat {

namespace {
std::size_t checked_depth(std::size_t depth) {
  if (depth > kMaxValueDepth) throw ValueError("lists/dicts nested deeper than " + std::to_string(kMaxValueDepth));
  return depth;
}
}  // namespace

Value Value::from_list(std::vector<Value> items, bool tuple) {
  auto data = std::make_shared<ListData>();
  std::size_t depth = 0;
  for (const Value& v : items) depth = std::max(depth, v.depth());
  data->depth = checked_depth(depth + 1);
  data->items = std::move(items);
  data->tuple = tuple;
  Value v;
  v.kind = Kind::List;
  v.list = std::move(data);
  return v;
}

Value Value::from_dict(std::vector<std::pair<std::string, Value>> items) {
  auto data = std::make_shared<DictData>();
  std::size_t depth = 0;
  for (auto& [key, value] : items) {
    depth = std::max(depth, value.depth());
    data->set(key, std::move(value));
  }
  data->depth = checked_depth(depth + 1);
  Value v;
  v.kind = Kind::Dict;
  v.dict = std::move(data);
  return v;
}

Value Value::new_namespace(std::vector<std::pair<std::string, Value>> items) {
  Value v = from_dict(std::move(items));
  v.kind = Kind::Namespace;
  v.dict->is_namespace = true;
  return v;
}

Value Value::from_function(Function f) {
  Value v;
  v.kind = Kind::Callable;
  v.function = std::make_shared<const Function>(std::move(f));
  return v;
}

const std::vector<Value>& Value::items() const {
  static const std::vector<Value> empty;
  return list ? list->items : empty;
}

std::size_t Value::depth() const {
  if (kind == Kind::List) return list->depth;
  if (kind == Kind::Dict) return dict->depth;
  return 1;  // a namespace is a reference, printed shallowly
}

const Value* DictData::find(const std::string& key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void DictData::set(const std::string& key, Value v) {
  for (auto& [k, old] : entries)
    if (k == key) {
      old = std::move(v);
      return;
    }
  entries.emplace_back(key, std::move(v));
}

const Value* CallArgs::get(std::size_t index, const std::string& name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace gtpo::data::chat
