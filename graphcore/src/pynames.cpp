// Which names exist in Python itself (the builtins module, methods of builtin types), as
// opposed to what the evaluator models of them.
#include <string_view>
#include <unordered_set>

#include "value.h"

namespace graphcore::eval {

// Every name of Python 3.11's builtins module and every public method of its str, list, tuple,
// dict and set (from `dir()`), so that a name the evaluator does not model is told apart from a
// name that does not exist: the first is unknown, only the second is an error.
bool python_builtin_exists(std::string_view name) {
  static const std::unordered_set<std::string_view> kNames = {
      "ArithmeticError", "AssertionError", "AttributeError", "BaseException",
      "BaseExceptionGroup", "BlockingIOError", "BrokenPipeError", "BufferError", "BytesWarning",
      "ChildProcessError", "ConnectionAbortedError", "ConnectionError", "ConnectionRefusedError",
      "ConnectionResetError", "DeprecationWarning", "EOFError", "Ellipsis", "EncodingWarning",
      "EnvironmentError", "Exception", "ExceptionGroup", "False", "FileExistsError",
      "FileNotFoundError", "FloatingPointError", "FutureWarning", "GeneratorExit", "IOError",
      "ImportError", "ImportWarning", "IndentationError", "IndexError", "InterruptedError",
      "IsADirectoryError", "KeyError", "KeyboardInterrupt", "LookupError", "MemoryError",
      "ModuleNotFoundError", "NameError", "None", "NotADirectoryError", "NotImplemented",
      "NotImplementedError", "OSError", "OverflowError", "PendingDeprecationWarning",
      "PermissionError", "ProcessLookupError", "RecursionError", "ReferenceError",
      "ResourceWarning", "RuntimeError", "RuntimeWarning", "StopAsyncIteration", "StopIteration",
      "SyntaxError", "SyntaxWarning", "SystemError", "SystemExit", "TabError", "TimeoutError",
      "True", "TypeError", "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError",
      "UnicodeError", "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError",
      "Warning", "ZeroDivisionError", "abs", "aiter", "all", "anext", "any", "ascii", "bin",
      "bool", "breakpoint", "bytearray", "bytes", "callable", "chr", "classmethod", "compile",
      "complex", "copyright", "credits", "delattr", "dict", "dir", "divmod", "enumerate", "eval",
      "exec", "exit", "filter", "float", "format", "frozenset", "getattr", "globals", "hasattr",
      "hash", "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len",
      "license", "list", "locals", "map", "max", "memoryview", "min", "next", "object", "oct",
      "open", "ord", "pow", "print", "property", "quit", "range", "repr", "reversed", "round",
      "set", "setattr", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple",
      "type", "vars", "zip", "__name__", "__file__", "__doc__", "__spec__", "__package__",
      "__builtins__", "__loader__", "__debug__", "__import__", "__build_class__"};
  return kNames.count(name) > 0;
}

bool python_method_exists(OK kind, std::string_view name) {
  if (name.starts_with("__")) return true;  // dunders: __len__, __class__, __iter__...
  static const std::unordered_set<std::string_view> kStr = {
      "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find",
      "format", "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
      "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper",
      "join", "ljust", "lower", "lstrip", "maketrans", "partition", "removeprefix",
      "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip",
      "split", "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper",
      "zfill"};
  static const std::unordered_set<std::string_view> kList = {
      "append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove",
      "reverse", "sort"};
  static const std::unordered_set<std::string_view> kTuple = {"count", "index"};
  static const std::unordered_set<std::string_view> kDict = {
      "clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault",
      "update", "values"};
  static const std::unordered_set<std::string_view> kSet = {
      "add", "clear", "copy", "difference", "difference_update", "discard", "intersection",
      "intersection_update", "isdisjoint", "issubset", "issuperset", "pop", "remove",
      "symmetric_difference", "symmetric_difference_update", "union", "update"};
  switch (kind) {
    case OK::Str:
      return kStr.count(name) > 0;
    case OK::List:
      return kList.count(name) > 0;
    case OK::Tuple:
      return kTuple.count(name) > 0;
    case OK::Dict:
      return kDict.count(name) > 0;
    case OK::Set:
      return kSet.count(name) > 0;
    default:
      return true;
  }
}

}  // namespace graphcore::eval
