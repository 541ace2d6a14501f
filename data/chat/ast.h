// The parsed template: expressions and statements, each remembering its line for error messages.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/chat/value.h"

namespace gtpo::data::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    List,      // args (tuple when is_tuple)
    Dict,      // keys/args pairs: args[2i] key, args[2i+1] value
    GetAttr,   // a.name
    GetItem,   // a[b]
    Slice,     // a[b:c:d], missing parts are null
    Call,      // a(args, kwargs)
    Filter,    // a | name(args, kwargs)
    Test,      // a is [not] name(args)
    Not,       // not a
    Negate,    // -a
    Plus,      // +a
    Binary,    // a op b: + - * / // % ** ~
    And,       // a and b
    Or,        // a or b
    Compare,   // a ops[0] args[0] ops[1] args[1] ... (== != < > <= >= in, "not in")
    Condition  // a if b else c (c may be null: Undefined)
  };
  Kind kind;
  int line = 1;
  Value value;
  std::string name;  // Name, GetAttr, Filter, Test; Binary: the operator
  bool is_tuple = false;
  bool negated = false;  // Test: "is not"
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // Compare
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, FilterBlock, Plain };
  Kind kind;
  int line = 1;
  std::string text;                         // Text
  ExprPtr expr;                             // Output, Set (value), For (iterable), FilterBlock/SetBlock (filter)
  std::vector<std::pair<ExprPtr, Body>> branches;  // If: condition and body per if/elif
  Body body;                                // For, SetBlock, Macro, FilterBlock, Plain
  Body else_body;                           // If, For
  std::vector<std::string> targets;         // For, Set, SetBlock: names (several: unpacking)
  std::string attribute;                    // Set ns.attribute = ...: targets[0] is the namespace
  ExprPtr loop_filter;                      // For ... if cond
  std::string name;                         // Macro
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: parameters with optional defaults
};

}  // namespace gtpo::data::chat
