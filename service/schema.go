package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/cornflakes-go/cornflakes/mem"
	"github.com/cornflakes-go/cornflakes/rpc"
	"github.com/cornflakes-go/cornflakes/runtime/wireimpl"
	"github.com/cornflakes-go/cornflakes/service/fingerprint"
	"github.com/cornflakes-go/cornflakes/wire"
)

// FieldDesc describes one field of a message (see package fingerprint).
type FieldDesc = fingerprint.Field

// MessageDesc describes a message type (see package fingerprint).
type MessageDesc = fingerprint.Message

// MethodHandler decodes a request from req into a, runs the method of srv
// (through ic when it is not nil) and returns the response object, which
// lives in a. Generated code provides one per method.
type MethodHandler func(srv any, ctx context.Context, a *wire.Arena, req []byte, ic UnaryServerInterceptor, info *MethodInfo) (wire.Object, error)

// MethodBufHandler is MethodHandler for a request given as the server's
// own reference on its bytes, borrowed: req (and every zero-copy field
// decoded from it) is valid until a's next Reset, which the Server does
// after the response has been sent. The Server calls it (instead of
// MethodHandler) for methods registered in rpc.Dispatch mode only, with
// a.BorrowInput set: the handler decodes the request with the message's
// Decode(req), which then takes no reference on req (the fast path of
// wire.Arena.BorrowInput), and must clear a.BorrowInput before it runs
// the method, so that the method's own decodes into a keep the arena's
// ordinary ownership (the Server clears it when the handler returns or
// panics in any case). The checked build (-tags cfcheck) verifies the contract: a's
// Reset then fails when an input was released before it.
type MethodBufHandler func(srv any, ctx context.Context, a *wire.Arena, req mem.Buf, ic UnaryServerInterceptor, info *MethodInfo) (wire.Object, error)

// DirectResponse is the response a MethodDirect returns: a generated
// message, which the Server serializes into its response buffer in one walk
// (wireimpl.SGAWriter) or, when it does not fit there, sends as an object.
type DirectResponse interface {
	wire.Object
	wireimpl.SGAWriter
}

// MethodDirect serves one call of a method already bound to its
// implementation (MethodDesc.Direct): the MethodBufHandler contract
// (req borrowed, a.BorrowInput set on entry and cleared by the handler
// after its decode, the response a message of a) without an interceptor,
// without the implementation passed as an interface value and with the
// response's concrete type in the returned interface. The Server uses it
// for methods served in rpc.Dispatch mode when it has no interceptor.
//
// keep holds the messages the generated code reuses across the calls of
// the method that one server call state serves, one after the other
// (never two at once): it makes them empty again, bound to a, instead of
// making new ones in a. The response it returns may be one of them: the
// Server is done with it when the call's answer has been sent.
type MethodDirect func(ctx context.Context, a *wire.Arena, req mem.Buf, keep *DirectKeep) (DirectResponse, error)

// DirectKeep holds the request and response messages a MethodDirect keeps
// between calls (nil until its first call): pointers to the method's own
// request and response types, which only that method's generated code
// stores and reads (the Server gives each method its own DirectKeep per
// server call state, and never reads them).
//
// W, when the generated code sets it (with Resp, on the method's first
// call), writes the OK status header (PutStatusOK) and the response the
// MethodDirect returned (always Resp's message) in place into the send
// record of the answer, or declines (-1: it does not fit, or has zero-copy
// values); the Server then writes the response the general way. The
// Server reads W only after a call that returned its response without an
// error.
type DirectKeep struct {
	Req, Resp unsafe.Pointer
	W         rpc.InlineWriter
}

