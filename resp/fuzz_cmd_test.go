package resp

import (
	"bytes"
	"testing"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/mem/memtest"
)

// FuzzCommands executes arbitrary command sequences (one per line,
// arguments separated by spaces, "\x00" standing for a 600-byte value so
// that pooled values are exercised) on a server over a fake connection:
// no command may panic, and every pool reference must return once the
// keyspace is flushed.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{
		"SET k v EX 10\nGET k\nAPPEND k x\nINCR k\nTYPE k",
		"RPUSH l a \x00 c\nLRANGE l 0 -1\nLPOP l 2\nLINSERT l BEFORE c z\nLPOS l z RANK -1 COUNT 0\nLTRIM l 1 -1",
		"HSET h f \x00 g 1\nHGETALL h\nHINCRBY h g 5\nHDEL h f\nHSCAN h 0 MATCH *",
		"MULTI\nSET a 1\nLPUSH a x\nEXEC\nWATCH a\nDISCARD",
		"SETRANGE s 5 \x00\nGETRANGE s -3 -1\nBLMOVE l s LEFT RIGHT 0\nRENAME s t\nEXPIRE t -1",
		"SELECT 3\nSET k \x00\nSCAN 0 COUNT 5 TYPE string\nKEYS *[a-\nFLUSHALL",
		"HELLO 3\nHGETALL h\nCLIENT SETNAME x\nCLIENT LIST\nCOMMAND DOCS get\nCONFIG GET *\nINFO",
		"INCRBYFLOAT f 0.1\nINCRBYFLOAT f 0x1p99999\nINCRBYFLOAT f 1e99999\nHINCRBYFLOAT h f 1e-4940\nINCRBYFLOAT f -inf",
		"SET k aa\nSET k bb KEEPTTL\nGET k\nSET k \x00\nGET k\nSET k \x00 EX 5\nWATCH k n\nSET k cc NX\nDEL n\nHDEL k f\nMULTI\nGET k\nEXEC",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		p := memtest.NewPool(t, mem.PoolConfig{Name: "fuzz", Concurrent: true, MaxBytes: 16 << 20})
		srv, err := NewServer(Config{Pool: p, CommandTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		big := bytes.Repeat([]byte("B"), 600)
		fc := &fakeConn{chunk: 1 << 20}
		cn := srv.newConn(fc)
		for _, line := range bytes.Split(in, []byte("\n")) {
			fields := bytes.Fields(line)
			if len(fields) == 0 || len(fields) > 64 {
				continue
			}
			for i, a := range fields {
				if bytes.Equal(a, []byte{0}) {
					fields[i] = big
				}
			}
			fc.in = encode(fields...)
			cn.serve()
			if cn.blocked != nil { // a blocking pop with nothing to pop: give up waiting
				srv.kmu.Lock()
				srv.ks.unblock(cn.blocked)
				srv.kmu.Unlock()
				cn.blocked = nil
			}
			cn.quit = false
		}
		cn.out.release()
		srv.kmu.Lock()
		cn.unwatchAll()
		srv.kmu.Unlock()
	})
}
