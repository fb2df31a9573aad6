//! Backups: the files of a consistent online copy of the storage (what an
//! engine hands out, [`BackupSet`]), the stream they travel in (a tar
//! archive whose last entry is the manifest), the manifest with each
//! file's size and SHA-256, and the checks and copy of `podium restore`.
//! docs/operations.md ("Backup and restore") has the procedure,
//! docs/storage.md the manifest byte by byte.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::private_fs;
use sha2::{Digest, Sha256};

/// The mark of a data directory that is a copy (restored from a backup,
/// or repaired): its outbox holds the original's due webhook deliveries,
/// which the original may well have sent since, to endpoints in
/// production. A server started on a marked directory holds them until
/// the operator says otherwise (`--webhooks`, docs/operations.md).
pub const WEBHOOKS_HELD: &str = "WEBHOOKS-HELD";

/// Marks `dir` as a copy whose webhook deliveries are held; `why` is the
/// file's text, read back by [`webhooks_held`].
pub fn hold_webhooks(dir: &Path, why: &str) -> io::Result<()> {
    let path = dir.join(WEBHOOKS_HELD);
    let mut f = crate::private_fs::create(&path)?;
    f.write_all(why.as_bytes())?;
    f.sync_all()?;
    File::open(dir)?.sync_all()
}

/// Why `dir`'s webhook deliveries are held (the mark's text), when they are.
pub fn webhooks_held(dir: &Path) -> Option<String> {
    fs::read_to_string(dir.join(WEBHOOKS_HELD))
        .ok()
        .map(|t| t.trim().to_string())
}

/// Takes the mark away: the operator chose what the copy delivers.
pub fn release_webhooks(dir: &Path) -> io::Result<()> {
    match fs::remove_file(dir.join(WEBHOOKS_HELD)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The manifest's file name, in the stream (its last entry) and in a
/// backup directory.
pub const MANIFEST: &str = "MANIFEST.json";
/// `format` of every manifest.
pub const FORMAT: &str = "podium-backup";
/// `version` of the manifest this build writes and reads.
pub const VERSION: u32 = 1;

/// One file of a backup, open: a later snapshot may delete it from the
/// data directory while it is being sent, and the open handle still
/// reads it.
pub struct BackupFile {
    /// Its name in the data directory (no directories).
    pub name: String,
    pub file: File,
    /// Bytes to copy: the file's length when it was taken (the copy is of
    /// closed files, which do not grow).
    pub len: u64,
}

/// What an engine hands out for a backup: the newest snapshot (if any)
/// and the log segments after it, up to a cut made with writers paused,
/// so that recovering from them gives the state at record `last_lsn`.
pub struct BackupSet {
    /// The snapshot's position (0: none, the log starts at 1).
    pub snapshot_lsn: u64,
    /// The last record the copy holds.
    pub last_lsn: u64,
    pub files: Vec<BackupFile>,
}

/// A backup's description, written last: what a restore checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] of the layout.
    pub version: u32,
    /// The podium version and commit that wrote it.
    pub podium: String,
    pub commit: String,
    /// When the copy was cut, RFC 3339 in UTC.
    pub created: String,
    pub snapshot_lsn: u64,
    pub last_lsn: u64,
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub name: String,
    pub bytes: u64,
    /// Lower-case hex.
    pub sha256: String,
}

/// Writes `set` as a tar archive to `out`: each file as a regular entry,
/// then [`MANIFEST`] with their sizes and SHA-256 (computed as they are
/// sent). `podium`/`commit`: the writer's version. Returns the manifest.
pub fn write_tar(
    set: BackupSet,
    podium: &str,
    commit: &str,
    out: impl Write,
) -> io::Result<Manifest> {
    let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mtime = chrono::Utc::now().timestamp().max(0) as u64;
    let mut tar = tar::Builder::new(out);
    let mut files = Vec::with_capacity(set.files.len());
    for f in set.files {
        let mut reader = Hashing::new(f.file.take(f.len));
        let mut header = header(f.len, mtime);
        tar.append_data(&mut header, &f.name, &mut reader)?;
        if reader.bytes != f.len {
            return Err(io::Error::other(format!(
                "{} ended after {} of its {} bytes",
                f.name, reader.bytes, f.len
            )));
        }
        files.push(ManifestFile {
            name: f.name,
            bytes: f.len,
            sha256: reader.hex(),
        });
    }
    let manifest = Manifest {
        format: FORMAT.into(),
        version: VERSION,
        podium: podium.into(),
        commit: commit.into(),
        created,
        snapshot_lsn: set.snapshot_lsn,
        last_lsn: set.last_lsn,
        files,
    };
    let text = manifest_text(&manifest);
    let mut header = header(text.len() as u64, mtime);
    tar.append_data(&mut header, MANIFEST, text.as_bytes())?;
    tar.into_inner()?.flush()?;
    Ok(manifest)
}

fn header(len: u64, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_size(len);
    h.set_mode(0o644);
    h.set_mtime(mtime);
    h.set_entry_type(tar::EntryType::Regular);
    h
}

fn manifest_text(m: &Manifest) -> String {
    let mut text = serde_json::to_string_pretty(m).expect("a manifest serializes");
    text.push('\n');
    text
}

/// Why a backup cannot be read or restored, in podium's words.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Invalid(String),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> BackupError + '_ {
    move |e| BackupError::Io(format!("{}: {e}", path.display()))
}

