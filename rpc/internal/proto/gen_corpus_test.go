package proto

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var genCorpus = flag.Bool("gencorpus", false, "regenerate the committed fuzz seed corpus")

// TestGenCorpus writes the committed seed corpus when run with -gencorpus.
func TestGenCorpus(t *testing.T) {
	if !*genCorpus {
		t.Skip("run with -gencorpus to regenerate testdata/fuzz")
	}
	hdr := func(h Header, data int) []byte {
		b := make([]byte, HeaderSize+data)
		_ = h.Encode(b)
		return b
	}
	write := func(name, file, body string) {
		p := filepath.Join("testdata/fuzz", name, file)
		if err := os.WriteFile(p, []byte("go test fuzz v1\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hs := map[string][]byte{
		"req":       hdr(Header{ReqType: 1, MsgSize: 8, DestSession: 5, ReqNum: 8}, 8),
		"cr":        hdr(Header{ReqType: 1, DestSession: 0, Type: PktCR, ReqNum: 8}, 0),
		"resp-big":  hdr(Header{ReqType: 1, MsgSize: 400, DestSession: 0, Type: PktResp, PktNum: 0, ReqNum: 16}, 100),
		"rfr":       hdr(Header{ReqType: 1, DestSession: 5, Type: PktRFR, PktNum: 3, ReqNum: 8}, 0),
		"req-multi": hdr(Header{ReqType: 1, MsgSize: 250, DestSession: 5, PktNum: 1, ReqNum: 8}, 100),
		"req-ack":   hdr(Header{ReqType: 1, MsgSize: 8, DestSession: 5, ReqNum: 8, Flags: FlagAck}, 8),
		"max":       hdr(Header{ReqType: 255, MsgSize: MaxMsgSizeField, DestSession: 0xFFFF, Type: PktResp, PktNum: MaxPktNum, ReqNum: MaxReqNum}, 0),
	}
	for name, b := range hs {
		write("FuzzHeader", name, fmt.Sprintf("[]byte(%q)\n", b))
		toClient := name == "cr" || name == "resp-big" || name == "max"
		write("FuzzStep", name, fmt.Sprintf("[]byte(%q)\nbool(%v)\n", b, toClient))
	}
	write("FuzzHeader", "short", "[]byte(\"\\x0b\\x00\")\n")
	// FuzzStepCC: acks (a CR for a request's last packet) of the world's
	// two requests, a late response, and a request to the server.
	cc := map[string][]byte{
		"ack-one":   hdr(Header{ReqType: 1, DestSession: 0, Type: PktCR, PktNum: 0, ReqNum: 9}, 0),
		"ack-multi": hdr(Header{ReqType: 1, DestSession: 0, Type: PktCR, PktNum: 2, ReqNum: 8}, 0),
		"resp":      hdr(Header{ReqType: 1, MsgSize: 400, DestSession: 0, Type: PktResp, PktNum: 0, ReqNum: 9}, 100),
		"req":       hs["req"],
	}
	for name, b := range cc {
		write("FuzzStepCC", name, fmt.Sprintf("[]byte(%q)\nbool(%v)\n", b, name != "req"))
	}
}
