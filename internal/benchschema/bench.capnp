# Cap'n Proto version of bench.proto (keep the three schemas in step).
# Generated Go code: internal/baselines/capnpb (scripts/gen-baselines.sh,
# which passes -I to the std/ directory of capnproto.org/go/capnp/v3 for go.capnp).
@0xa9d495dd4fb5cb8b;

using Go = import "/go.capnp";
$Go.package("capnpb");
$Go.import("github.com/cornflakes-go/cornflakes/internal/baselines/capnpb");

# SingleBuffer is one bytes field; also the leaf of the trees.
struct SingleBuffer {
  message @0 :Data;
}

# ListBuffers is a list of bytes fields.
struct ListBuffers {
  messages @0 :List(Data);
}

struct Tree1 {
  left @0 :SingleBuffer;
  right @1 :SingleBuffer;
}

struct Tree2 {
  left @0 :Tree1;
  right @1 :Tree1;
}

struct Tree3 {
  left @0 :Tree2;
  right @1 :Tree2;
}

struct Tree4 {
  left @0 :Tree3;
  right @1 :Tree3;
}

struct Tree5 {
  left @0 :Tree4;
  right @1 :Tree4;
}
