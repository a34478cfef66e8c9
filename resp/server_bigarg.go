package resp

import "github.com/cornflakes-go/cornflakes/mem"

// Large arguments are received straight into registered memory, as Redis
// reads a bulk argument of PROTO_MBULK_BIG_ARG (32 KiB) or more straight
// into the string object it then stores: once the header of such a bulk
// has been parsed and its body has not all arrived, the connection
// allocates a pool buffer of the declared length, moves the body bytes
// already buffered into it, and reads the rest of the body into it (with
// a small second read vector for what follows). The whole body is handed
// to the parser (Parser.SetExternal) and, when the command stores the
// argument as a value (SET, MSET, list and hash writes), the keyspace
// keeps that buffer instead of copying it (keyspace.newVal): one copy,
// socket to registered memory.
const (
	// bigArg is the smallest bulk received into a buffer of its own.
	bigArg = 32 << 10
	// bigTail is the most bytes read into the connection's buffer along
	// with the end of a large body (its CRLF and what follows it).
	bigTail = 1 << 10
	// bigNext bounds the next read after a command with a large
	// argument: the next command is likely large too, and a read of the
	// whole buffer would take its body into the buffer (to be copied)
	// instead of into a buffer of its own.
	bigNext = 4 << 10
	// maxBigPending bounds the pool memory the whole server holds for
	// large bodies declared but not yet received: past it, a large
	// argument is received through the connection's buffer, which grows
	// only with bytes received, so declared sizes never drive more than
	// this much allocation.
	maxBigPending = 64 << 20
)

// bigRoom returns where the next read should put bytes of a large
// argument's body (nil: none is being received, read into in as usual).
// It starts receiving one when the parser waits for the body of a bulk
// of at least bigArg bytes not all buffered, the value would be stored
// in the pool, and the pool and maxBigPending have room.
func (cn *conn) bigRoom() []byte {
	if cn.bigBuf != nil {
		return cn.bigBuf[cn.bigN:]
	}
	pos, l, ok := cn.p.PendingBulk()
	if !ok || l < bigArg {
		return nil
	}
	have := cn.w - cn.r - pos
	s := cn.srv
	if have >= l || s.pool == nil || s.ks.storeMin <= 0 || l < s.ks.storeMin || l > s.pool.MaxSize() {
		return nil
	}
	if s.bigPending.Add(int64(l)) > maxBigPending {
		s.bigPending.Add(-int64(l))
		return nil
	}
	b, err := s.pool.Alloc(l)
	if err != nil {
		s.bigPending.Add(-int64(l))
		return nil
	}
	cn.big, cn.bigBuf = b, b.Bytes()
	cn.bigN = copy(cn.bigBuf, cn.in[cn.r+pos:cn.w])
	cn.w = cn.r + pos
	return cn.bigBuf[cn.bigN:]
}

// readRoom is the part of the read buffer the next plain read fills:
// at most bigNext bytes after a command with a large argument.
func (cn *conn) readRoom() []byte {
	if cn.bigLast {
		return cn.in[cn.w:min(len(cn.in), cn.w+bigNext)]
	}
	return cn.in[cn.w:]
}

// bigRead accounts n bytes read into bigRoom's slice; once the body is
// complete it goes to the parser, and the buffer to the command's bodies.
func (cn *conn) bigRead(n int) {
	cn.bigN += n
	if cn.bigN < len(cn.bigBuf) {
		return
	}
	cn.srv.bigPending.Add(-int64(len(cn.bigBuf)))
	cn.srv.stats.bigArgs.Add(1)
	cn.p.SetExternal(cn.bigBuf)
	cn.bigs = append(cn.bigs, cn.big)
	cn.big, cn.bigBuf, cn.bigN = mem.Buf{}, nil, 0
}

// dropBigs releases the bodies of the command just executed that the
// keyspace did not take (zeroed in bigs when it did).
func (cn *conn) dropBigs() {
	for i, b := range cn.bigs {
		if !b.IsZero() {
			_ = b.Release()
		}
		cn.bigs[i] = mem.Buf{}
	}
	cn.bigs = cn.bigs[:0]
}

// releaseBig releases every large body the connection holds (closed, or a
// protocol error).
func (cn *conn) releaseBig() {
	cn.dropBigs()
	if cn.bigBuf != nil {
		cn.srv.bigPending.Add(-int64(len(cn.bigBuf)))
		_ = cn.big.Release()
		cn.big, cn.bigBuf, cn.bigN = mem.Buf{}, nil, 0
	}
}

// take returns the keyspace's ownership of b when b is one of the large
// bodies of the command executing (ks.gifts) that no one has taken yet.
func (ks *keyspace) take(b []byte) bool {
	if len(b) < bigArg {
		return false
	}
	for i, g := range ks.gifts {
		if g.IsZero() {
			continue
		}
		if p := g.Bytes(); len(p) == len(b) && &p[0] == &b[0] {
			ks.gifts[i] = mem.Buf{}
			ks.gifted++
			return true
		}
	}
	return false
}