// MethodDesc describes one method of a service.
type MethodDesc struct {
	Name        string // the method's name ("SayHello")
	Request     int    // index of the request type in ServiceDesc.Messages
	Response    int    // index of the response type
	Fingerprint uint64 // MethodFingerprint, as generated
	Handler     MethodHandler
	// BufHandler, when set, serves the method's calls in rpc.Dispatch
	// mode (Handler serves the others); optional.
	BufHandler MethodBufHandler
	// Direct, when set, binds the method to an implementation of the
	// service's server interface (impl; RegisterService checks the type
	// first) once, at registration: the MethodDirect it returns serves
	// the method's rpc.Dispatch calls on a Server without interceptors;
	// optional (BufHandler and Handler serve the others). Generated code
	// sets it.
	Direct func(impl any) MethodDirect
	// EncodeRequest, when set, serializes req if it is the method's
	// request type (ok; err is the serialization's) into sga in one walk
	// (wireimpl.SGAWriter), without a type assertion to an interface:
	// AsyncCall.Start's fast path uses it; optional. Generated code sets it.
	EncodeRequest func(req wire.Object, sga *wireimpl.SGA) (ok bool, err error)
	// WriteRequest, when set, writes req at the start of dst
	// (wireimpl.FlatWriter) if it is the method's request type, holds no
	// zero-copy value and fits, and returns the bytes written; otherwise
	// it returns -1 (EncodeRequest then decides). AsyncCall.Start's fast
	// path tries it first; optional. Generated code sets it for a request
	// type whose fields are all scalars, bytes or strings.
	WriteRequest func(req wire.Object, dst []byte) int
	// WriteResponse is WriteRequest for a response a MethodDirect
	// returned (WireSerializeSGA decides when it returns -1); optional.
	// Generated code sets it for a response type whose fields are all
	// scalars, bytes or strings.
	WriteResponse func(resp DirectResponse, dst []byte) int
}

// ServiceDesc describes a service for RegisterService and the generated
// clients: generated code provides one per service block. Messages holds
// every message type its methods reach (request and response types and,
// transitively, the types of their message fields).
type ServiceDesc struct {
	Name        string // full protobuf name ("helloworld.Greeter")
	HandlerType any    // a nil pointer to the server interface, checked by RegisterService
	Messages    []MessageDesc
	Methods     []MethodDesc
}

// FullMethod is "/<service>/<method>", the name gRPC gives a method.
func (d *ServiceDesc) FullMethod(i int) string { return "/" + d.Name + "/" + d.Methods[i].Name }

// Kind names, indexed by protobuf kind number.
var kindNames = [...]string{"", "double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool",
	"string", "group", "message", "bytes", "uint32", "enum", "sfixed32", "sfixed64", "sint32", "sint64"}

const (
	kindGroup   = fingerprint.KindGroup
	kindMessage = fingerprint.KindMessage
	maxKind     = fingerprint.MaxKind
)

func kindName(k uint8, repeated bool) string {
	s := fmt.Sprintf("kind(%d)", k)
	if int(k) < len(kindNames) && k != 0 {
		s = kindNames[k]
	}
	if repeated {
		return "repeated " + s
	}
	return s
}

// MessageFingerprint is the structural fingerprint of msgs[i] (fingerprint.Of).
func MessageFingerprint(msgs []MessageDesc, i int) uint64 { return fingerprint.Of(msgs, i) }

// MethodFingerprint is the fingerprint of method m of service svc
// (fingerprint.Method of its full name and its message fingerprints).
func MethodFingerprint(svc string, msgs []MessageDesc, m *MethodDesc) uint64 {
	return fingerprint.Method("/"+svc+"/"+m.Name, fingerprint.Of(msgs, m.Request), fingerprint.Of(msgs, m.Response))
}

// ErrStaleDescriptor: a ServiceDesc whose recorded fingerprints differ from
// the ones its structure gives (edited by hand, or generated by an
// incompatible generator): regenerate the code.
var ErrStaleDescriptor = errors.New("service: descriptor fingerprints do not match its structure")

