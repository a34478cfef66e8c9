package service

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func seedSchema() *methodSchema {
	msgs := []MessageDesc{
		{Name: "p.Req", Fields: []FieldDesc{{Number: 1, Name: "name", Kind: 9, Message: -1}, {Number: 2, Name: "kids", Kind: kindMessage, Repeated: true, Message: 0}, {Number: 7, Name: "r", Kind: kindMessage, Message: 1}}},
		{Name: "p.Resp", Fields: []FieldDesc{{Number: 3, Name: "v", Kind: 4, Repeated: true, Message: -1}}},
	}
	return &methodSchema{name: "/p.S/M", fp: 42, req: 0, resp: 1, msgs: msgs}
}

// FuzzRequestHeader: parsing any bytes returns an error or a header that
// encodes back to the same bytes (up to the message offset), and whose
// metadata respects the limits.
func FuzzRequestHeader(f *testing.F) {
	f.Add(appendReqHeader(nil, &reqHeader{kind: kindCall, handle: 3, fp: 99}, nil))
	f.Add(appendReqHeader(nil, &reqHeader{kind: kindCall, flags: flagDeadline | flagCallID, timeout: time.Second, callID: 7},
		Metadata{{"token", "secret"}, {"trace", ""}}))
	f.Add(appendReqHeader(nil, &reqHeader{kind: kindCancel, flags: flagCallID, callID: 1}, nil))
	f.Add(append(appendReqHeader(nil, &reqHeader{kind: kindBind, fp: 42}, nil), seedSchema().encode(nil)...))
	f.Fuzz(func(t *testing.T, p []byte) {
		var h, fh reqHeader
		off, err := parseReqHeader(p, &h)
		if parseFixedCall(p, &fh) && (err != nil || off != reqFixed || !reflect.DeepEqual(fh, h)) {
			t.Fatalf("parseFixedCall: %+v; parseReqHeader: %+v at %d, %v", fh, h, off, err)
		}
		if err != nil {
			return
		}
		if off > len(p) || off%8 != 0 {
			t.Fatalf("offset %d of %d bytes", off, len(p))
		}
		md := decodeMetadata(h.md)
		if err := md.check(); err != nil {
			t.Fatalf("parsed metadata beyond the limits: %v", err)
		}
		again := appendReqHeader(nil, &h, md)
		if !bytes.Equal(again, p[:off]) {
			t.Fatalf("re-encoded\n%x\nparsed\n%x", again, p[:off])
		}
		if h.kind == kindBind {
			if s, err := parseSchema(p[off:], h.fp); err == nil {
				checkSchemaRoundTrip(t, s)
			}
		}
	})
}

// FuzzBind: a bind request body parses into a schema that encodes back to
// the same bytes and is compatible with itself, or is refused.
func FuzzBind(f *testing.F) {
	f.Add(seedSchema().encode(nil))
	s := seedSchema()
	s.msgs[1].Fields[0].Kind = 9
	f.Add(s.encode(nil))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := parseSchema(p, 1)
		if err != nil {
			return
		}
		if again := s.encode(nil); !bytes.Equal(again, p) {
			t.Fatalf("re-encoded %x, parsed %x", again, p)
		}
		checkSchemaRoundTrip(t, s)
		if err := compatible(s, seedSchema()); err != nil && !bytes.Contains([]byte(err.Error()), []byte("on the client")) {
			t.Fatalf("incompatibility without a reason: %v", err)
		}
	})
}

func checkSchemaRoundTrip(t *testing.T, s *methodSchema) {
	t.Helper()
	back, err := parseSchema(s.encode(nil), s.fp)
	if err != nil {
		t.Fatalf("a parsed schema does not parse again: %v", err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip changed the schema")
	}
	if err := compatible(s, s); err != nil {
		t.Fatalf("a schema incompatible with itself: %v", err)
	}
	for i := range s.msgs {
		_ = MessageFingerprint(s.msgs, i) // recursive tables must terminate
	}
}

// FuzzResponse: a response parses into an offset within the bytes or an
// *Error within the limits, or is refused; isRespOK (the client's fast
// path) accepts only what parseResp reads as OK at offset respFixed.
func FuzzResponse(f *testing.F) {
	f.Add(appendRespOK(nil))
	f.Add(appendRespStatus(nil, &Error{Code: NotFound, Message: "no such key", Details: []byte{1, 2, 3}}))
	f.Add(appendRespStatus(nil, &Error{Code: Internal}))
	f.Fuzz(func(t *testing.T, p []byte) {
		off, se, err := parseResp(p)
		if isRespOK(p) && (off != respFixed || se != nil || err != nil) {
			t.Fatalf("isRespOK but parseResp = %d, %v, %v", off, se, err)
		}
		switch {
		case err != nil:
		case se != nil:
			if se.Code == OK || int(se.Code) >= NumCodes || len(se.Message) > MaxStatusMessage+64 || len(se.Details) > MaxStatusDetails {
				t.Fatalf("status beyond the limits: %v", se)
			}
		case off > len(p):
			t.Fatalf("offset %d of %d bytes", off, len(p))
		}
	})
}
