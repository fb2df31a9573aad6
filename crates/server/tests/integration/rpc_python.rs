//! The MessagePack-RPC frontend (docs/spec.md §4) of a real `podium serve`
//! driven by a client podium did not write: the Python `msgpack` package
//! (`tests/python/msgpack_rpc_test.py`). Needs python3 with msgpack (the
//! `external` feature).

use crate::support;

use std::process::Command;

use support::rpc::Podium;

/// A client podium did not write: the `msgpack` package's Packer and
/// Unpacker over a plain socket.
/// Needs python3 with msgpack (the `external` feature).
#[test]
fn python_msgpack_client() {
    let ok = Command::new("python3")
        .args(["-c", "import msgpack"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 with the `msgpack` package is needed: run scripts/test.sh, which installs it \
         (or: python3 -m pip install msgpack)"
    );
    let mut p = Podium::start(&[]);
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/msgpack_rpc_test.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&p.rpc)
        .output()
        .expect("running the msgpack test script");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(
        out.status.success() && text.contains("msgpack-rpc OK"),
        "the msgpack client against podium failed ({}):\n{text}",
        out.status
    );
    assert!(p.running(), "podium exited:\n{}", p.output());
}