// check validates d: indices in range, fields in ascending number order,
// and the recorded fingerprints equal to the computed ones.
func (d *ServiceDesc) check() error {
	n := len(d.Messages)
	for i := range d.Messages {
		m := &d.Messages[i]
		var last uint32
		for _, f := range m.Fields {
			if f.Number <= last || f.Kind == 0 || f.Kind > maxKind || f.Kind == kindGroup ||
				(f.Kind == kindMessage) != (f.Message >= 0) || f.Message >= n {
				return fmt.Errorf("service %s: message %s: invalid field %d", d.Name, m.Name, f.Number)
			}
			last = f.Number
		}
	}
	for i := range d.Messages {
		if fp := MessageFingerprint(d.Messages, i); fp != d.Messages[i].Fingerprint {
			return fmt.Errorf("%w: message %s: %#x recorded, %#x computed", ErrStaleDescriptor, d.Messages[i].Name, d.Messages[i].Fingerprint, fp)
		}
	}
	for i := range d.Methods {
		m := &d.Methods[i]
		if m.Request < 0 || m.Request >= n || m.Response < 0 || m.Response >= n {
			return fmt.Errorf("service %s: method %s: invalid message index", d.Name, m.Name)
		}
		if fp := MethodFingerprint(d.Name, d.Messages, m); fp != m.Fingerprint {
			return fmt.Errorf("%w: method %s: %#x recorded, %#x computed", ErrStaleDescriptor, d.FullMethod(i), m.Fingerprint, fp)
		}
	}
	return nil
}

// ---- binding ----

// Limits of a bind request (the schema a client presents).
const (
	// MaxBindMessages is the most message types one method's schema may reach.
	MaxBindMessages = 256
	// MaxBindFields is the most fields of one message in a bind request.
	MaxBindFields = 4096
	// MaxBindSize bounds an encoded bind request (bytes).
	MaxBindSize = 256 << 10
	// maxNameLen bounds names in a bind request.
	maxNameLen = 255
)

// ErrIncompatible: a bind refused because client and server disagree on a
// method's types (a field's kind changed). The *Error the call returns
// (code FailedPrecondition) wraps it and names the method and the field.
var ErrIncompatible = errors.New("service: incompatible schema")

// methodSchema is what a client presents at bind time: the method's name
// and the message types it reaches, request and response first.
type methodSchema struct {
	name      string // "/svc/Method"
	fp        uint64
	req, resp int
	msgs      []MessageDesc
}

// schemaOf extracts method i's schema from d, renumbering the messages it
// reaches (request first).
func schemaOf(d *ServiceDesc, i int) *methodSchema {
	m := &d.Methods[i]
	s := &methodSchema{name: d.FullMethod(i), fp: m.Fingerprint}
	idx := map[int]int{}
	var add func(j int) int
	add = func(j int) int {
		if k, ok := idx[j]; ok {
			return k
		}
		k := len(s.msgs)
		idx[j] = k
		s.msgs = append(s.msgs, MessageDesc{Name: d.Messages[j].Name})
		fs := make([]FieldDesc, len(d.Messages[j].Fields))
		copy(fs, d.Messages[j].Fields)
		for x := range fs {
			if fs[x].Message >= 0 {
				fs[x].Message = add(fs[x].Message)
			}
		}
		s.msgs[k].Fields = fs
		return k
	}
	s.req = add(m.Request)
	s.resp = add(m.Response)
	return s
}

// encode appends the bind request body for s.
func (s *methodSchema) encode(dst []byte) []byte {
	dst = appendName(dst, s.name)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s.msgs)))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(s.req))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(s.resp))
	for _, m := range s.msgs {
		dst = appendName(dst, m.Name)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(m.Fields)))
		for _, f := range m.Fields {
			dst = binary.LittleEndian.AppendUint32(dst, f.Number)
			fl := byte(0)
			if f.Repeated {
				fl = 1
			}
			mi := uint16(0xFFFF)
			if f.Message >= 0 {
				mi = uint16(f.Message)
			}
			dst = append(dst, f.Kind, fl)
			dst = binary.LittleEndian.AppendUint16(dst, mi)
			dst = appendName(dst, f.Name)
		}
	}
	return dst
}

func appendName(dst []byte, s string) []byte {
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
	}
	return append(append(dst, byte(len(s))), s...)
}

var errBadBind = fmt.Errorf("%w: bind request", ErrBadHeader)

