# Cap'n Proto mirror of kv.proto.
@0xc3a1f0e7b25d4a91;

using Go = import "/go.capnp";
$Go.package("kvcapnp");
$Go.import("github.com/cornflakes-go/cornflakes/kv/internal/kvcapnp");

struct Req {
  keys @0 :List(Data);
  vals @1 :List(Data);
  index @2 :UInt32;
}

struct Resp {
  status @0 :UInt32;
  val @1 :Data;
  vals @2 :List(Data);
}
