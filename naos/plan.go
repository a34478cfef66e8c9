package naos

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// kind is what a plan's type is, as far as sending goes: pointer-free data
// (kData) or one of the slot kinds that hold a pointer the sender follows.
type kind uint8

const (
	kData   kind = iota // no pointers: sent and received as its bytes
	kPtr                // *T
	kSlice              // []T
	kString             // string
	kMap                // map[K]V, sent as key and value arrays
	kIface              // interface holding a registered concrete type
	kStruct             // struct or array with pointers somewhere inside
)

// slot is one pointer-holding word group inside a value: a pointer, a slice
// or string header, a map or an interface, at byte offset off.
type slot struct {
	off uintptr
	p   *plan // the plan of the slot's own type (its kind is kPtr..kIface)
}

// run is a pointer-free byte range [off, off+n) inside a value.
type run struct{ off, n uintptr }

// plan is how values of one type are sent and received, compiled once by
// reflection and cached (planOf).
type plan struct {
	t       reflect.Type
	size    uintptr
	kind    kind
	ptrFree bool      // no slots: the whole value is data
	slots   []slot    // every slot inside a value of t, by offset (flattened through structs and arrays)
	runs    []run     // the pointer-free bytes of t outside its slots, coalesced (padding excluded)
	bools   []uintptr // offsets of the bools of t outside slots (receivers check 0 or 1)
	elem    *plan     // kPtr: the pointee; kSlice: the element
	keys    *plan     // kMap: []K
	vals    *plan     // kMap: []V
	keyCmp  bool      // kMap: K holds an interface, so each received key must be checked comparable
	inline  bool      // not pointer-free, and everything below it can be sent and recovered by plain recursion (see inlinable)
	flat    bool      // pointer-free of at most smallString bytes, or a struct whose slots are all strings (at most maxInlineSlots): arrays of pointers to it are sent and recovered by a tight loop
	spans   []run     // flat: the bytes outside the slots' string headers, padding included, coalesced (copied as they come)
	dense   bool      // flat, with packed+len(slots) > 0: sent packed in messages with flagDense (see denseLayout)
	packed  int       // dense: the bytes of runs (the object's pointer-free bytes, padding excluded)
	pbools  []int     // dense: the offsets of bools in the packed bytes
	fp      uint64    // structural fingerprint
	name    string    // t.String(), for errors
}

// UnsupportedError reports a type that cannot be sent, naming the path
// from the root type to the offending field.
type UnsupportedError struct {
	Type string // the root type
	Path string // e.g. ".Inner.Fn" or "[]*.C"
	Kind string // "chan", "func", "unsafe.Pointer"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("naos: cannot send %s: field %s is a %s (channels, functions and unsafe pointers are not supported)", e.Type, e.Path, e.Kind)
}

var plans sync.Map // reflect.Type -> *plan

// planOf returns the cached plan of t, compiling it (and the plans of every
// type reachable from t) on first use.
func planOf(t reflect.Type) (*plan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*plan), nil
	}
	b := &builder{root: t.String(), done: map[reflect.Type]*plan{}}
	p, err := b.build(t, "")
	if err != nil {
		return nil, err
	}
	for _, q := range b.order {
		q.fp = fingerprint(q.t)
		q.name = q.t.String()
	}
	for _, q := range b.order {
		q.inline = inlinable(q, map[*plan]bool{})
		q.flat = q.size > 0 && (q.ptrFree && q.size <= smallString || q.inline && q.kind == kStruct)
		for _, s := range q.slots {
			q.flat = q.flat && s.p.kind == kString
		}
		if q.flat {
			q.spans = flatSpans(q)
			denseLayout(q)
		}
	}
	for t, q := range b.done {
		plans.LoadOrStore(t, q)
	}
	v, _ := plans.Load(t)
	_ = p
	return v.(*plan), nil
}

