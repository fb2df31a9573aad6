//! The architecture rules of docs/architecture.md, checked against the
//! code: which podium crate may depend on which (each crate's
//! Cargo.toml), which paths a crate's or a module's sources may not name,
//! and the known exceptions to those rules, which may only shrink.
//!
//! It is a test of podium-core, which every product build compiles, and
//! reads the files with std alone, so it adds no dependency. The sources
//! are read as text, line by line: tests and `#[cfg(test)]` modules inside
//! `src/` count like any other code (a rule holds for the whole of `src/`,
//! which keeps the scan simple), comment lines and trailing `//` comments do not (prose may name
//! anything), and a path is caught as written: a grouped
//! `use crate::{rpc, resp}` or a `super::` path that climbs out of a
//! module is not resolved.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const DOC: &str = "docs/architecture.md";

/// The allowed edges of the crate graph: for each crate (its directory
/// under `crates/`), the podium crates it may depend on. The same list as
/// docs/architecture.md's "Crate graph", which
/// `doc_lists_the_same_edges_and_exceptions` holds it to.
const ALLOWED_DEPS: &[(&str, &[&str])] = &[
    ("engine", &[]),
    ("core", &["podium-engine"]),
    ("store", &["podium-engine", "podium-core"]),
    ("redis", &["podium-engine", "podium-core"]),
    (
        "server",
        &[
            "podium-engine",
            "podium-core",
            "podium-store",
            "podium-redis",
            "podium-cli",
        ],
    ),
    ("client", &[]),
    ("cli", &["podium-core", "podium-client"]),
    (
        "bench",
        &[
            "podium-engine",
            "podium-core",
            "podium-store",
            "podium-redis",
            "podium-client",
        ],
    ),
];

/// A source rule: the files of one crate (all of `src/`, or the modules
/// in `under`) may not name any of `forbidden`.
struct Rule {
    /// The rule as docs/architecture.md words it, for the failure message.
    says: &'static str,
    krate: &'static str,
    /// Paths relative to the crate's `src/`, matched as prefixes; empty
    /// means the whole crate.
    under: &'static [&'static str],
    forbidden: &'static [&'static str],
}

const FRONTEND_HTTP: &[&str] = &["http/"];
const FRONTEND_RPC: &[&str] = &["rpc/"];
const FRONTEND_RESP: &[&str] = &["resp/"];
const FRONTENDS: &[&str] = &["http/", "rpc/", "resp/"];
/// What every frontend shares; `server.rs` (`serve`) and `lib.rs` are not
/// here because wiring the frontends together is their job.
const SHARED: &[&str] = &[
    "settings/",
    "limits/",
    "rate.rs",
    "listen.rs",
    "callstats.rs",
    "process.rs",
    "hooks.rs",
];

const RULES: &[Rule] = &[
    Rule {
        says: "engine imports no other podium crate",
        krate: "engine",
        under: &[],
        forbidden: &[
            "podium_core",
            "podium_store",
            "podium_redis",
            "podium_server",
            "podium_cli",
            "podium_client",
            "podium_bench",
        ],
    },
    Rule {
        says: "core imports only engine",
        krate: "core",
        under: &[],
        forbidden: &[
            "podium_store",
            "podium_redis",
            "podium_server",
            "podium_cli",
            "podium_client",
            "podium_bench",
        ],
    },
    Rule {
        says: "store imports only engine and core",
        krate: "store",
        under: &[],
        forbidden: &[
            "podium_redis",
            "podium_server",
            "podium_cli",
            "podium_client",
            "podium_bench",
        ],
    },
    Rule {
        says: "redis imports only engine and core",
        krate: "redis",
        under: &[],
        forbidden: &[
            "podium_store",
            "podium_server",
            "podium_cli",
            "podium_client",
            "podium_bench",
        ],
    },
    Rule {
        says: "client imports no other podium crate",
        krate: "client",
        under: &[],
        forbidden: &[
            "podium_engine",
            "podium_core",
            "podium_store",
            "podium_redis",
            "podium_server",
            "podium_cli",
            "podium_bench",
        ],
    },
    Rule {
        says: "cli imports only core and client",
        krate: "cli",
        under: &[],
        forbidden: &[
            "podium_engine",
            "podium_store",
            "podium_redis",
            "podium_server",
            "podium_bench",
        ],
    },
    Rule {
        says: "server imports neither bench nor client",
        krate: "server",
        under: &[],
        forbidden: &["podium_bench", "podium_client"],
    },
    Rule {
        says: "bench imports neither server nor cli",
        krate: "bench",
        under: &[],
        forbidden: &["podium_server", "podium_cli"],
    },
    Rule {
        says: "the frontends reach storage only through podium-core's interfaces",
        krate: "server",
        under: FRONTENDS,
        forbidden: &[
            "podium_store",
            "podium_redis",
            "podium_cli",
            "crate::server",
        ],
    },
    Rule {
        says: "the HTTP frontend imports no other frontend",
        krate: "server",
        under: FRONTEND_HTTP,
        forbidden: &["crate::rpc", "crate::resp"],
    },
    Rule {
        says: "the MessagePack-RPC frontend imports no other frontend",
        krate: "server",
        under: FRONTEND_RPC,
        forbidden: &["crate::http", "crate::resp"],
    },
    Rule {
        says: "the RESP frontend imports no other frontend",
        krate: "server",
        under: FRONTEND_RESP,
        forbidden: &["crate::http", "crate::rpc"],
    },
    Rule {
        says: "the modules the frontends share import no frontend and not serve",
        krate: "server",
        under: SHARED,
        forbidden: &["crate::http", "crate::rpc", "crate::resp", "crate::server"],
    },
];

