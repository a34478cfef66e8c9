package gen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cornflakes-go/cornflakes/service/fingerprint"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

const (
	contextPkg = protogen.GoImportPath("context")
	servicePkg = protogen.GoImportPath("github.com/cornflakes-go/cornflakes/service")
	unsafePkg  = protogen.GoImportPath("unsafe")
)

// validateService checks a service block: unary methods only.
func validateService(fd protoreflect.FileDescriptor, s *protogen.Service, add func(protoreflect.SourceLocation, string, string)) {
	locs := fd.SourceLocations()
	for _, m := range s.Methods {
		if m.Desc.IsStreamingClient() || m.Desc.IsStreamingServer() {
			add(locs.ByDescriptor(m.Desc), fmt.Sprintf("streaming method %s", m.Desc.FullName()), "Cornflakes services are unary: use a request that carries a list")
		}
	}
}

// serviceTable is the message table of one service: every message its
// methods reach, in first-reached order (methods in declaration order,
// request before response, fields in number order).
type serviceTable struct {
	msgs  []*protogen.Message
	index map[protoreflect.FullName]int
	table []fingerprint.Message
}

func newServiceTable(s *protogen.Service) *serviceTable {
	t := &serviceTable{index: map[protoreflect.FullName]int{}}
	for _, m := range s.Methods {
		t.add(m.Input)
		t.add(m.Output)
	}
	return t
}

func sortedFields(m *protogen.Message) []*protogen.Field {
	fs := append([]*protogen.Field(nil), m.Fields...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Desc.Number() < fs[j].Desc.Number() })
	return fs
}

func (t *serviceTable) add(m *protogen.Message) int {
	if i, ok := t.index[m.Desc.FullName()]; ok {
		return i
	}
	i := len(t.msgs)
	t.index[m.Desc.FullName()] = i
	t.msgs = append(t.msgs, m)
	t.table = append(t.table, fingerprint.Message{Name: string(m.Desc.FullName())})
	var fs []fingerprint.Field
	for _, f := range sortedFields(m) {
		d := f.Desc
		ff := fingerprint.Field{Number: uint32(d.Number()), Name: string(d.Name()), Kind: uint8(d.Kind()),
			Repeated: d.Cardinality() == protoreflect.Repeated, Message: -1}
		if d.Kind() == protoreflect.MessageKind {
			ff.Message = t.add(f.Message)
		}
		fs = append(fs, ff)
	}
	t.table[i].Fields = fs
	return i
}

// genServices emits the stubs of every service of f: the server
// interface, Unimplemented<S>Server, Register<S>Server, the typed client,
// the per-method handlers and the service descriptor with its
// fingerprints (package service).
func genServices(g *protogen.GeneratedFile, f *protogen.File) {
	for _, s := range f.Services {
		genService(g, s, f.GoImportPath)
	}
}