// denseLayout sets the packed layout of a flat plan: in a message with
// flagDense, an object an array of pointers points to is sent as its runs
// (pointer-free bytes without padding, in offset order: packed bytes),
// then for each string slot in offset order its length as a uvarint and
// its bytes. A plan with no packed bytes and no strings is sent as it is.
func denseLayout(q *plan) {
	for _, r := range q.runs {
		for _, b := range q.bools {
			if b >= r.off && b < r.off+r.n {
				q.pbools = append(q.pbools, q.packed+int(b-r.off))
			}
		}
		q.packed += int(r.n)
	}
	q.dense = q.packed+len(q.slots) > 0
}

// flatSpans returns the byte ranges of a flat plan's value outside its
// string headers, padding included: what the receiver copies as it
// comes (bools are checked separately).
func flatSpans(q *plan) []run {
	var out []run
	off := uintptr(0)
	for _, s := range q.slots { // by offset
		if s.off > off {
			out = append(out, run{off, s.off - off})
		}
		off = s.off + 2*ptrSize
	}
	if q.size > off {
		out = append(out, run{off, q.size - off})
	}
	return out
}

type builder struct {
	root  string
	done  map[reflect.Type]*plan
	order []*plan
}

func (b *builder) build(t reflect.Type, path string) (*plan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*plan), nil
	}
	if p, ok := b.done[t]; ok {
		return p, nil // recursive types: the plan is filled in by the outer call
	}
	p := &plan{t: t, size: t.Size()}
	b.done[t] = p
	b.order = append(b.order, p)
	var err error
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		k := t.Kind().String()
		if t.Kind() == reflect.UnsafePointer {
			k = "unsafe.Pointer"
		}
		if path == "" {
			path = "(root)"
		}
		return nil, &UnsupportedError{Type: b.root, Path: path, Kind: k}
	case reflect.Pointer:
		p.kind = kPtr
		p.elem, err = b.build(t.Elem(), path+"*")
	case reflect.Slice:
		p.kind = kSlice
		p.elem, err = b.build(t.Elem(), path+"[]")
	case reflect.String:
		p.kind = kString
	case reflect.Map:
		p.kind = kMap
		if p.keys, err = b.build(reflect.SliceOf(t.Key()), path+"[key]"); err == nil {
			p.vals, err = b.build(reflect.SliceOf(t.Elem()), path+"[val]")
		}
		p.keyCmp = hasIface(t.Key(), map[reflect.Type]bool{})
	case reflect.Interface:
		p.kind = kIface
	}
	if err != nil {
		return nil, err
	}
	if p.kind != kData {
		p.slots = []slot{{0, p}}
		return p, nil
	}
	// Data, struct or array: flatten.
	if err := b.flatten(p, t, 0, path); err != nil {
		return nil, err
	}
	p.ptrFree = len(p.slots) == 0
	if !p.ptrFree {
		p.kind = kStruct
	}
	return p, nil
}

// flatten adds the slots, runs and bools of a value of type t at offset off
// to p.
func (b *builder) flatten(p *plan, t reflect.Type, off uintptr, path string) error {
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if err := b.flatten(p, f.Type, off+f.Offset, path+"."+f.Name); err != nil {
				return err
			}
		}
		return nil
	case reflect.Array:
		es := t.Elem().Size()
		for i := 0; i < t.Len(); i++ {
			if err := b.flatten(p, t.Elem(), off+uintptr(i)*es, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
			if i == 0 && t.Len() > 1 && es > 0 && pointerFreeType(t.Elem()) && !hasBool(t.Elem()) {
				// A pointer-free array without bools is one run.
				addRun(p, off+es, es*uintptr(t.Len()-1))
				return nil
			}
		}
		return nil
	case reflect.Pointer, reflect.Slice, reflect.String, reflect.Map, reflect.Interface,
		reflect.Chan, reflect.Func, reflect.UnsafePointer:
		q, err := b.build(t, path)
		if err != nil {
			return err
		}
		p.slots = append(p.slots, slot{off, q})
		return nil
	case reflect.Bool:
		p.bools = append(p.bools, off)
	}
	addRun(p, off, t.Size())
	return nil
}