// parseSchema decodes a bind request body. Every count is checked against
// the bytes present before anything is allocated for it.
func parseSchema(p []byte, fp uint64) (*methodSchema, error) {
	if len(p) > MaxBindSize {
		return nil, errBadBind
	}
	s := &methodSchema{fp: fp}
	var ok bool
	if s.name, p, ok = takeName(p); !ok || len(p) < 6 {
		return nil, errBadBind
	}
	n := int(binary.LittleEndian.Uint16(p))
	s.req, s.resp = int(binary.LittleEndian.Uint16(p[2:])), int(binary.LittleEndian.Uint16(p[4:]))
	p = p[6:]
	if n == 0 || n > MaxBindMessages || n > len(p)/3 || s.req >= n || s.resp >= n {
		return nil, errBadBind
	}
	s.msgs = make([]MessageDesc, n)
	for i := range s.msgs {
		m := &s.msgs[i]
		if m.Name, p, ok = takeName(p); !ok || len(p) < 2 {
			return nil, errBadBind
		}
		nf := int(binary.LittleEndian.Uint16(p))
		p = p[2:]
		if nf > MaxBindFields || nf > len(p)/9 {
			return nil, errBadBind
		}
		m.Fields = make([]FieldDesc, nf)
		var last uint32
		for j := range m.Fields {
			if len(p) < 9 {
				return nil, errBadBind
			}
			f := &m.Fields[j]
			f.Number, f.Kind = binary.LittleEndian.Uint32(p), p[4]
			f.Repeated = p[5] == 1
			if p[5] > 1 {
				return nil, errBadBind
			}
			mi := binary.LittleEndian.Uint16(p[6:])
			f.Message = -1
			if mi != 0xFFFF {
				f.Message = int(mi)
			}
			if f.Name, p, ok = takeName(p[8:]); !ok {
				return nil, errBadBind
			}
			if f.Number <= last || f.Kind == 0 || f.Kind > maxKind || f.Kind == kindGroup ||
				(f.Kind == kindMessage) != (f.Message >= 0) || f.Message >= n {
				return nil, errBadBind
			}
			last = f.Number
		}
	}
	if len(p) != 0 {
		return nil, errBadBind
	}
	return s, nil
}

func takeName(p []byte) (string, []byte, bool) {
	if len(p) < 1 || len(p)-1 < int(p[0]) {
		return "", nil, false
	}
	n := 1 + int(p[0])
	return string(p[1:n]), p[n:], true
}

// compatible checks what a client presents (c) against the server's own
// schema (s) of the same method: every field number both sides know must
// have the same kind and cardinality, recursively through message fields.
// Fields only one side knows are compatible evolution (the reader skips or
// defaults them). The error names the method, the message and the field.
func compatible(c, s *methodSchema) error {
	seen := map[[2]int]bool{}
	if err := compatMsg(c, c.req, s, s.req, "request", seen); err != nil {
		return err
	}
	return compatMsg(c, c.resp, s, s.resp, "response", seen)
}

func compatMsg(c *methodSchema, ci int, s *methodSchema, si int, path string, seen map[[2]int]bool) error {
	if seen[[2]int{ci, si}] {
		return nil
	}
	seen[[2]int{ci, si}] = true
	cf, sf := c.msgs[ci].Fields, s.msgs[si].Fields
	for i, j := 0, 0; i < len(cf) && j < len(sf); {
		a, b := &cf[i], &sf[j]
		switch {
		case a.Number < b.Number:
			i++
		case a.Number > b.Number:
			j++
		default:
			where := fmt.Sprintf("%s field %d %q of %s", path, b.Number, b.Name, s.msgs[si].Name)
			if a.Kind != b.Kind || a.Repeated != b.Repeated {
				return fmt.Errorf("%w: method %s: %s: %s on the client, %s on the server", ErrIncompatible, s.name, where,
					kindName(a.Kind, a.Repeated), kindName(b.Kind, b.Repeated))
			}
			if a.Message >= 0 {
				if err := compatMsg(c, a.Message, s, b.Message, where+" >", seen); err != nil {
					return err
				}
			}
			i++
			j++
		}
	}
	return nil
}
