//! `podium backup DIR` (a running server's consistent copy, fetched over
//! its HTTP API, unpacked and checked against its manifest) and `podium
//! restore BACKUP --data-dir DIR` (checked again, copied into a new data
//! directory). The format is [`podium_core::backup`]'s.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use podium_core::backup::{self, Manifest};

use crate::render::{draw_target, style, Counted};
use crate::transport::http::Http;
use crate::transport::Conn;

/// `podium backup DIR`.
#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// Where to put the backup: a new or empty directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The server's HTTP API (backups travel over HTTP).
    #[arg(
        long,
        visible_alias = "server",
        env = crate::env::URL,
        default_value = "http://127.0.0.1:7070",
        value_name = "URL"
    )]
    pub http: String,
    /// An admin key: sent as `Authorization: Bearer KEY`. Given here it
    /// shows in `ps`; PODIUM_API_KEY does not.
    #[arg(long, env = "PODIUM_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// No progress bar or summary.
    #[arg(long)]
    pub quiet: bool,
}

/// `podium restore BACKUP --data-dir DIR`.
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// A directory `podium backup` made.
    #[arg(value_name = "BACKUP")]
    pub backup: PathBuf,
    /// The data directory to make: new or empty. Start the server on it
    /// with `podium serve --data-dir DIR`.
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
}

/// `podium backup DIR`: the files arrive in `DIR.partial` and become
/// `DIR` only once every one matches the manifest, so `DIR` is always a
/// whole backup.
pub fn backup(a: &BackupArgs) -> Result<()> {
    plain_path("the backup directory", &a.dir)?;
    if !is_empty_or_missing(&a.dir)? {
        bail!(
            "{} is not empty: a backup goes into a new or empty directory",
            a.dir.display()
        );
    }
    let partial = backup::beside(&a.dir, ".partial");
    if partial.exists() {
        // Left by an interrupted backup: never a whole one.
        fs::remove_dir_all(&partial)
            .with_context(|| format!("cannot remove {}", partial.display()))?;
    }
    let conn = Conn {
        rpc: String::new(),
        http: Some(a.http.clone()),
        api_key: a.api_key.clone(),
    };
    let resp = Http::new(&a.http, &conn)?.backup()?;
    let pb = ProgressBar::with_draw_target(None, draw_target(a.quiet));
    pb.set_style(style("backing up {bytes} {bytes_per_sec}"));
    let unpacked = backup::unpack_tar(
        Counted {
            inner: resp,
            pb: pb.clone(),
        },
        &partial,
    );
    pb.finish_and_clear();
    let m = match unpacked {
        Ok(m) => m,
        Err(e) => {
            let _ = fs::remove_dir_all(&partial);
            bail!("backup failed, nothing kept: {e}");
        }
    };
    if a.dir.exists() {
        // Empty (checked above): the rename needs it gone.
        fs::remove_dir(&a.dir).with_context(|| format!("cannot replace {}", a.dir.display()))?;
    }
    fs::rename(&partial, &a.dir)
        .with_context(|| format!("cannot rename {} to {}", partial.display(), a.dir.display()))?;
    if !a.quiet {
        eprintln!("{}", summary("backed up", &m, &a.dir));
    }
    Ok(())
}

/// `podium restore BACKUP --data-dir DIR`.
pub fn restore(a: &RestoreArgs) -> Result<()> {
    plain_path("the backup", &a.backup)?;
    plain_path("the data directory", &a.data_dir)?;
    let m = backup::restore(&a.backup, &a.data_dir)?;
    eprintln!(
        "{}; start the server with --data-dir {}",
        summary("restored", &m, &a.data_dir),
        a.data_dir.display()
    );
    Ok(())
}

/// Refuses a path holding a control character: printed in the summary
/// and in every message, it would be a terminal escape, and no operator
/// means one in a directory's name.
fn plain_path(what: &str, p: &Path) -> Result<()> {
    if p.to_string_lossy().chars().any(char::is_control) {
        bail!(
            "{what} {:?} holds a control character: name it without one",
            p.display().to_string()
        );
    }
    Ok(())
}

fn summary(what: &str, m: &Manifest, dir: &Path) -> String {
    let bytes: u64 = m.files.iter().map(|f| f.bytes).sum();
    format!(
        "{what} {} files ({bytes} bytes, every record up to {}, made {}) in {}",
        m.files.len(),
        m.last_lsn,
        m.created,
        dir.display()
    )
}

fn is_empty_or_missing(dir: &Path) -> Result<bool> {
    match fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_named_with_a_control_character_is_refused() {
        let base = std::env::temp_dir().join(format!("podium-cli-backup-{}", std::process::id()));
        let bad = base.join("bk\u{1b}[31m");
        let e = backup(&BackupArgs {
            dir: bad.clone(),
            http: "http://127.0.0.1:1".into(),
            api_key: None,
            quiet: true,
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("control character"), "{e}");
        for (backup_dir, data_dir) in [
            (bad.clone(), base.join("data")),
            (base.join("b"), base.join("data\n")),
        ] {
            let e = restore(&RestoreArgs {
                backup: backup_dir,
                data_dir,
            })
            .unwrap_err()
            .to_string();
            assert!(e.contains("control character"), "{e}");
        }
        assert!(!bad.exists());
    }
}
