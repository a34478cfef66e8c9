package resp

import (
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
)

// NumDBs is the number of databases (SELECT 0..NumDBs-1), as Redis's
// default "databases 16".
const NumDBs = 16

// kind is the type of a key's value.
type kind uint8

const (
	kString kind = iota + 1
	kList
	kHash
)

func (k kind) String() string {
	switch k {
	case kString:
		return "string"
	case kList:
		return "list"
	case kHash:
		return "hash"
	}
	return "none"
}

// entry is one key's value. Strings and the elements of lists and hashes
// are byte slices: one of at least the storage threshold lives in the
// server's registered pool (the store owns one reference on its item,
// recovered from the slice with mem.Recover), a smaller one on the Go heap.
// Bytes in the pool are never written after they are stored: a reply may
// be sending them (zero-copy) while the key changes.
//
// An entry is 24 bytes (one small allocation per key besides the map
// slot, the key and the value): p is the string's first byte, or the
// *list or *hash.
type entry struct {
	p   unsafe.Pointer
	n   uint32 // kString: the value's length
	lru uint32 // lruClock of the last access
	k   kind
}

// str is a string entry's value.
func (e *entry) str() []byte {
	if e.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(e.p), e.n)
}

// setStr makes b (stored by newVal, owned by the keyspace) the value.
func (e *entry) setStr(b []byte) {
	e.p, e.n = unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b))
}

func (e *entry) list() *list { return (*list)(e.p) }

func (e *entry) hash() *hash { return (*hash)(e.p) }

// db is one database: keys and, as Redis keeps them apart, the expiry
// times (Unix milliseconds) of the keys that have one.
type db struct {
	keys    map[string]*entry
	expires map[string]int64
	watch   map[string][]*conn // WATCHing connections per key
}

func newDB() *db {
	return &db{keys: map[string]*entry{}, expires: map[string]int64{}, watch: map[string][]*conn{}}
}

// keyspace is the server's data: NumDBs databases guarded by one mutex
// (Server.kmu), as Redis executes one command at a time.
type keyspace struct {
	dbs       [NumDBs]*db
	pool      *mem.Pool
	storeMin  int   // values of at least this many bytes go to the pool
	used      int64 // estimated bytes of the dataset (INFO used_memory_dataset, maxmemory)
	start     time.Time
	clock     uint32 // lruClock
	expired   uint64 // keys removed because they expired
	evicted   uint64 // keys removed by maxmemory
	dirty     uint64 // changes (INFO rdb_changes_since_last_save)
	ready     []readyKey
	blocked   map[blockKey][]*waiter
	nblocked  int
	rnd       *rand.Rand
	keyspaceH uint64 // lookups that found a key
	keyspaceM uint64 // lookups that did not
	// gifts are the large argument bodies (pool buffers) of the command
	// executing, which newVal takes instead of copying; nil between
	// commands.
	gifts  []mem.Buf
	gifted uint64 // large bodies kept without a copy
}

// Per-key and per-element overheads of the used-memory estimate: the map
// slot, entry, slice headers and allocator rounding.
const (
	keyOverhead  = 80
	elemOverhead = 24
)

func newKeyspace(p *mem.Pool, storeMin int) *keyspace {
	ks := &keyspace{pool: p, storeMin: storeMin, start: time.Now(), blocked: map[blockKey][]*waiter{},
		rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))}
	for i := range ks.dbs {
		ks.dbs[i] = newDB()
	}
	return ks
}

func nowMs() int64 { return time.Now().UnixMilli() }

// lruClock is the LRU clock: seconds since the keyspace was made, as of
// the last tick (as Redis's server.lruclock, it is read from a field
// instead of the clock on every key access).
func (ks *keyspace) lruClock() uint32 { return ks.clock }

// tick updates the LRU clock (the background goroutine, every 100 ms).
func (ks *keyspace) tick() { ks.clock = uint32(time.Since(ks.start) / time.Second) }

