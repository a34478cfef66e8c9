package resp

import (
	"math"
	"strconv"
	"time"
)

// blockKey names a list key of one database that clients wait on.
type blockKey struct {
	db  int
	key string
}

type readyKey = blockKey

// waiter is a client blocked in BLPOP, BRPOP, BLMOVE or BRPOPLPUSH. The
// keyspace serves waiters in the order they blocked (serveBlocked, with
// the keyspace lock held) and hands the result over through done.
type waiter struct {
	db      int
	keys    []string
	left    bool   // pop from the head
	move    bool   // BLMOVE: push to dst
	dst     string // BLMOVE's destination
	dstLeft bool
	served  bool   // result set (under the keyspace lock)
	key     string // result: the key popped from
	val     []byte // result: the element (owned by the waiter)
	done    chan struct{}
}

// signalReady notes that key of database dbi may have elements for
// blocked clients.
func (ks *keyspace) signalReady(dbi int, key []byte) {
	if ks.nblocked == 0 {
		return
	}
	bk := blockKey{dbi, string(key)}
	if _, ok := ks.blocked[bk]; ok {
		ks.ready = append(ks.ready, bk)
	}
}

// serveBlocked hands elements of the keys signalled ready to the clients
// blocked on them, first blocked first served. Called with the keyspace
// lock held, after each command.
func (s *Server) serveBlocked() {
	ks := s.ks
	for len(ks.ready) > 0 {
		rk := ks.ready[0]
		ks.ready = ks.ready[1:]
		d := ks.dbs[rk.db]
		for len(ks.blocked[rk]) > 0 {
			e := ks.lookup(d, []byte(rk.key))
			if e == nil || e.k != kList {
				break
			}
			w := ks.blocked[rk][0]
			if w.move {
				de := d.keys[w.dst]
				if de != nil && de.k != kList {
					// The destination changed type: this client stays blocked.
					break
				}
			}
			ks.unblock(w)
			w.key = rk.key
			w.val = ks.popVal(d, rk.key, e, w.left)
			if w.move {
				de := ks.lookup(d, []byte(w.dst))
				if de == nil {
					de = ks.newList(d, []byte(w.dst))
				}
				cp := ks.newVal(w.val)
				ks.used += valSize(cp)
				if w.dstLeft {
					de.list().pushFront(cp)
				} else {
					de.list().pushBack(cp)
				}
				ks.signalReady(rk.db, []byte(w.dst))
			}
			w.served = true
			close(w.done)
		}
	}
	if len(ks.ready) == 0 {
		ks.ready = ks.ready[:0:0]
	}
}

// block registers w on its keys.
func (ks *keyspace) block(w *waiter) {
	for _, k := range w.keys {
		bk := blockKey{w.db, k}
		ks.blocked[bk] = append(ks.blocked[bk], w)
	}
	ks.nblocked++
}

// unblock removes w from every key it waits on.
func (ks *keyspace) unblock(w *waiter) {
	for _, k := range w.keys {
		bk := blockKey{w.db, k}
		ws := ks.blocked[bk]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(ks.blocked, bk)
		} else {
			ks.blocked[bk] = ws
		}
	}
	ks.nblocked--
}

// timeoutArg parses a blocking timeout in seconds (a decimal, as Redis 6+).
func (cn *conn) timeoutArg(b []byte) (time.Duration, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64/1e9/2 {
		cn.fail("timeout is not a float or out of range")
		return 0, false
	}
	if f < 0 {
		cn.fail("timeout is negative")
		return 0, false
	}
	return time.Duration(f * 1e9), true
}

func cmdBPop(cn *conn, args [][]byte) {
	timeout, ok := cn.timeoutArg(args[len(args)-1])
	if !ok {
		return
	}
	left := eq(args[0], "blpop")
	keys := args[1 : len(args)-1]
	ks, d := cn.srv.ks, cn.db()
	for _, k := range keys {
		e, ok := cn.getList(k)
		if !ok {
			return
		}
		if e != nil {
			cn.out.arrayHeader(2)
			cn.out.bulk(k)
			cn.replyOwned(ks.popVal(d, string(k), e, left))
			return
		}
	}
	if cn.inExec {
		cn.out.nullArray()
		return
	}
	w := &waiter{db: cn.dbi, left: left, done: make(chan struct{})}
	for _, k := range keys {
		w.keys = append(w.keys, string(k))
	}
	ks.block(w)
	cn.blocked, cn.blockTimeout = w, timeout
}

func cmdBLMove(cn *conn, args [][]byte) {
	from, to := false, true
	if len(args) == 6 {
		var ok1, ok2 bool
		from, ok1 = whereArg(args[3])
		to, ok2 = whereArg(args[4])
		if !ok1 || !ok2 {
			cn.fail(errSyntax)
			return
		}
	}
	timeout, ok := cn.timeoutArg(args[len(args)-1])
	if !ok {
		return
	}
	if cn.lmove(args[1], args[2], from, to) {
		return
	}
	if cn.inExec {
		cn.out.nullArray()
		return
	}
	w := &waiter{db: cn.dbi, keys: []string{string(args[1])}, left: from, move: true, dst: string(args[2]), dstLeft: to, done: make(chan struct{})}
	cn.srv.ks.block(w)
	cn.blocked, cn.blockTimeout = w, timeout
}

// waitBlocked waits (without the keyspace lock) for the client's waiter to
// be served, its timeout, the client going away or the server closing,
// and answers. While it waits, a reader keeps what the client sends (it
// is executed after the reply, as Redis does) and notices a closed
// connection. It reports false when the connection is to be closed.
func (cn *conn) waitBlocked() bool {
	w := cn.blocked
	cn.blocked = nil
	s := cn.srv
	var timer <-chan time.Time
	if cn.blockTimeout > 0 {
		t := time.NewTimer(cn.blockTimeout)
		defer t.Stop()
		timer = t.C
	}
	type readResult struct {
		n   int
		err error
	}
	var rd chan readResult
	if cn.w < len(cn.in) {
		rd = make(chan readResult, 1)
		buf := cn.in[cn.w:]
		go func() {
			n, err := cn.c.Read(buf)
			rd <- readResult{n, err}
		}()
	}
	gone := false
	select {
	case <-w.done:
	case <-timer:
	case <-s.done:
		gone = true
	case r := <-rd:
		cn.w += r.n
		rd = nil
		if r.err != nil {
			gone = true
		} else {
			// The client sent more while blocked: keep waiting without a reader.
			select {
			case <-w.done:
			case <-timer:
			case <-s.done:
				gone = true
			}
		}
	}
	if rd != nil {
		_ = cn.c.SetReadDeadline(time.Unix(1, 0)) // interrupt the reader
		r := <-rd
		cn.w += r.n
		_ = cn.c.SetReadDeadline(time.Time{})
		if r.err != nil && !isTimeout(r.err) {
			gone = true
		}
	}
	s.kmu.Lock()
	if !w.served {
		s.ks.unblock(w)
		s.kmu.Unlock()
		cn.out.nullArray()
		return !gone
	}
	s.kmu.Unlock()
	if w.move {
		cn.replyOwned(w.val)
	} else {
		cn.out.arrayHeader(2)
		cn.out.bulkString(w.key)
		cn.replyOwned(w.val)
	}
	return !gone
}
