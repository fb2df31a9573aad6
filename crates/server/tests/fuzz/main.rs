//! Fuzzing of the decoders the server runs on bytes from the network: RESP
//! requests, MessagePack-RPC frames (the framing walk, the value decoder,
//! the envelope and the bulk-write fast path), the stored-`data`
//! transcoder, and the number parsers of command arguments. Random bytes
//! and damaged valid inputs must give an error or "need more bytes": never
//! a panic, a hang, or an allocation sized by a length prefix rather than
//! by the bytes actually there. Valid inputs built from typed values must
//! decode back to those values. `fuzz-corpus/` holds inputs replayed on
//! every run. More cases: `PROPTEST_CASES=100000 cargo test --release -p
//! podium-server --test fuzz`.

#[path = "../../../core/tests/fuzz_support/damage.rs"]
mod damage;
mod json_mp;
mod num;
#[path = "../../../core/tests/fuzz_support/peak.rs"]
mod peak;
mod resp;
mod rpc;

use peak::bounded;