// newVal copies b into storage owned by the keyspace: the pool for values
// of at least storeMin bytes (when the pool has room), the Go heap
// otherwise. A large argument body of the command executing (ks.gifts) is
// kept as it is, not copied: the keyspace takes the connection's reference.
func (ks *keyspace) newVal(b []byte) []byte {
	if len(ks.gifts) > 0 && ks.take(b) {
		return b
	}
	if ks.pool != nil && ks.storeMin > 0 && len(b) >= ks.storeMin && len(b) <= ks.pool.MaxSize() {
		if buf, err := ks.pool.AllocCopy(b); err == nil {
			return buf.Bytes()
		}
	}
	return append([]byte(nil), b...)
}

// freeVal drops the keyspace's ownership of a value made by newVal.
func freeVal(p []byte) {
	if b, ok := own(p); ok {
		_ = b.Release()
	}
}

// own turns the keyspace's reference on a pooled value into a handle the
// caller owns (ok false for a heap value).
func own(p []byte) (mem.Buf, bool) {
	if len(p) == 0 {
		return mem.Buf{}, false
	}
	b, ok := mem.Recover(p)
	if !ok {
		return mem.Buf{}, false
	}
	_ = b.Release() // the recovered reference; b now stands for the keyspace's
	return b, true
}

func valSize(p []byte) int64 { return int64(len(p)) + elemOverhead }

// lookup returns key's entry in d, removing it first when it has expired.
func (ks *keyspace) lookup(d *db, key []byte) *entry {
	e := d.keys[string(key)]
	if e == nil {
		ks.keyspaceM++
		return nil
	}
	if len(d.expires) > 0 {
		if t, ok := d.expires[string(key)]; ok && t <= nowMs() {
			ks.del(d, string(key))
			ks.expired++
			ks.keyspaceM++
			return nil
		}
	}
	ks.keyspaceH++
	e.lru = ks.lruClock()
	return e
}

// add stores a new entry (the key must be absent).
func (ks *keyspace) add(d *db, key []byte, e *entry) {
	e.lru = ks.lruClock()
	d.keys[string(key)] = e
	ks.used += keyOverhead + int64(len(key))
}

// del removes key and frees its value; it reports whether it existed
// (expired or not).
func (ks *keyspace) del(d *db, key string) bool {
	e := d.keys[key]
	if e == nil {
		return false
	}
	delete(d.keys, key)
	delete(d.expires, key)
	ks.used -= keyOverhead + int64(len(key))
	ks.freeEntry(e)
	return true
}

func (ks *keyspace) freeEntry(e *entry) {
	switch e.k {
	case kString:
		ks.used -= valSize(e.str())
		freeVal(e.str())
		e.p, e.n = nil, 0
	case kList:
		e.list().each(func(p []byte) { ks.used -= valSize(p); freeVal(p) })
		e.p = nil
	case kHash:
		e.hash().each(func(f, v []byte) { ks.used -= valSize(f) + valSize(v); freeVal(v) })
		e.p = nil
	}
}

// setString replaces key's value by a string (any type, any expiry kept
// only when keepTTL).
func (ks *keyspace) setString(d *db, key, val []byte, keepTTL bool) {
	ks.setStringAt(d, d.keys[string(key)], key, val, keepTTL)
}

// setStringAt is setString for a caller that has looked key up: e is
// d.keys[key] (nil when absent).
func (ks *keyspace) setStringAt(d *db, e *entry, key, val []byte, keepTTL bool) {
	if e != nil && e.k == kString {
		// The key and its entry stay (no allocation, no map insertion);
		// only the value changes.
		if !keepTTL && len(d.expires) > 0 {
			delete(d.expires, string(key))
		}
		e.lru = ks.lruClock()
		if old := e.str(); len(old) == len(val) && len(val) > 0 && ks.overwritable(old, val) {
			copy(old, val)
			return
		}
		ks.replaceString(e, ks.newVal(val))
		return
	}
	var t int64
	var hadT bool
	if keepTTL {
		t, hadT = d.expires[string(key)]
	}
	if e != nil {
		ks.del(d, string(key)) // a list or a hash
	}
	e = &entry{k: kString}
	e.setStr(ks.newVal(val))
	ks.used += valSize(e.str())
	ks.add(d, key, e)
	if hadT {
		d.expires[string(key)] = t
	}
}

