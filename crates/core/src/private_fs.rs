//! Files and directories only their owner may read: everything podium
//! writes to disk (log segments, snapshots, the lock file, backups and
//! what a restore writes) holds the boards' data and the webhooks'
//! secrets, so files are made 0600 and directories 0700, whatever the
//! process's umask.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

/// The mode of every file podium makes.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every directory podium makes.
pub const DIR_MODE: u32 = 0o700;

/// Options writing a file, made [`FILE_MODE`] if new.
pub fn options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true);
    #[cfg(unix)]
    o.mode(FILE_MODE);
    o
}

/// Creates (or truncates) `path` for writing, [`FILE_MODE`] if new.
pub fn create(path: &Path) -> io::Result<File> {
    options().create(true).truncate(true).open(path)
}

/// Creates `dir` and its missing parents, each [`DIR_MODE`]; an existing
/// directory is left as it is.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    b.mode(DIR_MODE);
    b.create(dir)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_and_directories_are_the_owners_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir_all(&dir).unwrap();
        let f = dir.join("f");
        create(&f).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), DIR_MODE);
        assert_eq!(mode(&tmp.path().join("a")), DIR_MODE);
        assert_eq!(mode(&f), FILE_MODE);
    }
}
