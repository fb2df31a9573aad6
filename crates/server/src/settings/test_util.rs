//! What the settings tests share: flags parsed as `podium serve` parses
//! them, and config files in temporary directories.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use super::ServeArgs;

#[derive(Parser, Debug)]
pub(super) struct T {
    #[command(flatten)]
    pub(super) a: ServeArgs,
}

pub(super) fn parse(args: &[&str]) -> ServeArgs {
    let mut full = vec!["podium"];
    full.extend_from_slice(args);
    T::try_parse_from(full).expect("flags parse").a
}

pub(super) fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

pub(super) const KEY: &str = "0123456789abcdef";

/// A config file in a fresh temporary directory, removed on drop.
pub(super) struct TempConfig(pub(super) PathBuf);

impl TempConfig {
    pub(super) fn new(name: &str, text: &str) -> TempConfig {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "podium-settings-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("podium.toml");
        std::fs::write(&path, text).unwrap();
        TempConfig(path)
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
    }
}