// overwritable reports whether the stored value old may be overwritten
// in place by val, of the same length: a heap value (below the pool's
// threshold) has no reader but its entry (replies copy it); a pooled one
// has none while the keyspace holds the only reference to its item (a
// zero-copy reply being sent holds one of its own, taken under the
// keyspace lock, as every other reader does). A large argument body that
// would be kept without a copy (ks.gifts) is not copied either.
func (ks *keyspace) overwritable(old, val []byte) bool {
	if ks.storeMin == 0 || len(val) < ks.storeMin {
		return true
	}
	if len(ks.gifts) > 0 && len(val) >= bigArg {
		return false
	}
	// The keyspace's reference only (0: on the heap, the pool was full:
	// replaced as before). Readers take theirs under the keyspace lock,
	// held here, so none can appear before the write; old lies within
	// one item, so the write stays inside the value.
	return mem.RefsOf(old) == 1
}

// replaceString swaps the value of an existing string entry.
func (ks *keyspace) replaceString(e *entry, val []byte) {
	ks.used += valSize(val) - valSize(e.str())
	freeVal(e.str())
	e.setStr(val)
}

// flush empties d (all its keys, expiry times and watchers' views).
func (ks *keyspace) flush(d *db) {
	for k, e := range d.keys {
		ks.used -= keyOverhead + int64(len(k))
		ks.freeEntry(e)
	}
	d.keys, d.expires = map[string]*entry{}, map[string]int64{}
}

// activeExpire removes expired keys by sampling, as Redis's active expiry
// cycle does: 20 keys with an expiry per database, again while more than a
// quarter of a sample had expired, within budget.
func (ks *keyspace) activeExpire(budget time.Duration) (removed int) {
	deadline := time.Now().Add(budget)
	now := nowMs()
	for _, d := range ks.dbs {
		for len(d.expires) > 0 {
			n, hit := 0, 0
			for k, t := range d.expires { // map iteration starts at a random key
				if n == 20 {
					break
				}
				n++
				if t <= now {
					ks.del(d, k)
					hit++
				}
			}
			removed += hit
			ks.expired += uint64(hit)
			if hit*4 <= n || time.Now().After(deadline) {
				break
			}
		}
	}
	return removed
}

// evictOne removes the least recently used of a sample of 5 keys from the
// databases (allkeys-lru); false when there is nothing to evict.
func (ks *keyspace) evictOne() bool {
	var best *db
	var bestKey string
	var bestLRU uint32
	found := false
	first := ks.rnd.IntN(NumDBs)
	for i := 0; i < NumDBs; i++ {
		d := ks.dbs[(first+i)%NumDBs]
		n := 0
		for k, e := range d.keys {
			if n == 5 {
				break
			}
			n++
			if !found || e.lru < bestLRU {
				best, bestKey, bestLRU, found = d, k, e.lru, true
			}
		}
		if found {
			break
		}
	}
	if !found {
		return false
	}
	ks.touch(best, bestKey)
	ks.del(best, bestKey)
	ks.evicted++
	return true
}

// touch marks the connections WATCHing key in d as dirty.
func (ks *keyspace) touch(d *db, key string) {
	if len(d.watch) == 0 {
		return
	}
	for _, c := range d.watch[key] {
		c.dirtyCAS = true
	}
}

// touchAll marks every connection watching a key of d that exists (FLUSHDB).
func (ks *keyspace) touchAll(d *db) {
	for k, cs := range d.watch {
		if _, ok := d.keys[k]; ok {
			for _, c := range cs {
				c.dirtyCAS = true
			}
		}
	}
}