func genService(g *protogen.GeneratedFile, s *protogen.Service, pkg protogen.GoImportPath) {
	name := s.GoName
	full := string(s.Desc.FullName())
	t := newServiceTable(s)
	ctx := g.QualifiedGoIdent(contextPkg.Ident("Context"))
	arena := g.QualifiedGoIdent(wireIdent("Arena"))
	svc := func(n string) string { return g.QualifiedGoIdent(servicePkg.Ident(n)) }
	newOf := func(m *protogen.Message) string {
		return g.QualifiedGoIdent(protogen.GoIdent{GoName: "New" + m.GoIdent.GoName, GoImportPath: m.GoIdent.GoImportPath})
	}
	decodeOf := func(m *protogen.Message) string { // New and Decode fused (emit_fast_decode.go)
		return g.QualifiedGoIdent(protogen.GoIdent{GoName: "Decode" + m.GoIdent.GoName, GoImportPath: m.GoIdent.GoImportPath})
	}

	// Server interface.
	g.P("// ", name, "Server is the server API of service ", full, ".")
	g.P("// Each method fills resp, a message of the handler's arena, or returns an")
	g.P("// error (a *service.Error for a status; any other error is sent as")
	g.P("// Unknown). req and resp live until the method returns: req's decoded")
	g.P("// fields alias the request bytes (the receive buffer: the arena holds a")
	g.P("// reference that Arena.Reset releases after the response is sent).")
	if lc := strings.TrimSuffix(s.Comments.Leading.String(), "\n"); lc != "" {
		g.P("//")
		g.P(lc)
	}
	g.P("type ", name, "Server interface {")
	for i, m := range s.Methods {
		if i > 0 {
			g.P()
		}
		if lc := strings.TrimSuffix(m.Comments.Leading.String(), "\n"); lc != "" {
			g.P(lc)
			g.P("//")
		}
		g.P("// ", m.GoName, ": ", refNote(m.Input, "req"))
		g.P(m.GoName, "(ctx ", ctx, ", req *", m.Input.GoIdent, ", resp *", m.Output.GoIdent, ") error")
	}
	g.P("}")
	g.P()
	g.P("// Unimplemented", name, "Server answers every method of ", full, " with")
	g.P("// Unimplemented. Embed it in a server so that methods added to the service")
	g.P("// later do not break its build.")
	g.P("type Unimplemented", name, "Server struct{}")
	g.P()
	for _, m := range s.Methods {
		g.P("// ", m.GoName, " answers Unimplemented.")
		g.P("func (Unimplemented", name, "Server) ", m.GoName, "(", ctx, ", *", m.Input.GoIdent, ", *", m.Output.GoIdent, ") error {")
		g.P("return ", svc("Errorf"), "(", svc("Unimplemented"), `, "method `, m.GoName, ` not implemented")`)
		g.P("}")
		g.P()
	}
	g.P("// Register", name, "Server registers srv to serve ", full, " on s (options: ")
	g.P("// service.WithMode, service.WithMethodMode).")
	g.P("func Register", name, "Server(s *", svc("Server"), ", srv ", name, "Server, opts ...", svc("RegisterOption"), ") error {")
	g.P("return s.RegisterService(&", name, "_ServiceDesc, srv, opts...)")
	g.P("}")
	g.P()

	// Client.
	g.P("// ", name, "Client is the typed client of service ", full, ". It is safe for")
	g.P("// concurrent use, as its service.Client is.")
	g.P("type ", name, "Client struct{ c *", svc("Client"), " }")
	g.P()
	g.P("// New", name, "Client returns a typed client over c.")
	g.P("func New", name, "Client(c *", svc("Client"), ") *", name, "Client { return &", name, "Client{c} }")
	g.P()
	for i, m := range s.Methods {
		g.P("// ", m.GoName, " calls ", full, ".", m.GoName, ". req is serialized before it")
		g.P("// returns; the response is a message of a, valid until a.Reset (its")
		g.P("// bytes are a copy in a's memory: decoding it takes no references).")
		g.P("// Setting a field of req from memory outside a registered pool copies")
		g.P("// it (see wire.Arena.SilentCopies).")
		g.P("func (c *", name, "Client) ", m.GoName, "(ctx ", ctx, ", a *", arena, ", req *", m.Input.GoIdent, ") (*", m.Output.GoIdent, ", error) {")
		g.P("resp := ", newOf(m.Output), "(a)")
		g.P("if err := c.c.Invoke(ctx, &", name, "_ServiceDesc, ", i, ", a, req, resp); err != nil {")
		g.P("return nil, err")
		g.P("}")
		g.P("return resp, nil")
		g.P("}")
		g.P()
		g.P("// ", m.GoName, "Async sends a call of ", full, ".", m.GoName, " and returns at once;")
		g.P("// done runs later, on the goroutine that runs the client's loop")
		g.P("// (service.Client.Run), with the response (a message of a, valid until")
		g.P("// a.Reset) or the error. a belongs to the call until done runs; done must")
		g.P("// not block. See service.InvokeAsync.")
		g.P("func (c *", name, "Client) ", m.GoName, "Async(ctx ", ctx, ", a *", arena, ", req *", m.Input.GoIdent, ", done func(*", m.Output.GoIdent, ", error)) error {")
		g.P("return ", svc("InvokeAsync"), "(ctx, c.c, &", name, "_ServiceDesc, ", i, ", a, req, ", newOf(m.Output), "(a), done)")
		g.P("}")
		g.P()
		g.P("// New", m.GoName, "Call makes a reusable asynchronous call of ", full, ".", m.GoName, ",")
		g.P("// one request in flight at a time (a slot of a closed loop): each Start")
		g.P("// sends a request; done runs later, on the goroutine that runs the")
		g.P("// client's loop, with the response (a message of a, valid until a.Reset)")
		g.P("// or the error, and may Start the call again. See service.AsyncCall.")
		g.P("func (c *", name, "Client) New", m.GoName, "Call(a *", arena, ", done func(*", m.Output.GoIdent, ", error)) *", svc("AsyncCall"), "[*", m.Output.GoIdent, "] {")
		var mk string
		if mm, err := newMessage(m.Output); err == nil && keptDecodable(m.Output, pkg) && bytesOnly1(mm) != nil {
			// Its common response decoded by one call (wireimpl.DecodeKeptBytes1).
			dk := decodeKeptName(name, m.Output)
			mk = svc("NewAsyncCallKeptBytes1") + "(c.c, &" + name + "_ServiceDesc, " + fmt.Sprint(i) + ", a, " + newOf(m.Output) + ", " + reuseName(name, m.Output) + ", " + dk + ", " + dk + "Rest, " + dk + "Fields, done)"
		} else if keptDecodable(m.Output, pkg) {
			mk = svc("NewAsyncCallKept") + "(c.c, &" + name + "_ServiceDesc, " + fmt.Sprint(i) + ", a, " + newOf(m.Output) + ", " + reuseName(name, m.Output) + ", " + decodeKeptName(name, m.Output) + ", done)"
		} else if reusable(m.Output, pkg) {
			mk = svc("NewAsyncCallReusing") + "(c.c, &" + name + "_ServiceDesc, " + fmt.Sprint(i) + ", a, " + newOf(m.Output) + ", " + reuseName(name, m.Output) + ", done)"
		} else {
			mk = svc("NewAsyncCall") + "(c.c, &" + name + "_ServiceDesc, " + fmt.Sprint(i) + ", a, " + newOf(m.Output) + ", done)"
		}
		if requestBytes1(m.Input, pkg) {
			// Its request written by Start itself (wireimpl.WriteFlatBytes1).
			mk = svc("RequestBytes1") + "(" + mk + ", " + "_" + name + "_" + m.GoName + "_RequestFields)"
		}
		g.P("return ", mk)
		g.P("}")
		g.P()
	}

	// Reuse helpers: a message of this package made empty again in place
	// (what its New makes, outside the arena's memory), for the messages
	// that AsyncCall and the Direct binding keep across calls.
	for _, msg := range reuseMessages(s, pkg) {
		id := g.QualifiedGoIdent(msg.GoIdent)
		g.P("// ", reuseName(name, msg), " returns x made empty and bound to a's current batch,")
		g.P("// as ", newOf(msg), "(a) makes one but outside a's memory (a new message")
		g.P("// when x is nil): a message kept across a's Resets")
		g.P("// (service.NewAsyncCallReusing, service.DirectKeep).")
		g.P("func ", reuseName(name, msg), "(x *", id, ", a *", arena, ") *", id, " {")
		g.P("if x == nil {")
		g.P("x = new(", id, ")")
		g.P("} else {")
		g.P("*x = ", id, "{}")
		g.P("}")
		g.P("x.cf.Init(", toRuntimeArena(g, "a"), ")")
		g.P("return x")
		g.P("}")
		g.P()
		if keptDecodable(msg, pkg) {
			mm, _ := newMessage(msg)
			if f := bytesOnly1(mm); f != nil {
				emitDecodeKeptBytes1(g, mm, f, decodeKeptName(name, msg))
			} else {
				emitDecodeKept(g, mm, decodeKeptName(name, msg)) // emit_fast_decode.go
			}
		}
	}

	// Handlers: the request from bytes (every mode), or from the server's
	// borrowed receive buffer (rpc.Dispatch: no reference taken for the
	// decode; see service.MethodBufHandler), then one shared call.
	memBuf := g.QualifiedGoIdent(memPkg.Ident("Buf"))
	object := g.QualifiedGoIdent(wireIdent("Object"))
	for _, m := range s.Methods {
		in, out := g.QualifiedGoIdent(m.Input.GoIdent), g.QualifiedGoIdent(m.Output.GoIdent)
		h := "_" + name + "_" + m.GoName
		// handler emits one decoding front: its input parameter, the decode
		// call, and what follows a successful decode.
		// decode is either a method call on a new request ("DecodeBytes(data)")
		// or, from a buffer, the fused Decode<Msg> (fused).
		handler := func(suffix, param, decode string, fused bool, after ...string) {
			g.P("func ", h, suffix, "(srv any, ctx ", ctx, ", a *", arena, ", ", param, ", ic ", svc("UnaryServerInterceptor"), ", info *", svc("MethodInfo"), ") (", object, ", error) {")
			if fused {
				g.P("req, err := ", decodeOf(m.Input), "(a, ", decode, ")")
				g.P("if err != nil {")
			} else {
				g.P("req := ", newOf(m.Input), "(a)")
				g.P("if err := req.", decode, "; err != nil {")
			}
			g.P("return nil, ", svc("Errorf"), "(", svc("InvalidArgument"), `, "decoding the request: %v", err)`)
			g.P("}")
			for _, l := range after {
				g.P(l)
			}
			g.P("return ", h, "_Serve(srv, ctx, a, req, ic, info)")
			g.P("}")
			g.P()
		}
		handler("_Handler", "data []byte", "DecodeBytes(data)", false)
		handler("_BufHandler", "in "+memBuf, "in", true, "a.BorrowInput = false // only the request borrows")
		// Direct: the method bound to the implementation at registration
		// (service.MethodDesc.Direct), for a Server without interceptors;
		// only for a response type with a WireSerializeSGA
		// (service.DirectResponse; emit_fast_encode.go).
		if directMessage(m.Output, nil) {
			// A response of one bytes field (bytesOnly1) is kept in a type
			// of the method's own that writes the status header and the
			// response in place (service.DirectKeep.W).
			var outW *field
			if mo, err := newMessage(m.Output); err == nil && reusable(m.Output, pkg) {
				outW = bytesOnly1(mo)
			}
			if outW != nil {
				_, bit := bitOf(outW)
				g.P("// ", h, "_Resp is the response of ", m.GoName, " that its Direct binding keeps")
				g.P("// (service.DirectKeep): the message and its in-place writer.")
				g.P("type ", h, "_Resp struct{ ", out, " }")
				g.P()
				g.P("// WriteInline writes the OK status header and o's message at the start of")
				g.P("// dst and returns the bytes written, or -1 when it does not fit or holds")
				g.P("// zero-copy values (rpc.InlineWriter; service.DirectKeep.W).")
				g.P("func (o *", h, "_Resp) WriteInline(dst []byte) int {")
				g.P("if len(dst) <= ", svc("StatusOKLen"), " {")
				g.P("return -1")
				g.P("}")
				g.P("n := ", g.QualifiedGoIdent(runtimePkg.Ident("WriteFlatBytes1")), "(dst[", svc("StatusOKLen"), ":], &o.cf, &o.", outW.sf, ", ", bit, ")")
				g.P("if n < 0 {")
				g.P("return -1")
				g.P("}")
				g.P(svc("PutStatusOK"), "(dst)")
				g.P("return ", svc("StatusOKLen"), " + n")
				g.P("}")
				g.P()
			}
			g.P("func ", h, "_Direct(srv any) ", svc("MethodDirect"), " {")
			g.P("s, ok := srv.(", name, "Server)")
			g.P("if !ok {")
			g.P("return nil")
			g.P("}")
			g.P("return func(ctx ", ctx, ", a *", arena, ", in ", memBuf, ", keep *", svc("DirectKeep"), ") (", svc("DirectResponse"), ", error) {")
			// The messages kept in keep (this call state's, for this
			// method) are made empty again instead of made anew.
			keptMsg := func(v, field string, msg *protogen.Message) {
				if !reusable(msg, pkg) {
					g.P(v, " := ", newOf(msg), "(a)")
					return
				}
				// (keep's pointers are this method's own types: service.DirectKeep)
				id := g.QualifiedGoIdent(msg.GoIdent)
				ptr := g.QualifiedGoIdent(unsafePkg.Ident("Pointer"))
				g.P(v, "0 := (*", id, ")(keep.", field, ")")
				g.P(v, " := ", reuseName(name, msg), "(", v, "0, a)")
				g.P("if ", v, "0 == nil {")
				g.P("keep.", field, " = ", ptr, "(", v, ")")
				g.P("}")
			}
			if mi, err := newMessage(m.Input); err == nil && keptDecodable(m.Input, pkg) && bytesOnly1(mi) != nil {
				// Made empty and decoded by wireimpl.DecodeKeptBytes1 itself
				// (the fused helper's body without its frame); any other
				// input by the helper's second half.
				f := bytesOnly1(mi)
				_, bit := bitOf(f)
				id := g.QualifiedGoIdent(m.Input.GoIdent)
				ptr := g.QualifiedGoIdent(unsafePkg.Ident("Pointer"))
				g.P("req := (*", id, ")(keep.Req)")
				g.P("if req == nil {")
				g.P("req = new(", id, ")")
				g.P("keep.Req = ", ptr, "(req)")
				g.P("}")
				g.P("if src, ok := ", g.QualifiedGoIdent(runtimePkg.Ident("DecodeKeptBytes1")), "(&req.cf, &req.", f.sf, ", ", bit, ", ", toRuntimeArena(g, "a"), ", in); !ok {")
				g.P("if _, err := ", decodeKeptName(name, m.Input), "Rest(req, src, in); err != nil {")
				g.P("return nil, ", svc("Errorf"), "(", svc("InvalidArgument"), `, "decoding the request: %v", err)`)
				g.P("}")
				g.P("}")
			} else if keptDecodable(m.Input, pkg) {
				// Made empty and decoded by one fused helper.
				id := g.QualifiedGoIdent(m.Input.GoIdent)
				ptr := g.QualifiedGoIdent(unsafePkg.Ident("Pointer"))
				g.P("req0 := (*", id, ")(keep.Req)")
				g.P("req, err := ", decodeKeptName(name, m.Input), "(req0, a, in)")
				g.P("if req0 == nil {")
				g.P("keep.Req = ", ptr, "(req)")
				g.P("}")
				g.P("if err != nil {")
				g.P("return nil, ", svc("Errorf"), "(", svc("InvalidArgument"), `, "decoding the request: %v", err)`)
				g.P("}")
			} else {
				keptMsg("req", "Req", m.Input)
				g.P("if err := req.Decode(in); err != nil {")
				g.P("return nil, ", svc("Errorf"), "(", svc("InvalidArgument"), `, "decoding the request: %v", err)`)
				g.P("}")
			}
			g.P("a.BorrowInput = false // only the request borrows")
			if outW != nil {
				ptr := g.QualifiedGoIdent(unsafePkg.Ident("Pointer"))
				g.P("o := (*", h, "_Resp)(keep.Resp)")
				g.P("if o == nil {")
				g.P("o = new(", h, "_Resp)")
				g.P("keep.Resp, keep.W = ", ptr, "(o), o")
				g.P("}")
				g.P("resp := ", reuseName(name, m.Output), "(&o.", m.Output.GoIdent.GoName, ", a)")
			} else {
				keptMsg("resp", "Resp", m.Output)
			}
			g.P("return resp, s.", m.GoName, "(ctx, req, resp)")
			g.P("}")
			g.P("}")
			g.P()
		}
		// EncodeRequest: the client's one-walk serialization without a type
		// assertion to an interface (service.MethodDesc.EncodeRequest).
		// Only for a request type with a WireSerializeSGA (emit_fast_encode.go).
		if directMessage(m.Input, nil) {
			g.P("func ", h, "_EncodeRequest(req ", object, ", sga *", g.QualifiedGoIdent(runtimePkg.Ident("SGA")), ") (bool, error) {")
			g.P("x, ok := req.(*", in, ")")
			g.P("if !ok {")
			g.P("return false, nil")
			g.P("}")
			g.P("return true, x.WireSerializeSGA(sga)")
			g.P("}")
			g.P()
		}
		// WriteRequest and WriteResponse: the in-place writers of a flat
		// message without a type assertion to an interface
		// (service.MethodDesc.WriteRequest, WriteResponse; emit_fast_encode_flat.go).
		if flatWritable(m.Input) {
			g.P("func ", h, "_WriteRequest(req ", object, ", dst []byte) int {")
			g.P("x, ok := req.(*", in, ")")
			g.P("if !ok {")
			g.P("return -1")
			g.P("}")
			writeFlatCall(g, m.Input, pkg)
			g.P("}")
			g.P()
		}
		if requestBytes1(m.Input, pkg) {
			mm, _ := newMessage(m.Input)
			f := bytesOnly1(mm)
			_, bit := bitOf(f)
			g.P("// ", h, "_RequestFields returns req's Core, its only field and the field's bit")
			g.P("// when req is a non-nil *", in, " (service.RequestBytes1).")
			g.P("func ", h, "_RequestFields(req ", object, ") (*", g.QualifiedGoIdent(runtimePkg.Ident("Core")), ", *", g.QualifiedGoIdent(runtimePkg.Ident("Bytes")), ", uint32, bool) {")
			g.P("x, ok := req.(*", in, ")")
			g.P("if !ok || x == nil {")
			g.P("return nil, nil, 0, false")
			g.P("}")
			g.P("return &x.cf, &x.", f.sf, ", ", bit, ", true")
			g.P("}")
			g.P()
		}
		if directMessage(m.Output, nil) && flatWritable(m.Output) {
			g.P("func ", h, "_WriteResponse(resp ", svc("DirectResponse"), ", dst []byte) int {")
			g.P("x, ok := resp.(*", g.QualifiedGoIdent(m.Output.GoIdent), ")")
			g.P("if !ok {")
			g.P("return -1")
			g.P("}")
			writeFlatCall(g, m.Output, pkg)
			g.P("}")
			g.P()
		}
		g.P("func ", h, "_Serve(srv any, ctx ", ctx, ", a *", arena, ", req *", in, ", ic ", svc("UnaryServerInterceptor"), ", info *", svc("MethodInfo"), ") (", object, ", error) {")
		g.P("resp := ", newOf(m.Output), "(a)")
		g.P("if ic == nil {")
		g.P("return resp, srv.(", name, "Server).", m.GoName, "(ctx, req, resp)")
		g.P("}")
		g.P("return resp, ic(ctx, req, resp, info, func(ctx ", ctx, ", req, resp any) error {")
		g.P("return srv.(", name, "Server).", m.GoName, "(ctx, req.(*", in, "), resp.(*", out, "))")
		g.P("})")
		g.P("}")
		g.P()
	}

	// Descriptor.
	g.P("// ", name, "_ServiceDesc describes service ", full, " for service.Server and")
	g.P("// service.Client: its methods and the structure and fingerprints of the")
	g.P("// messages they reach, checked at bind time.")
	g.P("var ", name, "_ServiceDesc = ", svc("ServiceDesc"), "{")
	g.P("Name: ", fmt.Sprintf("%q", full), ",")
	g.P("HandlerType: (*", name, "Server)(nil),")
	g.P("Messages: []", svc("MessageDesc"), "{")
	for i := range t.table {
		m := &t.table[i]
		g.P("{Name: ", fmt.Sprintf("%q", m.Name), ", Fingerprint: ", fmt.Sprintf("%#016x", fingerprint.Of(t.table, i)), ", Fields: []", svc("FieldDesc"), "{")
		for _, fl := range m.Fields {
			rep := ""
			if fl.Repeated {
				rep = ", Repeated: true"
			}
			g.P(fmt.Sprintf("{Number: %d, Name: %q, Kind: %d%s, Message: %d},", fl.Number, fl.Name, fl.Kind, rep, fl.Message))
		}
		g.P("}},")
	}
	g.P("},")
	g.P("Methods: []", svc("MethodDesc"), "{")
	for _, m := range s.Methods {
		ri, si := t.index[m.Input.Desc.FullName()], t.index[m.Output.Desc.FullName()]
		fp := fingerprint.Method("/"+full+"/"+string(m.Desc.Name()), fingerprint.Of(t.table, ri), fingerprint.Of(t.table, si))
		h := "_" + name + "_" + m.GoName
		opt := ""
		if directMessage(m.Output, nil) {
			opt += ", Direct: " + h + "_Direct"
		}
		if directMessage(m.Input, nil) {
			opt += ", EncodeRequest: " + h + "_EncodeRequest"
		}
		if flatWritable(m.Input) {
			opt += ", WriteRequest: " + h + "_WriteRequest"
		}
		if directMessage(m.Output, nil) && flatWritable(m.Output) {
			opt += ", WriteResponse: " + h + "_WriteResponse"
		}
		g.P("{Name: ", fmt.Sprintf("%q", m.Desc.Name()), ", Request: ", ri, ", Response: ", si, ", Fingerprint: ", fmt.Sprintf("%#016x", fp), ", Handler: ", h, "_Handler, BufHandler: ", h, "_BufHandler", opt, "},")
	}
	g.P("},")
	g.P("}")
	g.P()
}