/// Unpacks a backup stream (from [`write_tar`]) into the new directory
/// `dir`, checking every file against the manifest that ends it; the files
/// are synced before it returns. Refuses a stream that ends early, holds
/// an entry that is not a plain file name, or whose files do not match.
pub fn unpack_tar(input: impl Read, dir: &Path) -> Result<Manifest, BackupError> {
    private_fs::create_dir_all(dir).map_err(io_at(dir))?;
    let mut received: Vec<ManifestFile> = Vec::new();
    let mut manifest: Option<Manifest> = None;
    let mut archive = tar::Archive::new(input);
    let entries = archive
        .entries()
        .map_err(|e| BackupError::Invalid(format!("not a backup stream: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| BackupError::Invalid(format!("backup stream: {e}")))?;
        let name = entry
            .path()
            .ok()
            .and_then(|p| plain_name(&p))
            .ok_or_else(|| {
                BackupError::Invalid("backup stream: an entry is not a plain file name".into())
            })?;
        if manifest.is_some() {
            return Err(BackupError::Invalid(format!(
                "backup stream: {name} follows the manifest"
            )));
        }
        if name == MANIFEST {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .map_err(|e| BackupError::Invalid(format!("backup stream: manifest: {e}")))?;
            manifest = Some(parse_manifest(&text)?);
            continue;
        }
        let path = dir.join(&name);
        let mut out = private_fs::create(&path).map_err(io_at(&path))?;
        let mut hashing = Hashing::new(&mut entry);
        io::copy(&mut hashing, &mut out).map_err(io_at(&path))?;
        out.sync_all().map_err(io_at(&path))?;
        received.push(ManifestFile {
            name,
            bytes: hashing.bytes,
            sha256: hashing.hex(),
        });
    }
    let Some(manifest) = manifest else {
        return Err(BackupError::Invalid(
            "the backup stream ended before its manifest: the copy is incomplete".into(),
        ));
    };
    if received != manifest.files {
        return Err(BackupError::Invalid(format!(
            "the files received do not match the manifest (received {}, listed {})",
            describe(&received),
            describe(&manifest.files)
        )));
    }
    let path = dir.join(MANIFEST);
    write_synced(&path, manifest_text(&manifest).as_bytes())?;
    sync_dir(dir)?;
    Ok(manifest)
}

fn describe(files: &[ManifestFile]) -> String {
    let names: Vec<String> = files
        .iter()
        .map(|f| format!("{} ({} bytes)", f.name, f.bytes))
        .collect();
    names.join(", ")
}

/// A name with no directory part, `..`, control character (a terminal
/// escape, when printed) or anything odd.
fn plain_name(p: &Path) -> Option<String> {
    let name = p.to_str()?;
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\\')
        && !name.chars().any(char::is_control);
    ok.then(|| name.to_string())
}

fn parse_manifest(text: &str) -> Result<Manifest, BackupError> {
    let m: Manifest = serde_json::from_str(text)
        .map_err(|e| BackupError::Invalid(format!("the manifest is not valid: {e}")))?;
    if m.format != FORMAT {
        return Err(BackupError::Invalid(format!(
            "the manifest's format is {:?}, not {FORMAT:?}",
            m.format
        )));
    }
    if m.version > VERSION {
        return Err(BackupError::Invalid(format!(
            "the backup is of layout version {}, newer than this podium reads ({VERSION}): restore it with a newer podium",
            m.version
        )));
    }
    for f in &m.files {
        if plain_name(Path::new(&f.name)).is_none() || f.name == MANIFEST {
            return Err(BackupError::Invalid(format!(
                "the manifest lists {:?}, not a file of a data directory",
                f.name
            )));
        }
    }
    Ok(m)
}

/// Reads the manifest of the backup directory `dir` and checks every file
/// it lists: present, of its size and SHA-256.
pub fn verify(dir: &Path) -> Result<Manifest, BackupError> {
    let path = dir.join(MANIFEST);
    let text = fs::read_to_string(&path).map_err(|e| {
        BackupError::Invalid(format!(
            "{}: {e} (is {} a backup made by `podium backup`?)",
            path.display(),
            dir.display()
        ))
    })?;
    let m = parse_manifest(&text)?;
    for f in &m.files {
        let path = dir.join(&f.name);
        let file = File::open(&path).map_err(io_at(&path))?;
        let mut hashing = Hashing::new(file);
        io::copy(&mut hashing, &mut io::sink()).map_err(io_at(&path))?;
        if hashing.bytes != f.bytes || hashing.hex() != f.sha256 {
            return Err(BackupError::Invalid(format!(
                "{} does not match the manifest ({} bytes, sha256 {}; the manifest says {} bytes, sha256 {}): the backup is damaged",
                path.display(),
                hashing.bytes,
                hashing.hex(),
                f.bytes,
                f.sha256
            )));
        }
    }
    Ok(m)
}

/// `podium restore`: checks the backup in `from` and copies its files into
/// `data_dir`, which must not exist or be empty (a restore never mixes
/// with or replaces a data directory). The server then recovers from
/// them as from its own.
pub fn restore(from: &Path, data_dir: &Path) -> Result<Manifest, BackupError> {
    let m = verify(from)?;
    if let Ok(mut entries) = fs::read_dir(data_dir) {
        if entries.next().is_some() {
            return Err(BackupError::Invalid(format!(
                "{} is not empty: restore into a new or empty directory, then point --data-dir at it",
                data_dir.display()
            )));
        }
    }
    private_fs::create_dir_all(data_dir).map_err(io_at(data_dir))?;
    for f in &m.files {
        let src = from.join(&f.name);
        let dst = data_dir.join(&f.name);
        let mut input = File::open(&src).map_err(io_at(&src))?;
        let mut out = private_fs::create(&dst).map_err(io_at(&dst))?;
        io::copy(&mut input, &mut out).map_err(io_at(&dst))?;
        out.sync_all().map_err(io_at(&dst))?;
    }
    let why = format!(
        "restored from the backup {} (taken at LSN {}): its webhook deliveries are held until \
         the server is started with --webhooks on (deliver them) or off (drop them)",
        from.display(),
        m.last_lsn
    );
    hold_webhooks(data_dir, &why).map_err(io_at(data_dir))?;
    sync_dir(data_dir)?;
    Ok(m)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), BackupError> {
    let mut f = private_fs::create(path).map_err(io_at(path))?;
    f.write_all(bytes).map_err(io_at(path))?;
    f.sync_all().map_err(io_at(path))
}

fn sync_dir(dir: &Path) -> Result<(), BackupError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))
}

