// ObjectHeap: the objects of one evaluation, and the sweep that frees the cycles among them.
#include <atomic>
#include <new>
#include <utility>

#include "value.h"

namespace graphcore::eval {

namespace {

thread_local ObjectHeap* t_heap = nullptr;
std::atomic<int64_t> g_alive{0};

// What the sweep takes out of the objects: destroyed only once every object is emptied, so
// freeing one never walks into another (no recursion, no object seen half-destroyed).
struct Graveyard {
  std::vector<Value> values;
  std::vector<Ref> refs;
  std::vector<std::shared_ptr<Frame>> frames;
  std::vector<BuiltinFn> functions;
  std::vector<std::unique_ptr<CellState>> cells;

  void take(Value& v) { values.push_back(std::exchange(v, Value{})); }
  void take(std::vector<Value>& vs) {
    for (Value& v : vs) take(v);
    vs.clear();
  }
};

void release(Object& o, Graveyard& g) {
  switch (o.kind) {
    case OK::Tuple:
      g.take(static_cast<TupleObj&>(o).items);
      break;
    case OK::List:
      g.take(static_cast<ListObj&>(o).items);
      break;
    case OK::Set:
      g.take(static_cast<SetObj&>(o).items);
      break;
    case OK::Dict:
      static_cast<DictObj&>(o).release(g.values);
      break;
    case OK::Slice: {
      auto& s = static_cast<SliceObj&>(o);
      g.take(s.start);
      g.take(s.stop);
      g.take(s.step);
      break;
    }
    case OK::Function: {
      auto& f = static_cast<FunctionObj&>(o);
      g.take(f.defaults);
      g.frames.push_back(std::move(f.closure));
      break;
    }
    case OK::BoundMethod: {
      auto& m = static_cast<BoundMethodObj&>(o);
      g.take(m.self);
      g.take(m.func);
      break;
    }
    case OK::Builtin: {
      auto& b = static_cast<BuiltinObj&>(o);
      g.take(b.self);
      g.functions.push_back(std::exchange(b.fn, BuiltinFn{}));  // its captures may hold values
      break;
    }
    case OK::Class: {
      auto& c = static_cast<ClassObj&>(o);
      g.take(c.bases);
      c.attrs.release(g.values);
      break;
    }
    case OK::Instance: {
      auto& i = static_cast<InstanceObj&>(o);
      g.take(i.cls_value);
      i.attrs.release(g.values);
      g.cells.push_back(std::move(i.cell));
      g.refs.push_back(std::move(i.mapping));
      break;
    }
    case OK::Module:
      static_cast<ModuleObj&>(o).globals.release(g.values);
      break;
    case OK::Namespace:
      static_cast<NamespaceObj&>(o).cache.release(g.values);
      break;
    case OK::Super:
      g.take(static_cast<SuperObj&>(o).self);
      break;
    case OK::Property: {
      auto& p = static_cast<PropertyObj&>(o);
      g.take(p.getter);
      g.take(p.setter);
      break;
    }
    case OK::Opaque: {
      auto& op = static_cast<OpaqueObj&>(o);
      g.take(op.args);
      op.attrs.release(g.values);
      break;
    }
    // No references to other objects.
    case OK::Str:
    case OK::Range:
    case OK::Ellipsis:
    case OK::ApiFunction:
    case OK::Tensor:
    case OK::DType:
    case OK::SymInt:
      break;
  }
}

}  // namespace

Object::Object(OK k) : kind(k) {
  g_alive.fetch_add(1, std::memory_order_relaxed);
  if (t_heap != nullptr) t_heap->adopt(this);
}

Object::~Object() {
  g_alive.fetch_sub(1, std::memory_order_relaxed);
  if (prev != nullptr) {
    prev->next = next;
    next->prev = prev;
  }
}

int64_t objects_alive() { return g_alive.load(std::memory_order_relaxed); }

ObjectHeap::ObjectHeap() : outer_(t_heap) {
  head_.prev = &head_;
  head_.next = &head_;
  t_heap = this;
}

ObjectHeap::~ObjectHeap() {
  sweep();
  // Objects something outside the evaluation still holds (none is expected): no longer tracked.
  while (head_.next != &head_) {
    HeapLink* o = head_.next;
    head_.next = o->next;
    o->prev = o->next = nullptr;
  }
  t_heap = outer_;
}

ObjectHeap* ObjectHeap::current() { return t_heap; }

void ObjectHeap::adopt(Object* o) {
  o->prev = head_.prev;
  o->next = &head_;
  head_.prev->next = o;
  head_.prev = o;
}

size_t ObjectHeap::sweep() noexcept {
  try {
    Graveyard g;
    size_t n = 0;
    // Emptying an object destroys nothing (what it held moves to the graveyard), so the list
    // does not change while it is walked.
    for (HeapLink* l = head_.next; l != &head_; l = l->next) {
      release(*static_cast<Object*>(l), g);
      ++n;
    }
    return n;  // the graveyard goes here, and the objects with it
  } catch (const std::bad_alloc&) {
    // Out of memory for the graveyard (the sweep may run while a failed allocation unwinds
    // the analysis): what was taken is freed, the cycles not reached stay allocated.
    return 0;
  }
}

}  // namespace graphcore::eval