// reusable reports whether msg is a message of package pkg (the generated
// file's), whose fields the file's reuse helper can reset.
func reusable(msg *protogen.Message, pkg protogen.GoImportPath) bool {
	return msg.GoIdent.GoImportPath == pkg
}

// reuseName is the name of service svc's reuse helper for msg.
func reuseName(svc string, msg *protogen.Message) string {
	return "_" + svc + "_" + msg.GoIdent.GoName + "_Reuse"
}

// reuseMessages are the messages of package pkg that service s keeps
// across calls, each once, in method order: every method's response
// (AsyncCall) and, for methods with a Direct binding, its request.
func reuseMessages(s *protogen.Service, pkg protogen.GoImportPath) []*protogen.Message {
	var out []*protogen.Message
	seen := map[protoreflect.FullName]bool{}
	add := func(msg *protogen.Message) {
		if reusable(msg, pkg) && !seen[msg.Desc.FullName()] {
			seen[msg.Desc.FullName()] = true
			out = append(out, msg)
		}
	}
	for _, m := range s.Methods {
		if directMessage(m.Output, nil) {
			add(m.Input)
		}
		add(m.Output)
	}
	return out
}

// refNote says which decoded fields of msg (the request a handler gets as
// name) alias the receive buffer through a reference that the handler's
// Arena.Reset releases: bytes and string fields, also of nested messages.
func refNote(msg *protogen.Message, name string) string {
	var direct []string
	nested := false
	for _, f := range sortedFields(msg) {
		switch f.Desc.Kind() {
		case protoreflect.BytesKind, protoreflect.StringKind:
			direct = append(direct, string(f.Desc.Name()))
		case protoreflect.MessageKind, protoreflect.GroupKind:
			nested = true
		}
	}
	switch {
	case len(direct) == 0 && !nested:
		return "decoding " + name + " takes no references (no bytes or string fields)."
	case len(direct) == 0:
		return "the bytes and string fields of " + name + "'s nested messages alias the request's buffer (a reference that Arena.Reset releases after the response is sent): keep none after returning."
	}
	s := "decoding " + name + " makes " + strings.Join(direct, ", ")
	if nested {
		s += " and the bytes and string fields of its nested messages"
	}
	return s + " alias the request's buffer (a reference that Arena.Reset releases after the response is sent): keep none after returning."
}