/// A reader that counts and hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R> Hashing<R> {
    fn new(inner: R) -> Self {
        Hashing {
            inner,
            hash: Sha256::new(),
            bytes: 0,
        }
    }

    fn hex(&self) -> String {
        let digest = self.hash.clone().finalize();
        let mut s = String::with_capacity(64);
        for b in digest {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// A backup directory's path with a suffix, e.g. the partial copy beside
/// the final one.
pub fn beside(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "backup".into());
    name.push(suffix);
    dir.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(dir: &Path, files: &[(&str, &[u8])]) -> BackupSet {
        let files = files
            .iter()
            .map(|(name, bytes)| {
                let p = dir.join(name);
                fs::write(&p, bytes).unwrap();
                BackupFile {
                    name: name.to_string(),
                    file: File::open(&p).unwrap(),
                    len: bytes.len() as u64,
                }
            })
            .collect();
        BackupSet {
            snapshot_lsn: 7,
            last_lsn: 9,
            files,
        }
    }

    #[test]
    fn a_stream_unpacks_verifies_and_restores_byte_for_byte() {
        let src = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let files: [(&str, &[u8]); 3] = [
            ("snapshot-7.pdms", &big),
            ("log-8.pdml", b"PDML\x01frames"),
            ("log-9.pdml", b""),
        ];
        let mut stream = Vec::new();
        let written = write_tar(set(src.path(), &files), "1.2.3", "abc", &mut stream).unwrap();
        assert_eq!(written.files.len(), 3);
        assert_eq!(
            written.files[0].sha256,
            format!("{:x}", Sha256::digest(&big)),
        );

        let out = tempfile::tempdir().unwrap();
        let backup = out.path().join("b");
        let got = unpack_tar(&stream[..], &backup).unwrap();
        assert_eq!(got, written);
        assert_eq!(verify(&backup).unwrap(), written);
        let data = out.path().join("data");
        restore(&backup, &data).unwrap();
        for (name, bytes) in files {
            assert_eq!(fs::read(data.join(name)).unwrap(), bytes, "{name}");
        }
        assert!(!data.join(MANIFEST).exists(), "the manifest is not data");

        // Into a directory that holds something: refused, nothing touched.
        let e = restore(&backup, &data).unwrap_err().to_string();
        assert!(e.contains("is not empty"), "{e}");
    }

    #[test]
    fn a_cut_stream_or_a_changed_byte_is_refused() {
        let src = tempfile::tempdir().unwrap();
        let files: [(&str, &[u8]); 1] = [("log-1.pdml", &[5u8; 5000])];
        let mut stream = Vec::new();
        write_tar(set(src.path(), &files), "1", "c", &mut stream).unwrap();
        let out = tempfile::tempdir().unwrap();

        // Cut before the manifest's entry.
        let e = unpack_tar(&stream[..5632], &out.path().join("cut"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("before its manifest"), "{e}");

        // A byte changed in transit.
        let mut flipped = stream.clone();
        flipped[512 + 100] ^= 1;
        let e = unpack_tar(&flipped[..], &out.path().join("flip"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not match the manifest"), "{e}");

        // A byte changed on disk afterwards.
        let good = out.path().join("good");
        unpack_tar(&stream[..], &good).unwrap();
        let p = good.join("log-1.pdml");
        let mut bytes = fs::read(&p).unwrap();
        bytes[10] ^= 1;
        fs::write(&p, bytes).unwrap();
        let e = verify(&good).unwrap_err().to_string();
        assert!(e.contains("log-1.pdml") && e.contains("damaged"), "{e}");
        let e = restore(&good, &out.path().join("data"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("damaged"), "{e}");
        assert!(!out.path().join("data").exists(), "nothing restored");
    }

    /// A backup's files hold the boards and the webhooks' secrets: the
    /// owner's only, in the backup and in the data directory restored.
    #[cfg(unix)]
    #[test]
    fn backups_and_restores_are_the_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let src = tempfile::tempdir().unwrap();
        let files: [(&str, &[u8]); 2] = [("snapshot-7.pdms", b"s"), ("log-8.pdml", b"l")];
        let mut stream = Vec::new();
        write_tar(set(src.path(), &files), "1", "c", &mut stream).unwrap();
        let out = tempfile::tempdir().unwrap();
        let backup = out.path().join("new/b");
        unpack_tar(&stream[..], &backup).unwrap();
        let data = out.path().join("restored/data");
        restore(&backup, &data).unwrap();
        for dir in [&backup, &data] {
            assert_eq!(mode(dir), 0o700, "{}", dir.display());
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                assert_eq!(mode(&p), 0o600, "{}", p.display());
            }
        }
        assert_eq!(mode(&out.path().join("new")), 0o700);
    }

    /// A name with a control character (a terminal escape among them) is
    /// no file of a data directory, in the stream or in the manifest.
    #[test]
    fn a_name_with_a_control_character_is_refused() {
        for name in ["log-1\u{1b}[2J.pdml", "log-1\n.pdml", "log-1\u{7f}.pdml"] {
            let mut stream = Vec::new();
            {
                let mut tar = tar::Builder::new(&mut stream);
                let mut h = header(1, 0);
                tar.append_data(&mut h, name, &b"x"[..]).unwrap();
                tar.finish().unwrap();
            }
            let out = tempfile::tempdir().unwrap();
            let e = unpack_tar(&stream[..], &out.path().join("b"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a plain file name"), "{name:?}: {e}");
        }
        let text = manifest_text(&Manifest {
            format: FORMAT.into(),
            version: VERSION,
            podium: "1".into(),
            commit: "c".into(),
            created: "now".into(),
            snapshot_lsn: 0,
            last_lsn: 1,
            files: vec![ManifestFile {
                name: "log-1\u{1b}]0;x\u{7}.pdml".into(),
                bytes: 1,
                sha256: "0".repeat(64),
            }],
        });
        let e = parse_manifest(&text).unwrap_err().to_string();
        assert!(e.contains("not a file of a data directory"), "{e}");
    }

    #[test]
    fn an_entry_with_a_path_is_refused() {
        let mut stream = Vec::new();
        {
            let mut tar = tar::Builder::new(&mut stream);
            let mut h = header(1, 0);
            tar.append_data(&mut h, "sub/x", &b"x"[..]).unwrap();
            tar.finish().unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let e = unpack_tar(&stream[..], &out.path().join("b"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a plain file name"), "{e}");
    }
}