/// Known breaks of the rules, as (file, forbidden path) pairs: the file's
/// Cargo.toml dependency or source path that a rule forbids. Each one must
/// still occur, so that fixing one forces it off this list and off
/// docs/architecture.md: the list only shrinks.
const EXCEPTIONS: &[(&str, &str)] = &[
    ("crates/server/src/resp/exec/mod.rs", "podium_store"),
    ("crates/server/src/resp/conn.rs", "podium_store"),
    ("crates/server/src/resp/scope_tests.rs", "podium_store"),
    ("crates/server/src/rpc/conn.rs", "podium_store"),
    ("crates/server/src/rpc/exec/tests.rs", "podium_store"),
    ("crates/server/src/http/tests/mod.rs", "podium_store"),
    ("crates/server/src/http/tests/boards.rs", "podium_store"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The crate directories under `crates/`, so a new crate is noticed.
fn crate_dirs() -> Vec<String> {
    let mut dirs: Vec<String> = fs::read_dir(root().join("crates"))
        .expect("crates/ is readable")
        .map(|e| e.expect("crates/ entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    dirs
}

/// The podium crates a Cargo.toml depends on for building, not for tests:
/// `[dependencies]`, `[build-dependencies]` and their `[target.….]` forms.
/// Dev-dependencies are left out because only tests see them.
fn podium_deps(toml: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let mut counted = false;
    for line in toml.lines() {
        let line = line.split('#').next().unwrap().trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header.trim_end_matches(']').trim();
            let section = name.strip_prefix("target.").map_or(name, |rest| {
                // `target.'cfg(unix)'.dependencies`: the part after the cfg.
                rest.rsplit_once('.').map_or(rest, |(_, s)| s)
            });
            counted = false;
            for kind in ["dependencies", "build-dependencies"] {
                if section == kind {
                    counted = true;
                } else if let Some(dep) =
                    section.strip_prefix(kind).and_then(|s| s.strip_prefix('.'))
                {
                    // `[dependencies.podium-core]` is one dependency's table.
                    if dep.starts_with("podium-") {
                        deps.insert(dep.to_string());
                    }
                }
            }
            continue;
        }
        if !counted || line.is_empty() {
            continue;
        }
        let key = line
            .split(['=', '.'])
            .next()
            .unwrap()
            .trim()
            .trim_matches('"');
        if key.starts_with("podium-") {
            deps.insert(key.to_string());
        }
        // A renamed dependency: `alias = { package = "podium-…", … }`.
        if let Some(rest) = line.split("package").nth(1) {
            let name = rest.trim_start_matches([' ', '=']).trim_start_matches('"');
            let name = name.split('"').next().unwrap();
            if name.starts_with("podium-") {
                deps.insert(name.to_string());
            }
        }
    }
    deps
}

fn allowed(krate: &str) -> Option<&'static [&'static str]> {
    ALLOWED_DEPS
        .iter()
        .find(|(k, _)| *k == krate)
        .map(|(_, d)| *d)
}

fn excepted(file: &str, path: &str) -> bool {
    EXCEPTIONS.contains(&(file, path))
}

/// Every `.rs` file under `dir`, sorted so failures read in a stable order.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line, without a `//` comment. A `//` inside a string
/// (an even count of quotes before it means it is outside) is kept.
fn code(line: &str) -> &str {
    let mut from = 0;
    while let Some(i) = line[from..].find("//") {
        let at = from + i;
        if line[..at].matches('"').count().is_multiple_of(2) {
            return &line[..at];
        }
        from = at + 2;
    }
    line
}

/// Whether `code` names `path` as a whole path: `podium_store` matches
/// `podium_store::wait` but not `podium_store_x`; `crate::rpc` matches
/// `crate::rpc::exec` but not `crate::rpcx`.
fn names(code: &str, path: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(path).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + path.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The lines of `file` (relative to the root) that name `path`, 1-based.
fn lines_naming(file: &str, path: &str) -> Vec<usize> {
    read(file)
        .lines()
        .enumerate()
        .filter(|(_, l)| names(code(l), path))
        .map(|(n, _)| n + 1)
        .collect()
}

/// The files a rule covers, relative to the root, `/`-separated.
fn covered(rule: &Rule) -> Vec<String> {
    let src = root().join("crates").join(rule.krate).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            p.strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|rel| rule.under.is_empty() || rule.under.iter().any(|u| rel.starts_with(u)))
        .map(|rel| format!("crates/{}/src/{rel}", rule.krate))
        .collect()
}

#[track_caller]
fn fail_if_any(problems: Vec<String>, what: &str) {
    assert!(
        problems.is_empty(),
        "{what} ({DOC}):\n  {}\n",
        problems.join("\n  ")
    );
}

#[test]
fn crate_graph_has_only_allowed_edges() {
    let mut problems = Vec::new();
    for krate in crate_dirs() {
        let Some(ok) = allowed(&krate) else {
            problems.push(format!(
                "crates/{krate} has no entry in ALLOWED_DEPS: add its allowed dependencies \
                 here and to {DOC}"
            ));
            continue;
        };
        let file = format!("crates/{krate}/Cargo.toml");
        for dep in podium_deps(&read(&file)) {
            if !ok.contains(&dep.as_str()) && !excepted(&file, &dep) {
                problems.push(format!(
                    "{file}: podium-{krate} depends on {dep}, an edge {DOC} does not allow"
                ));
            }
        }
    }
    fail_if_any(problems, "crate dependencies outside the allowed graph");
}

#[test]
fn sources_name_no_forbidden_path() {
    let mut problems = Vec::new();
    for rule in RULES {
        for file in covered(rule) {
            for path in rule.forbidden {
                if excepted(&file, path) {
                    continue;
                }
                for line in lines_naming(&file, path) {
                    problems.push(format!("{file}:{line}: names `{path}`, but {}", rule.says));
                }
            }
        }
    }
    fail_if_any(problems, "imports that break the architecture rules");
}

#[test]
fn known_exceptions_still_occur() {
    let mut problems = Vec::new();
    for &(file, path) in EXCEPTIONS {
        let occurs = if file.ends_with("Cargo.toml") {
            podium_deps(&read(file)).contains(path)
        } else {
            root().join(file).is_file() && !lines_naming(file, path).is_empty()
        };
        if !occurs {
            problems.push(format!(
                "{file} no longer has `{path}`: remove it from EXCEPTIONS in \
                 crates/core/tests/architecture.rs and from {DOC}'s \"Known exceptions, \
                 to be removed\""
            ));
        }
        // An exception no rule forbids would excuse nothing.
        let forbidden = if file.ends_with("Cargo.toml") {
            let krate = file
                .trim_start_matches("crates/")
                .trim_end_matches("/Cargo.toml");
            allowed(krate).is_some_and(|ok| !ok.contains(&path))
        } else {
            RULES
                .iter()
                .any(|r| r.forbidden.contains(&path) && covered(r).iter().any(|f| f == file))
        };
        if !forbidden {
            problems.push(format!(
                "{file}: `{path}` breaks no rule, so it is no exception"
            ));
        }
    }
    fail_if_any(problems, "known exceptions that are out of date");
}

#[test]
fn doc_lists_the_same_edges_and_exceptions() {
    let doc = read(DOC);
    let mut problems = Vec::new();
    for (krate, deps) in ALLOWED_DEPS {
        // The doc's line for a crate: "- `podium-x` → `podium-y`, `podium-z` — why".
        let head = format!("- `podium-{krate}` → ");
        let Some(line) = doc.lines().find(|l| l.starts_with(&head)) else {
            problems.push(format!("no line starting \"{head}\""));
            continue;
        };
        let list = line[head.len()..].split(" — ").next().unwrap().trim();
        let listed: BTreeSet<&str> = if list == "nothing" {
            BTreeSet::new()
        } else {
            list.split(',')
                .map(|d| d.trim().trim_matches('`'))
                .collect()
        };
        if listed != deps.iter().copied().collect() {
            problems.push(format!(
                "podium-{krate}: the doc lists {listed:?}, the test {deps:?}"
            ));
        }
    }
    for (file, _) in EXCEPTIONS {
        if !doc.contains(&format!("`{file}`")) {
            problems.push(format!("the exception in `{file}` is not listed"));
        }
    }
    fail_if_any(problems, "docs/architecture.md and this test disagree");
}
