//! `podium serve` as an operator first meets it, with the real binary: the
//! example config starts as shipped, keys copied from an example are
//! refused, and a default start under a low open-file limit sizes its
//! connection limit without a warning and says each listening line once,
//! with the console's address.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::launch::launch;
use support::{bin, START_TIMEOUT};

/// The lines a started server printed (stdout, then stderr), once its
/// last listener is announced; the server is stopped.
fn start_and_stop(cmd: Command, dir: &Path) -> String {
    let err = dir.join("stderr.log");
    let mut l = launch(cmd, &err, "podium: resp listening on ", START_TIMEOUT);
    std::thread::sleep(Duration::from_millis(300));
    let _ = l.child.kill();
    let _ = l.child.wait();
    let out = l.stdout.lock().unwrap().clone();
    format!("{out}{}", std::fs::read_to_string(&err).unwrap_or_default())
}

/// `podium ARGS` under `ulimit -n nofile`, in `dir`, with no PODIUM_*
/// setting from the environment.
fn podium(dir: &Path, nofile: u32, args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1");
    for (k, _) in std::env::vars() {
        if k.starts_with("PODIUM_") {
            c.env_remove(k);
        }
    }
    c
}

const LOCAL: [&str; 6] = [
    "--http",
    "127.0.0.1:0",
    "--rpc",
    "127.0.0.1:0",
    "--resp",
    "127.0.0.1:0",
];

/// docs/podium.example.toml as shipped: the server starts with it (the
/// listeners moved to free ports, the data directory its relative default
/// under a fresh working directory).
#[test]
fn the_example_config_starts_as_shipped() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/podium.example.toml");
    let mut args = vec!["serve", "--config", example.to_str().unwrap()];
    args.extend(LOCAL);
    let out = start_and_stop(podium(dir.path(), 4096, &args), dir.path());
    assert!(out.contains("podium: http listening on "), "{out}");
    assert!(dir.path().join("podium-data").is_dir(), "{out}");
}

/// A key that looks copied from an example, or is too short, stops the
/// start with a message that says why; from a key file, the message names
/// the file and line, never the key.
#[test]
fn placeholder_and_short_keys_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    for (key, why) in [
        ("replace-me-admin-key-0123456789", "placeholder"),
        ("changeme-0123456789abcdef", "placeholder"),
        ("short-key", "too short"),
    ] {
        std::fs::write(&keys, format!("{key}:admin\n")).unwrap();
        let mut args = vec!["serve", "--data-dir", "d", "--api-key-file", "keys"];
        args.extend(LOCAL);
        let out = podium(dir.path(), 4096, &args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "started with {key}: {text}");
        assert!(
            text.contains(why) && text.contains("line 1"),
            "{key}: {text}"
        );
        assert!(!text.contains(key), "the key is shown: {text}");
    }
}

/// A default start where the open-file limit holds fewer than the default
/// maxclients: sized to it and said at info, no warning; each listening
/// line once, and the console's address. Asking for more than fits is
/// what gets the warning.
#[test]
fn a_default_start_sizes_maxclients_and_says_each_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["serve", "--data-dir", "d"];
    args.extend(LOCAL);
    let out = start_and_stop(podium(dir.path(), 1024, &args), dir.path());
    assert!(!out.contains("WARN"), "a default start warned:\n{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("INFO") && l.contains("maxclients") && l.contains("ulimit -n")),
        "the sizing is not said:\n{out}"
    );
    for proto in ["http", "rpc", "resp"] {
        let line = format!("podium: {proto} listening on ");
        assert_eq!(out.matches(&line).count(), 1, "{proto}:\n{out}");
    }
    assert_eq!(out.matches("listening").count(), 3, "{out}");
    let http = out
        .lines()
        .find_map(|l| l.strip_prefix("podium: http listening on "))
        .unwrap();
    assert!(
        out.contains(&format!("podium: console at http://{http}/console/")),
        "{out}"
    );

    args.extend(["--maxclients", "10000"]);
    let dir = tempfile::tempdir().unwrap();
    let out = start_and_stop(podium(dir.path(), 1024, &args), dir.path());
    assert!(
        out.lines()
            .any(|l| l.contains("WARN") && l.contains("maxclients 10000")),
        "asked for more than fits, and no warning:\n{out}"
    );
}
