//! The commit the binary is built from, for `podium --version`, `/healthz`
//! and `/metrics` (`PODIUM_COMMIT`): `$PODIUM_COMMIT` when set (a build
//! from a source archive), else git's short hash of HEAD, else `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=PODIUM_COMMIT");
    let commit = match std::env::var("PODIUM_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ => match git(&["rev-parse", "--short=12", "HEAD"]) {
            Some(hash) => {
                // Rebuilt when HEAD moves to another branch or commit. Only
                // files that exist are named: cargo counts a missing one as
                // changed on every build (a fresh clone has no packed-refs),
                // which rebuilt this crate and all above it each time.
                let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
                watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
                for p in &watched {
                    if let Some(path) = git(&["rev-parse", "--git-path", p]) {
                        if std::path::Path::new(&path).exists() {
                            println!("cargo:rerun-if-changed={path}");
                        }
                    }
                }
                hash
            }
            None => "unknown".to_string(),
        },
    };
    println!("cargo:rustc-env=PODIUM_COMMIT={commit}");
}