// flatWritable reports whether msg's generated type has WireWriteFlat
// (wireimpl.FlatWriter: message.writeFlat).
func flatWritable(msg *protogen.Message) bool {
	m, err := newMessage(msg)
	return err == nil && m.writeFlat()
}

// writeFlatCall emits the end of a WriteRequest or WriteResponse stub, x
// the message: WireWriteFlat's body for a small message (at most
// inlineWriteFields fields) of the file's package (no second call), else
// the call.
func writeFlatCall(g *protogen.GeneratedFile, msg *protogen.Message, pkg protogen.GoImportPath) {
	m, err := newMessage(msg)
	if err == nil && reusable(msg, pkg) {
		if f := bytesOnly1(m); f != nil {
			// One straight-line call (runtime/wireimpl/service_small.go).
			_, bit := bitOf(f)
			g.P("return ", g.QualifiedGoIdent(runtimePkg.Ident("WriteFlatBytes1")), "(dst, &x.cf, &x.", f.sf, ", ", bit, ")")
			return
		}
	}
	if err == nil && reusable(msg, pkg) && len(m.fields) <= inlineWriteFields {
		emitWriteFlatBody(g, m) // emit_fast_encode_flat.go
		return
	}
	g.P("return x.WireWriteFlat(dst)")
}