func addRun(p *plan, off, n uintptr) {
	if n == 0 {
		return
	}
	if k := len(p.runs); k > 0 && p.runs[k-1].off+p.runs[k-1].n == off {
		p.runs[k-1].n += n
		return
	}
	p.runs = append(p.runs, run{off, n})
}

func pointerFreeType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !pointerFreeType(t.Field(i).Type) {
				return false
			}
		}
		return true
	case reflect.Array:
		return t.Len() == 0 || pointerFreeType(t.Elem())
	case reflect.Pointer, reflect.Slice, reflect.String, reflect.Map, reflect.Interface,
		reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	}
	return true
}

func hasBool(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool:
		return true
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if hasBool(t.Field(i).Type) {
				return true
			}
		}
	case reflect.Array:
		return t.Len() > 0 && hasBool(t.Elem())
	}
	return false
}

func hasIface(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if hasIface(t.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Array:
		return hasIface(t.Elem(), seen)
	}
	return false
}

// byteOrder is the host's byte order, part of every fingerprint.
var byteOrder = func() string {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return "le"
	}
	return "be"
}()

// fingerprint hashes the layout of t: kinds, sizes, alignments, field
// offsets, element types (recursively; recursive types by back-reference),
// array lengths, the architecture and the byte order. Field and type names
// are not part of it: two types with the same layout are the same to Naos.
func fingerprint(t reflect.Type) uint64 {
	var sb strings.Builder
	fmt.Fprintf(&sb, "naos1 %s %s %d|", runtime.GOARCH, byteOrder, unsafe.Sizeof(uintptr(0)))
	describe(&sb, t, map[reflect.Type]int{})
	h := sha256.Sum256([]byte(sb.String()))
	return binary.LittleEndian.Uint64(h[:8])
}

func describe(sb *strings.Builder, t reflect.Type, seen map[reflect.Type]int) {
	if i, ok := seen[t]; ok {
		fmt.Fprintf(sb, "@%d", i)
		return
	}
	seen[t] = len(seen)
	fmt.Fprintf(sb, "%s:%d:%d", t.Kind(), t.Size(), t.Align())
	switch t.Kind() {
	case reflect.Struct:
		sb.WriteString("{")
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fmt.Fprintf(sb, "%d=", f.Offset)
			describe(sb, f.Type, seen)
			sb.WriteString(";")
		}
		sb.WriteString("}")
	case reflect.Array:
		fmt.Fprintf(sb, "[%d]", t.Len())
		describe(sb, t.Elem(), seen)
	case reflect.Pointer, reflect.Slice:
		sb.WriteString("(")
		describe(sb, t.Elem(), seen)
		sb.WriteString(")")
	case reflect.Map:
		sb.WriteString("(")
		describe(sb, t.Key(), seen)
		sb.WriteString(",")
		describe(sb, t.Elem(), seen)
		sb.WriteString(")")
	case reflect.Interface:
		fmt.Fprintf(sb, "(%d)", t.NumMethod())
	}
}

// maxInlineSlots bounds the slots of an inline plan (the receiver keeps
// their words on its stack while it recovers them in order).
const maxInlineSlots = 8

// inlinable reports whether the values of p (which has slots) can be
// traversed by recursion instead of the explicit stack: every slot is a
// string, or a pointer or slice whose element is pointer-free or itself
// inlinable (not through a recursive type, so the recursion is as deep as
// the type), and there are at most maxInlineSlots of them. Maps and
// interfaces, and slices of pointers (which Compact sends differently),
// take the stack.
func inlinable(p *plan, visiting map[*plan]bool) bool {
	if p.ptrFree || len(p.slots) > maxInlineSlots || visiting[p] {
		return false
	}
	visiting[p] = true
	defer delete(visiting, p)
	for _, s := range p.slots {
		q := s.p
		switch q.kind {
		case kString:
		case kPtr:
			if q.elem == p || !q.elem.ptrFree && !inlinable(q.elem, visiting) {
				return false
			}
		case kSlice:
			if q.elem.kind == kPtr || !q.elem.ptrFree && !inlinable(q.elem, visiting) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
