package resp

// list is a Redis list: a ring buffer of values without an element cap
// (memory and maxmemory are the limits). Indexes are 0..len-1 from the head.
type list struct {
	buf  [][]byte
	head int
	n    int
}

func (l *list) len() int { return l.n }

func (l *list) at(i int) int { return (l.head + i) & (len(l.buf) - 1) }

func (l *list) index(i int) []byte { return l.buf[l.at(i)] }

func (l *list) set(i int, v []byte) { l.buf[l.at(i)] = v }

func (l *list) grow() {
	if l.n < len(l.buf) {
		return
	}
	nb := make([][]byte, max(4, 2*len(l.buf)))
	for i := 0; i < l.n; i++ {
		nb[i] = l.index(i)
	}
	l.buf, l.head = nb, 0
}

// shrink halves the buffer when it is less than a quarter full.
func (l *list) shrink() {
	if len(l.buf) <= 16 || l.n*4 > len(l.buf) {
		return
	}
	nb := make([][]byte, len(l.buf)/2)
	for i := 0; i < l.n; i++ {
		nb[i] = l.index(i)
	}
	l.buf, l.head = nb, 0
}

func (l *list) pushBack(v []byte) {
	l.grow()
	l.buf[l.at(l.n)] = v
	l.n++
}

func (l *list) pushFront(v []byte) {
	l.grow()
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = v
	l.n++
}

func (l *list) popFront() []byte {
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = l.at(1)
	l.n--
	l.shrink()
	return v
}

func (l *list) popBack() []byte {
	i := l.at(l.n - 1)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.shrink()
	return v
}

// insert puts v at index i (0 <= i <= len), shifting the tail.
func (l *list) insert(i int, v []byte) {
	l.pushBack(nil)
	for j := l.n - 1; j > i; j-- {
		l.buf[l.at(j)] = l.buf[l.at(j-1)]
	}
	l.buf[l.at(i)] = v
}

// removeAt removes and returns the element at index i.
func (l *list) removeAt(i int) []byte {
	v := l.index(i)
	for j := i; j < l.n-1; j++ {
		l.buf[l.at(j)] = l.buf[l.at(j+1)]
	}
	l.buf[l.at(l.n-1)] = nil
	l.n--
	l.shrink()
	return v
}

func (l *list) each(f func([]byte)) {
	for i := 0; i < l.n; i++ {
		f(l.index(i))
	}
}

// hash is a Redis hash. Small hashes (at most hashSmallEntries fields, none
// longer than hashSmallValue bytes, as Redis's listpack encoding) are a
// slice of pairs in insertion order, which is the order Redis answers
// HGETALL in; larger ones are a map (unordered, as Redis's hashtable).
type hash struct {
	pairs []hpair
	m     map[string][]byte
}

type hpair struct{ f, v []byte }

const (
	hashSmallEntries = 128
	hashSmallValue   = 64
)

func (h *hash) len() int {
	if h.m != nil {
		return len(h.m)
	}
	return len(h.pairs)
}

func (h *hash) find(f []byte) int {
	for i := range h.pairs {
		if string(h.pairs[i].f) == string(f) {
			return i
		}
	}
	return -1
}

func (h *hash) get(f []byte) ([]byte, bool) {
	if h.m != nil {
		v, ok := h.m[string(f)]
		return v, ok
	}
	if i := h.find(f); i >= 0 {
		return h.pairs[i].v, true
	}
	return nil, false
}

// set stores v (owned by the hash from now on) under f and returns the
// value it replaced (the caller frees it) and whether f was new.
func (h *hash) set(f, v []byte) (old []byte, isNew bool) {
	if h.m == nil && (len(f) > hashSmallValue || len(v) > hashSmallValue) {
		h.convert()
	}
	if h.m != nil {
		old, ok := h.m[string(f)]
		h.m[string(f)] = v
		return old, !ok
	}
	if i := h.find(f); i >= 0 {
		old = h.pairs[i].v
		h.pairs[i].v = v
		return old, false
	}
	h.pairs = append(h.pairs, hpair{append([]byte(nil), f...), v})
	if len(h.pairs) > hashSmallEntries {
		h.convert()
	}
	return nil, true
}

func (h *hash) convert() {
	h.m = make(map[string][]byte, len(h.pairs))
	for _, p := range h.pairs {
		h.m[string(p.f)] = p.v
	}
	h.pairs = nil
}

// del removes f, returning its value (the caller frees it).
func (h *hash) del(f []byte) ([]byte, bool) {
	if h.m != nil {
		v, ok := h.m[string(f)]
		if ok {
			delete(h.m, string(f))
		}
		return v, ok
	}
	i := h.find(f)
	if i < 0 {
		return nil, false
	}
	v := h.pairs[i].v
	copy(h.pairs[i:], h.pairs[i+1:])
	h.pairs[len(h.pairs)-1] = hpair{}
	h.pairs = h.pairs[:len(h.pairs)-1]
	return v, true
}

func (h *hash) each(fn func(f, v []byte)) {
	if h.m != nil {
		for f, v := range h.m {
			fn([]byte(f), v)
		}
		return
	}
	for _, p := range h.pairs {
		fn(p.f, p.v)
	}
}