// inlineWriteFields bounds the messages whose WireWriteFlat body the
// service stubs repeat (the body grows with the fields; the call it saves
// does not).
const inlineWriteFields = 4

// keptDecodable reports whether msg, kept by the service stubs, gets a
// fused reuse-and-decode helper (emitDecodeKept): a message of the file's
// package with an inline direct decode.
func keptDecodable(msg *protogen.Message, pkg protogen.GoImportPath) bool {
	m, err := newMessage(msg)
	return err == nil && reusable(msg, pkg) && m.keptDecode()
}

// decodeKeptName is the name of msg's fused reuse-and-decode helper in the
// stubs of service svc.
func decodeKeptName(svc string, msg *protogen.Message) string {
	return "_" + svc + "_" + msg.GoIdent.GoName + "_DecodeKept"
}

// bytesOnly1 returns m's only field when it is a bytes field of implicit
// presence numbered 1..32 and no other construct (no oneof, map or
// required field): its in-place writer and fused decode are the
// straight-line helpers of runtime/wireimpl/service_small.go
// (WriteFlatBytes1, DecodeKeptBytes1). Otherwise nil.
func bytesOnly1(m *message) *field {
	if len(m.fields) != 1 {
		return nil
	}
	f := m.fields[0]
	if f.shape != shapeBytes || f.hasBit >= 0 || f.cx != (constructs{}) || f.num < 1 || f.num > 32 {
		return nil
	}
	return f
}

