package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// AttachMode selects how the XDP program is attached to the interface.
type AttachMode int

const (
	// AttachAuto tries native (driver) mode and falls back to generic; on
	// veth it uses generic mode, which is faster there (see
	// docs/XDP.md: generic XDP runs inline in the receive path, native
	// veth XDP defers every packet to the peer's NAPI poll and copies it
	// into page-pool pages first).
	AttachAuto AttachMode = iota
	// AttachNative requires native (driver, XDP_FLAGS_DRV_MODE) mode.
	AttachNative
	// AttachGeneric uses generic (SKB) mode, which every driver supports.
	AttachGeneric
)

// String returns "auto", "native" or "generic".
func (m AttachMode) String() string {
	switch m {
	case AttachAuto:
		return "auto"
	case AttachNative:
		return "native"
	case AttachGeneric:
		return "generic"
	}
	return fmt.Sprintf("AttachMode(%d)", int(m))
}

// ParseAttachMode parses the String form of an AttachMode.
func ParseAttachMode(s string) (AttachMode, error) {
	switch s {
	case "", "auto":
		return AttachAuto, nil
	case "native", "drv", "driver":
		return AttachNative, nil
	case "generic", "skb":
		return AttachGeneric, nil
	}
	return 0, fmt.Errorf("%w: attach mode %q (want auto, native or generic)", ErrConfig, s)
}

// xdp_md field offsets.
const (
	xdpMDData         = 0
	xdpMDDataEnd      = 4
	xdpMDRxQueueIndex = 16
)

// redirectProgram returns the instructions of the XDP program: IPv4/UDP
// datagrams (Ethernet II, no IP options, unfragmented) addressed to
// local go to the AF_XDP socket in xsks at the packet's RX queue
// (bpf_redirect_map with XDP_PASS as the fallback when the slot is empty);
// everything else is passed to the kernel stack.
func redirectProgram(xsks *ebpf.Map, local netip.AddrPort) asm.Instructions {
	ip4 := local.Addr().As4()
	// Constants compared against little-endian loads of big-endian fields.
	le16 := func(v uint16) int32 {
		var b [2]byte
		binary.BigEndian.PutUint16(b[:], v)
		return int32(binary.LittleEndian.Uint16(b[:]))
	}
	ipConst := int32(binary.LittleEndian.Uint32(ip4[:]))
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, xdpMDData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, xdpMDDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, HeaderLen),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R5, le16(etherTypeIPv4), "pass"),
		asm.LoadMem(asm.R5, asm.R2, ethLen, asm.Byte),
		asm.JNE.Imm(asm.R5, 0x45, "pass"),
		asm.LoadMem(asm.R5, asm.R2, ethLen+9, asm.Byte),
		asm.JNE.Imm(asm.R5, protoUDP, "pass"),
		asm.LoadMem(asm.R5, asm.R2, ethLen+6, asm.Half),
		asm.And.Imm(asm.R5, le16(0x3fff)),
		asm.JNE.Imm(asm.R5, 0, "pass"),
		asm.LoadMem(asm.R5, asm.R2, ethLen+16, asm.Word),
		asm.JNE.Imm32(asm.R5, ipConst, "pass"),
		asm.LoadMem(asm.R5, asm.R2, ethLen+ipLen+2, asm.Half),
		asm.JNE.Imm(asm.R5, le16(local.Port()), "pass"),
		asm.LoadMem(asm.R2, asm.R6, xdpMDRxQueueIndex, asm.Word),
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.Mov.Imm(asm.R3, 2), // flags: XDP_PASS when the slot is empty
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), // XDP_PASS
		asm.Return(),
	}
}

// program is the loaded XDP program, its XSKMAP and the attachment.
type program struct {
	xsks *ebpf.Map
	prog *ebpf.Program
	link link.Link
	mode AttachMode // the mode actually used (native or generic)
}

// ErrAttach is wrapped by errors attaching the XDP program (another
// program already attached, driver refusing the mode, no privileges).
var ErrAttach = errors.New("xdp: cannot attach the XDP program")

// loadProgram loads the redirect program for local, puts the socket fd in
// slot queue of its XSKMAP and attaches it to ifindex.
func loadProgram(ifindex, queue, xskFD int, local netip.AddrPort, mode AttachMode) (*program, error) {
	p := &program{}
	var err error
	p.xsks, err = ebpf.NewMap(&ebpf.MapSpec{Name: "cf_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(queue + 1)})
	if err != nil {
		return nil, fmt.Errorf("%w: creating XSKMAP: %v", ErrAttach, err)
	}
	if err := p.xsks.Put(uint32(queue), uint32(xskFD)); err != nil {
		p.close()
		return nil, fmt.Errorf("%w: XSKMAP update: %v", ErrAttach, err)
	}
	p.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "cf_xsk_redirect",
		Type:         ebpf.XDP,
		License:      "Dual MIT/GPL",
		Instructions: redirectProgram(p.xsks, local),
		Flags:        unix.BPF_F_XDP_HAS_FRAGS, // multi-buffer packets (MTU > one page) are accepted
	})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("%w: loading the program: %v", ErrAttach, err)
	}
	try := []AttachMode{mode}
	if mode == AttachAuto {
		try = []AttachMode{AttachNative, AttachGeneric}
	}
	var errs []error
	for _, m := range try {
		flags := link.XDPGenericMode
		if m == AttachNative {
			flags = link.XDPDriverMode
		}
		p.link, err = link.AttachXDP(link.XDPOptions{Program: p.prog, Interface: ifindex, Flags: flags})
		if err == nil {
			p.mode = m
			return p, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	p.close()
	hint := ""
	if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
		hint = " (another XDP program is attached to the interface: one xdp endpoint per interface)"
	}
	return nil, fmt.Errorf("%w to ifindex %d%s: %v", ErrAttach, ifindex, hint, errors.Join(errs...))
}

func (p *program) close() error {
	var errs []error
	if p.link != nil {
		errs = append(errs, p.link.Close())
		p.link = nil
	}
	if p.prog != nil {
		errs = append(errs, p.prog.Close())
		p.prog = nil
	}
	if p.xsks != nil {
		errs = append(errs, p.xsks.Close())
		p.xsks = nil
	}
	return errors.Join(errs...)
}