// emitDecodeKeptBytes1 emits fn(x, a, b) as emitDecodeKept does for m,
// whose only field is f (bytesOnly1; the message's struct is its Core and
// f's Bytes, nothing else): wireimpl.DecodeKeptBytes1 makes x empty,
// binds it and decodes the common case in one straight-line call; every
// other input is decoded by fn's second half, fn+"Rest" (emitDecodeKept's
// body, through BeginDecode when the helper recorded no input), a
// function of its own so that the common call stays small.
func emitDecodeKeptBytes1(g *protogen.GeneratedFile, m *message, f *field, fn string) {
	name := m.m.GoIdent.GoName
	w := func(s string) string { return g.QualifiedGoIdent(runtimePkg.Ident(s)) }
	_, bit := bitOf(f)
	g.P("// ", fn, " is ", name, "'s reuse helper and Decode fused (x made empty and bound")
	g.P("// to a's batch, then decoded from b zero-copy; the arena holds a reference on b")
	g.P("// until Reset unless a.BorrowInput): x is returned, also with an error.")
	g.P("func ", fn, "(x *", name, ", a *", wireIdent("Arena"), ", b ", memPkg.Ident("Buf"), ") (*", name, ", error) {")
	g.P("if x == nil {")
	g.P("x = new(", name, ")")
	g.P("}")
	g.P("// x is x.cf and x.", f.sf, ": written whole (x made empty) by the helper.")
	g.P("if src, ok := ", w("DecodeKeptBytes1"), "(&x.cf, &x.", f.sf, ", ", bit, ", ", toRuntimeArena(g, "a"), ", b); !ok {")
	g.P("return ", fn, "Rest(x, src, b)")
	g.P("}")
	g.P("return x, nil")
	g.P("}")
	g.P()
	g.P("// ", fn, "Fields returns x's Core, its only field and the field's bit of")
	g.P("// bitmap word 0: the arguments of ", w("DecodeKeptBytes1"), " for x")
	g.P("// (service.NewAsyncCallKeptBytes1).")
	g.P("func ", fn, "Fields(x *", name, ") (*", w("Core"), ", *", w("Bytes"), ", uint32) {")
	g.P("return &x.cf, &x.", f.sf, ", ", bit)
	g.P("}")
	g.P()
	g.P("// ", fn, "Rest decodes x, bound and empty, from b (recorded in src, or")
	g.P("// nil) when ", fn, "'s common case does not.")
	g.P("func ", fn, "Rest(x *", name, ", src *", w("Source"), ", b ", memPkg.Ident("Buf"), ") (*", name, ", error) {")
	g.P("if src == nil {")
	emitKeptDecodeTail(g, m)
}

// requestBytes1 reports whether msg, a method's request, is a message of
// the file's package whose only field is bytes (bytesOnly1) with an
// in-place writer: the AsyncCall writes it itself (service.RequestBytes1).
func requestBytes1(msg *protogen.Message, pkg protogen.GoImportPath) bool {
	m, err := newMessage(msg)
	return err == nil && reusable(msg, pkg) && flatWritable(msg) && bytesOnly1(m) != nil
}
